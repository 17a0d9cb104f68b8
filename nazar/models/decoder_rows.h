// Row helpers shared by the decoder's forward (decoder.cpp) and its two backward paths
// (decoder_backward.cpp, sequence_backward.cpp). Internal to nazar/models.
#pragma once

#include "nazar/core/kernels.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <cstring>

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
