// libm-based reference versions of kernels.h: slow, obviously right, used as test oracles.
#include "nazar/core/kernels.h"

#include <cmath>
#include <limits>

namespace nazar::kernels::naive {

void exp(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}
void tanh(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}
void sigmoid(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
}

void masked_softmax(ConstTensorView x, std::span<const int> len, TensorView out) {
    const int R = x.dim(0), S = x.dim(1);
    for (int r = 0; r < R; ++r) {
        const int n = len.empty() ? S : len[r];
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int s = 0; s < n; ++s) mx = std::max(mx, static_cast<double>(x.at(r, s)));
        for (int s = 0; s < n; ++s) sum += std::exp(x.at(r, s) - mx);
        for (int s = 0; s < S; ++s)
            out.at(r, s) = s < n ? static_cast<float>(std::exp(x.at(r, s) - mx) / sum) : 0.0f;
    }
}

void log_softmax(ConstTensorView x, TensorView out) {
    const ConstTensorView m = x.as_matrix();
    const TensorView o = out.as_matrix();
    for (int r = 0; r < m.dim(0); ++r) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int v = 0; v < m.dim(1); ++v) mx = std::max(mx, static_cast<double>(m.at(r, v)));
        for (int v = 0; v < m.dim(1); ++v) sum += std::exp(m.at(r, v) - mx);
        const double lse = mx + std::log(sum);
        for (int v = 0; v < m.dim(1); ++v) o.at(r, v) = static_cast<float>(m.at(r, v) - lse);
    }
}

}  // namespace nazar::kernels::naive
