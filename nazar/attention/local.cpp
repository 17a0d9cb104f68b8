// Local attention windows and the local-p position predictor (see local.h for the semantics).
#include "nazar/attention/local.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cmath>

namespace nazar::attn {

Window window_around(int c, int S_b, int D) {
    if (S_b <= 0) return {0, 0};
    const int lo = std::max(0, c - D);
    const int hi = std::min(S_b - 1, c + D);
    NZ_CHECK(lo <= hi, "local window: centre {} with D={} misses the sentence [0, {}]", c, D,
             S_b - 1);
    return {lo, hi - lo + 1};
}

Window monotonic_window(int t, int S_b, int D, float& p_t) {
    NZ_CHECK(t >= 0, "local-m: decoder step must be >= 0, got {}", t);
    if (S_b <= 0) {
        p_t = 0;
        return {0, 0};
    }
    const int c = std::min(t, S_b - 1);
    p_t = static_cast<float>(c);
    return window_around(c, S_b, D);
}

Window predictive_window(float p_t, int S_b, int D) {
    if (S_b <= 0) return {0, 0};
    // Clamp in float before converting: p_t is NaN when the predictor's weights are (the
    // trainer then skips the update), and a NaN or huge float converted to int is undefined.
    const float r = std::floor(p_t + 0.5f);
    const int c =
        !(r > 0.0f) ? 0 : (r >= static_cast<float>(S_b - 1) ? S_b - 1 : static_cast<int>(r));
    return window_around(c, S_b, D);
}

void predict_positions(ConstTensorView query, ConstTensorView W_p, ConstTensorView v_p,
                       std::span<const int> lengths, TensorView hidden, TensorView sig,
                       TensorView p) {
    const int B = query.dim(0), H = query.dim(1), P = W_p.dim(0);
    NZ_CHECK_SHAPE(W_p, {P, H});
    NZ_CHECK_SHAPE(v_p, {1, P});
    NZ_CHECK_SHAPE(hidden, {B, P});
    NZ_CHECK_SHAPE(sig, {B});
    NZ_CHECK_SHAPE(p, {B});
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "local-p: {} lengths for a batch of {}",
             lengths.size(), B);
    // hidden = tanh(query W_pᵀ)
    gemm(query, false, W_p, true, hidden);
    kernels::tanh(hidden.data(), hidden.data(), hidden.numel());
    for (int b = 0; b < B; ++b) {
        const float* h = hidden.data() + static_cast<int64_t>(b) * P;
        float u = 0;
        for (int i = 0; i < P; ++i) u += v_p[i] * h[i];
        sig[b] = kernels::sigmoid1(u);
        p[b] = static_cast<float>(lengths[b]) * sig[b];
    }
}

void predict_positions_backward(ConstTensorView d_p, ConstTensorView query, ConstTensorView W_p,
                                ConstTensorView v_p, std::span<const int> lengths,
                                ConstTensorView hidden, ConstTensorView sig, TensorView d_pre,
                                TensorView d_query, TensorView d_W_p, TensorView d_v_p) {
    const int B = query.dim(0), H = query.dim(1), P = W_p.dim(0);
    NZ_CHECK_SHAPE(d_p, {B});
    NZ_CHECK_SHAPE(d_pre, {B, P});
    NZ_CHECK_SHAPE(d_query, {B, H});
    const bool weight =
        d_W_p.data() != nullptr && d_W_p.numel() > 0;  // empty: the caller batches it
    if (weight) NZ_CHECK_SHAPE(d_W_p, {P, H});
    NZ_CHECK_SHAPE(d_v_p, {1, P});
    for (int b = 0; b < B; ++b) {
        // p = S_b sig(u)  =>  d_u = d_p S_b sig (1 - sig)
        const float d_u = d_p[b] * static_cast<float>(lengths[b]) * sig[b] * (1.0f - sig[b]);
        const float* h = hidden.data() + static_cast<int64_t>(b) * P;
        float* dp = d_pre.data() + static_cast<int64_t>(b) * P;
        // u = v_p · h  =>  d_v_p += d_u h;  d_h = d_u v_p;  h = tanh(pre)  =>  d_pre = d_h (1 - h²)
        for (int i = 0; i < P; ++i) {
            d_v_p[i] += d_u * h[i];
            dp[i] = d_u * v_p[i] * (1.0f - h[i] * h[i]);
        }
    }
    // pre = query W_pᵀ  =>  d_W_p += d_preᵀ query;  d_query += d_pre W_p
    if (weight) gemm(d_pre, true, query, false, d_W_p, 1.0f, 1.0f);
    gemm(d_pre, false, W_p, false, d_query, 1.0f, 1.0f);
}

void scatter_window(ConstTensorView weights, std::span<const int> start, TensorView out) {
    const int B = weights.dim(0), W = weights.dim(1), S = out.dim(1);
    NZ_CHECK(out.ndim() == 2 && out.dim(0) == B, "scatter_window: out {} for weights {}",
             out.shape().str(), weights.shape().str());
    NZ_CHECK(static_cast<int>(start.size()) == B, "scatter_window: {} starts for {} rows",
             start.size(), B);
    out.zero();
    for (int b = 0; b < B; ++b)
        for (int j = 0; j < W && start[b] + j < S; ++j) out.at(b, start[b] + j) = weights.at(b, j);
}

}  // namespace nazar::attn
