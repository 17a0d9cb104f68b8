// Double-precision oracle of MoChA's chunkwise weights (naive_mocha.h).
#include "nazar/attention/naive_mocha.h"

#include "nazar/core/check.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace nazar::attn::naive {

namespace {
void check_row(std::span<const double> alpha, std::span<const double> u, int w) {
    NZ_CHECK(alpha.size() == u.size(), "chunkwise weights: {} weights, {} energies", alpha.size(),
             u.size());
    NZ_CHECK(w >= 1, "chunkwise weights: window {} < 1", w);
}

int first_of(int k, int w) {  // the first position of the window ending at k
    return std::max(0, k - w + 1);
}

// D_k = Σ_{l in window(k)} exp(u_l − m), m = max u (the shift cancels in every ratio)
std::vector<double> window_sums(std::span<const double> u, int w, double m) {
    std::vector<double> D(u.size(), 0.0);
    for (int k = 0; k < static_cast<int>(u.size()); ++k)
        for (int l = first_of(k, w); l <= k; ++l) D[k] += std::exp(u[l] - m);
    return D;
}

double max_of(std::span<const double> u) {
    return u.empty() ? 0.0 : *std::max_element(u.begin(), u.end());
}
}  // namespace

std::vector<double> chunkwise_weights(std::span<const double> alpha, std::span<const double> u,
                                      int w) {
    check_row(alpha, u, w);
    const int S = static_cast<int>(u.size());
    const double m = max_of(u);
    const std::vector<double> D = window_sums(u, w, m);
    std::vector<double> beta(S, 0.0);
    for (int j = 0; j < S; ++j)
        for (int k = j; k <= std::min(j + w - 1, S - 1); ++k)
            beta[j] += alpha[k] * std::exp(u[j] - m) / D[k];
    return beta;
}

void chunkwise_weights_backward(std::span<const double> alpha, std::span<const double> u, int w,
                                std::span<const double> d_beta, std::span<double> d_alpha,
                                std::span<double> d_u) {
    check_row(alpha, u, w);
    const int S = static_cast<int>(u.size());
    NZ_CHECK(static_cast<int>(d_beta.size()) == S && static_cast<int>(d_alpha.size()) == S &&
                 static_cast<int>(d_u.size()) == S,
             "chunkwise weights backward: sizes {}, {}, {} for {} positions", d_beta.size(),
             d_alpha.size(), d_u.size(), S);
    const double m = max_of(u);
    const std::vector<double> D = window_sums(u, w, m);
    std::vector<double> E(S), G(S, 0.0);
    for (int j = 0; j < S; ++j) E[j] = std::exp(u[j] - m);
    for (int k = 0; k < S; ++k)
        for (int j = first_of(k, w); j <= k; ++j) G[k] += d_beta[j] * E[j];
    for (int k = 0; k < S; ++k) d_alpha[k] = G[k] / D[k];
    for (int j = 0; j < S; ++j) {
        double direct = 0, through_sums = 0;
        for (int k = j; k <= std::min(j + w - 1, S - 1); ++k) {
            direct += alpha[k] / D[k];
            through_sums += alpha[k] * G[k] / (D[k] * D[k]);
        }
        d_u[j] = E[j] * (d_beta[j] * direct - through_sums);
    }
}

std::vector<double> hard_chunk(std::span<const double> u, int k, int w) {
    NZ_CHECK(w >= 1 && k >= -1 && k < static_cast<int>(u.size()),
             "hard chunk: stop {} for {} positions, window {}", k, u.size(), w);
    std::vector<double> beta(u.size(), 0.0);
    if (k < 0) return beta;
    double m = -HUGE_VAL, sum = 0;
    for (int l = first_of(k, w); l <= k; ++l) m = std::max(m, u[l]);
    for (int l = first_of(k, w); l <= k; ++l) sum += (beta[l] = std::exp(u[l] - m));
    for (int l = first_of(k, w); l <= k; ++l) beta[l] /= sum;
    return beta;
}

}  // namespace nazar::attn::naive
