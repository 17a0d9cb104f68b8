// Double-precision oracle of monotonic attention's alignment (naive_monotonic.h).
#include "nazar/attention/naive_monotonic.h"

#include "nazar/core/check.h"

#include <cfloat>
#include <cmath>
#include <cstddef>

namespace nazar::attn::naive {

namespace {
void check_row(std::span<const double> p, std::span<const double> prev) {
    NZ_CHECK(p.size() == prev.size(), "monotonic alignment: {} probabilities, {} previous weights",
             p.size(), prev.size());
    for (std::size_t j = 0; j < p.size(); ++j)
        NZ_CHECK(p[j] >= 0 && p[j] <= 1 && prev[j] >= 0 && prev[j] <= 1,
                 "monotonic alignment: position {}: p = {}, previous weight = {}, expected [0, 1]",
                 j, p[j], prev[j]);
}

// q_j = Σ_{l ≤ j} α_{t−1}[l] Π_{l ≤ k < j} (1 − p_k): the probability that step t reaches j
std::vector<double> reach(std::span<const double> p, std::span<const double> prev) {
    std::vector<double> q(p.size());
    for (std::size_t j = 0; j < p.size(); ++j)
        q[j] = (j == 0 ? 0.0 : (1 - p[j - 1]) * q[j - 1]) + prev[j];
    return q;
}
}  // namespace

std::vector<double> monotonic_alignment(std::span<const double> p, std::span<const double> prev) {
    check_row(p, prev);
    std::vector<double> alpha = reach(p, prev);
    for (std::size_t j = 0; j < p.size(); ++j) alpha[j] *= p[j];
    return alpha;
}

std::vector<double> monotonic_alignment_parallel(std::span<const double> p,
                                                 std::span<const double> prev) {
    check_row(p, prev);
    const std::size_t S = p.size();
    // L_j = Σ_{k<j} log(1 − p_k); log1p keeps small p exact. p = 1 would give −inf and then
    // −inf − −inf: log(DBL_MIN) ≈ −708 stands for it, finite, so the differences of two L that
    // both hold it cancel it and one that holds it alone is exp(−708 − …) = 0 to double precision
    std::vector<double> L(S + 1, 0.0);
    for (std::size_t j = 0; j < S; ++j)
        L[j + 1] = L[j] + (p[j] < 1 ? std::log1p(-p[j]) : std::log(DBL_MIN));
    std::vector<double> alpha(S, 0.0);
    for (std::size_t j = 0; j < S; ++j) {
        double s = 0;
        for (std::size_t l = 0; l <= j; ++l)  // exp(L_j − L_l) = Π_{l ≤ k < j} (1 − p_k) <= 1
            s += prev[l] * std::exp(L[j] - L[l]);
        alpha[j] = p[j] * s;
    }
    return alpha;
}

void monotonic_alignment_backward(std::span<const double> p, std::span<const double> prev,
                                  std::span<const double> d_alpha, std::span<double> d_p,
                                  std::span<double> d_prev) {
    check_row(p, prev);
    const std::size_t S = p.size();
    NZ_CHECK(d_alpha.size() == S && d_p.size() == S && d_prev.size() == S,
             "monotonic alignment backward: sizes {}, {}, {} for {} positions", d_alpha.size(),
             d_p.size(), d_prev.size(), S);
    const std::vector<double> q = reach(p, prev);
    double d_q_next = 0;  // d q_{j+1}
    for (std::size_t j = S; j-- > 0;) {
        const double d_q = d_alpha[j] * p[j] + (1 - p[j]) * d_q_next;
        d_p[j] = d_alpha[j] * q[j] - q[j] * d_q_next;
        d_prev[j] = d_q;
        d_q_next = d_q;
    }
}

int hard_stop(std::span<const double> p, int from) {
    NZ_CHECK(from >= 0, "hard monotonic: start position {} < 0", from);
    for (std::size_t j = static_cast<std::size_t>(from); j < p.size(); ++j)
        if (p[j] >= 0.5) return static_cast<int>(j);
    return -1;
}

}  // namespace nazar::attn::naive
