// The packed row layout of the RNN (rnn.h, RNNCache): rows sorted by length, step t's n_t rows
// stored from offset[t], and the copies between it and the caller's (B, T, ·) tensors.
// Internal to nn/rnn.cpp.
#pragma once

#include "nazar/nn/rnn.h"

#include <span>

namespace nazar::packed_rows {

// cache.order (stable, longest first), cache.rows and cache.offset from cache.lengths, cache.B
// and cache.T.
void plan(RNNCache& cache);

// dst (N, C) = the real positions of x (B, T, C), step after step, sorted rows within a step.
void pack(ConstTensorView x, const RNNCache& cache, TensorView dst);

// out (B, T, C) from src (N, C): add = false writes every position (0 at padding), add = true
// adds into the real positions only.
void unpack(ConstTensorView src, const RNNCache& cache, TensorView out, bool add);

// dst (N, C) = src (N, C) ⊙ the rows of mask (T, B, C, caller's row order) at the same
// positions; plus_zero writes 0 + src ⊙ m (what accumulating into a zeroed buffer gives).
// An absent mask copies.
void mask_rows(ConstTensorView src, const RNNCache& cache, ConstTensorView mask, TensorView dst,
               bool plus_zero);

// dst row j = state row order[i0 + j] for j < i1 − i0 (state (B, H) in the caller's row order),
// or 0 when state is absent.
void gather_states(ConstTensorView state, std::span<const int> order, int i0, int i1,
                   TensorView dst);

// state row order[i] += src row i, for i < B (src (B, H) in sorted row order).
void add_states(ConstTensorView src, std::span<const int> order, TensorView state);

// state row order[i] = src row i.
void set_states(ConstTensorView src, std::span<const int> order, TensorView state);

}  // namespace nazar::packed_rows
