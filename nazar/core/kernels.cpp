#include "nazar/core/kernels.h"

#include "nazar/core/simd.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nazar::kernels {

// The scalar forms of simd.h (exp1, tanh1): branch-free, so the loops below vectorise.
static inline float exp_inline(float x) {
    return simd::exp1(x);
}
static inline float tanh_inline(float x) {
    return simd::tanh1(x);
}

static inline float sigmoid_inline(float x) {
    return 1.0f / (1.0f + exp_inline(-x));
}

float exp1(float x) {
    return exp_inline(x);
}
float tanh1(float x) {
    return tanh_inline(x);
}
float sigmoid1(float x) {
    return sigmoid_inline(x);
}

void exp(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = exp_inline(x[i]);
}
// tanh and sigmoid over arrays: kernels_avx512.cpp (16 lanes where allowed, else these forms).

void axpy(int64_t n, float a, const float* x, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void add_bias_rows(TensorView out, ConstTensorView bias) {
    const TensorView m = out.as_matrix();
    const int R = m.dim(0), N = m.dim(1);
    NZ_CHECK(bias.numel() == N, "add_bias_rows: bias {} for rows of {}", bias.shape().str(), N);
    const float* b = bias.data();
    const auto rows = [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            float* o = m.data() + r * N;
            for (int j = 0; j < N; ++j) o[j] += b[j];
        }
    };
    for_rows(R, N, rows);  // a whole batch's rows over the pool: rows are independent
}

void sum_rows_into(ConstTensorView d_out, TensorView d_bias) {
    const ConstTensorView m = d_out.as_matrix();
    const int R = m.dim(0), N = m.dim(1);
    NZ_CHECK(d_bias.numel() == N, "sum_rows_into: d_bias {} for rows of {}", d_bias.shape().str(),
             N);
    float* b = d_bias.data();
    const auto cols = [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < R; ++r) {
            const float* o = m.data() + r * N;
            for (int64_t j = c0; j < c1; ++j) b[j] += o[j];
        }
    };
    // A bias gradient over a whole batch's rows (2240 x 1536 floats: most of a millisecond on
    // one core) over the pool by columns, each column still summed over the rows in order: the
    // same sums for any thread count.
    constexpr int64_t kCols = 64;
    if (int64_t{R} * N >= kParallelCopyFloats && N >= 2 * kCols)
        parallel_for((N + kCols - 1) / kCols, 1, [&](int64_t u0, int64_t u1) {
            cols(u0 * kCols, std::min<int64_t>(N, u1 * kCols));
        });
    else
        cols(0, N);
}

void softmax_row(const float* x, int n, float* out) {
    if (n <= 0) return;
    float mx = x[0];
    for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
    if (mx == -std::numeric_limits<float>::infinity()) mx = 0;  // all −∞: avoid NaN, sum is 0 below
    float sum = 0;
    for (int i = 0; i < n; ++i) {
        out[i] = exp_inline(x[i] - mx);
        sum += out[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < n; ++i) out[i] *= inv;
}

// Max and sum with 8 independent lanes: a single float accumulator is a serial dependency chain
// that GCC does not vectorise without -ffast-math (decoding's log-softmax over V = 8000 spent 9%
// of its time here scalar); the lanes vectorise, and the pairwise-ish sum is more accurate.
float logsumexp_row(const float* x, int n) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    float m8[8] = {kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) m8[k] = std::max(m8[k], x[i + k]);
    float mx = kNegInf;
    for (; i < n; ++i) mx = std::max(mx, x[i]);
    for (float m : m8) mx = std::max(mx, m);
    if (!std::isfinite(mx)) return mx;
    float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) s8[k] += exp_inline(x[i + k] - mx);
    float sum = 0;
    for (; i < n; ++i) sum += exp_inline(x[i] - mx);
    sum += ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
    return mx + std::log(sum);
}

void masked_softmax(ConstTensorView x, std::span<const int> len, TensorView out) {
    NZ_CHECK(x.ndim() == 2 && out.shape() == x.shape(), "masked_softmax: x {} out {}",
             x.shape().str(), out.shape().str());
    const int R = x.dim(0), S = x.dim(1);
    NZ_CHECK(len.empty() || static_cast<int>(len.size()) == R,
             "masked_softmax: {} lengths for {} rows", len.size(), R);
    for (int r = 0; r < R; ++r) {
        const int n = len.empty() ? S : len[r];
        NZ_CHECK(0 <= n && n <= S, "masked_softmax: length {} outside [0, {}] in row {}", n, S, r);
        const float* xr = x.data() + static_cast<int64_t>(r) * S;
        float* o = out.data() + static_cast<int64_t>(r) * S;
        softmax_row(xr, n, o);
        std::fill(o + n, o + S, 0.0f);
    }
}

void softmax_backward(ConstTensorView a, ConstTensorView d_a, TensorView d_x, bool accumulate) {
    NZ_CHECK(a.shape() == d_a.shape() && a.shape() == d_x.shape(),
             "softmax_backward: a {} d_a {} d_x {}", a.shape().str(), d_a.shape().str(),
             d_x.shape().str());
    const ConstTensorView am = a.as_matrix();
    const int R = am.dim(0), S = am.dim(1);
    for (int r = 0; r < R; ++r) {
        const float* ar = a.data() + static_cast<int64_t>(r) * S;
        const float* gr = d_a.data() + static_cast<int64_t>(r) * S;
        float* dr = d_x.data() + static_cast<int64_t>(r) * S;
        float dot = 0;
        for (int s = 0; s < S; ++s) dot += ar[s] * gr[s];
        if (accumulate)
            for (int s = 0; s < S; ++s) dr[s] += ar[s] * (gr[s] - dot);
        else
            for (int s = 0; s < S; ++s) dr[s] = ar[s] * (gr[s] - dot);
    }
}

void log_softmax(ConstTensorView x, TensorView out) {
    NZ_CHECK(out.shape() == x.shape(), "log_softmax: x {} out {}", x.shape().str(),
             out.shape().str());
    const ConstTensorView m = x.as_matrix();
    const int R = m.dim(0), V = m.dim(1);
    for (int r = 0; r < R; ++r) {
        const float* xr = x.data() + static_cast<int64_t>(r) * V;
        float* o = out.data() + static_cast<int64_t>(r) * V;
        const float lse = logsumexp_row(xr, V);
        for (int v = 0; v < V; ++v) o[v] = xr[v] - lse;
    }
}

}  // namespace nazar::kernels
