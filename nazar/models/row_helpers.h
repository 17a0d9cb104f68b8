// Row helpers shared by the decoder's forward (decoder.cpp) and its two backward paths
// (step_backward.cpp, sequence_backward.cpp). Internal to nazar/models.
#pragma once

#include "nazar/core/kernels.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <cstring>
#include <span>

namespace nazar::decoder_rows {

// dst[n, :w] (row stride ld_dst) = src (N, w)
inline void copy_cols_in(ConstTensorView src, float* dst, int ld_dst) {
    const int N = src.dim(0), w = src.dim(1);
    for (int n = 0; n < N; ++n)
        std::memcpy(dst + static_cast<int64_t>(n) * ld_dst,
                    src.data() + static_cast<int64_t>(n) * w, sizeof(float) * w);
}

// dst (N, w) += src[n, :w] (row stride ld_src)
inline void add_cols_out(const float* src, int ld_src, TensorView dst) {
    const int N = dst.dim(0), w = dst.dim(1);
    for (int n = 0; n < N; ++n)
        kernels::axpy(w, 1.0f, src + static_cast<int64_t>(n) * ld_src,
                      dst.data() + static_cast<int64_t>(n) * w);
}

// Rows [0, n) of x (dim 0), or x itself when empty (dot attention's d_keys).
inline TensorView first_rows(TensorView x, int n) {
    return x.ndim() == 0 || x.numel() == 0 ? x : x.slice(0, n);
}

// Rows [0, rows[t]) of each step t of x (T, N, w), packed in time order into out (Σ rows, w).
inline void pack_steps(ConstTensorView x, std::span<const int> rows, Tensor& out) {
    const int N = x.dim(1), w = x.dim(2);
    int64_t R = 0;
    for (const int n : rows) R += n;
    out.resize({R, w}, false);
    float* o = out.data();
    for (std::size_t t = 0; t < rows.size(); ++t) {
        std::memcpy(o, x.data() + static_cast<int64_t>(t) * N * w, sizeof(float) * rows[t] * w);
        o += static_cast<int64_t>(rows[t]) * w;
    }
}

// The inverse: out (T, N, w) = step t's first rows[t] rows from packed (Σ rows, w), 0 after.
inline void unpack_steps(ConstTensorView packed, std::span<const int> rows, TensorView out) {
    const int N = out.dim(1), w = out.dim(2);
    const float* p = packed.data();
    for (std::size_t t = 0; t < rows.size(); ++t) {
        const TensorView step = out.select(static_cast<int64_t>(t));
        std::memcpy(step.data(), p, sizeof(float) * rows[t] * w);
        step.slice(rows[t], N).zero();
        p += static_cast<int64_t>(rows[t]) * w;
    }
}

// d_pre = d_y ⊙ (1 − y²)   (y = tanh(pre))
inline void tanh_backward(ConstTensorView d_y, ConstTensorView y, TensorView d_pre) {
    for (int64_t i = 0; i < y.numel(); ++i) d_pre[i] = d_y[i] * (1.0f - y[i] * y[i]);
}

// s_1 … s_T of the top layer as (T, N, H): a view of h_all (T+1, L, N, H) when L = 1, else
// gathered into `gather`.
inline ConstTensorView top_states(ConstTensorView h_all, Tensor& gather) {
    const int T = h_all.dim(0) - 1, L = h_all.dim(1), N = h_all.dim(2), H = h_all.dim(3);
    if (L == 1) return ConstTensorView(h_all.data() + int64_t{N} * H, Shape{T, N, H});
    gather.resize({T, N, H}, false);
    for (int t = 0; t < T; ++t) gather.select(t).copy_from(h_all.select(t + 1).select(L - 1));
    return gather;
}

}  // namespace nazar::decoder_rows
