// GNMT length normalisation and coverage penalty (hypothesis.h).
#include "nazar/decode/hypothesis.h"

#include "nazar/core/check.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nazar {

double length_penalty(int n, float alpha) {
    if (alpha == 0.0f) return 1.0;
    return std::pow((5.0 + n) / 6.0, static_cast<double>(alpha));
}

double coverage_penalty(ConstTensorView attention, float beta) {
    if (beta == 0.0f || attention.numel() == 0) return 0.0;
    NZ_CHECK(attention.ndim() == 2, "coverage_penalty: attention must be (n, S_b), got {} dims",
             attention.ndim());
    const int n = static_cast<int>(attention.dim(0)), S = static_cast<int>(attention.dim(1));
    std::vector<double> cov(S, 0.0);
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < S; ++i) cov[i] += attention.at(t, i);
    double sum = 0;
    for (double c : cov) sum += std::log(std::clamp(c, 1e-10, 1.0));
    return static_cast<double>(beta) * sum;
}

double ranking_score(double log_prob, ConstTensorView attention, float alpha, float beta) {
    const int n = attention.ndim() == 2 ? static_cast<int>(attention.dim(0)) : 0;
    return log_prob / length_penalty(n, alpha) + coverage_penalty(attention, beta);
}

}  // namespace nazar
