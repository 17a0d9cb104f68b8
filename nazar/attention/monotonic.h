// Monotonic attention (Raffel et al. 2017, "Online and Linear-Time Attention by Enforcing
// Monotonic Alignments"; docs/spec.md §5.6): the decoder reads the source left to right and
// never goes back. At step t, from where step t − 1 stopped, it stops at position j (attends to
// h_j alone) with the selection probability p_j or moves on with 1 − p_j:
//
//   p_j   = σ(e_j + r + ε_j)      e_j the step's score (any kind), r the learned scalar bias
//                                 "attention.monotonic_bias", ε_j ~ N(0, σ²) in training only
//   q_0   = α_{t−1,0},  q_j = (1 − p_{j−1}) q_{j−1} + α_{t−1,j}     (the probability to reach j)
//   α_j   = p_j q_j                (the expected alignment; α_{−1} = (1, 0, …, 0))
//   c_t   = Σ_j α_j h_j            (not renormalised: Σ α ≤ 1, the rest runs off the end)
//
// Training and teacher-forced scoring use this expected alignment (the recursive form, O(S);
// the parallel form is kept in the oracle, naive_monotonic.h, and nazar.torch, and the tests
// hold the two equal). Decoding is hard: step t attends to the first j at or after where step
// t − 1 attended with e_j + r >= 0 (p >= 0.5, no noise), or to nothing (c_t = 0) when there is
// none; that step and every later one then have no context.
// Backward of the recursion (d q_S = 0):
//   d q_j = d α_j p_j + (1 − p_j) d q_{j+1};   d p_j = q_j (d α_j − d q_{j+1});   d α_{t−1,j} = d
//   q_j d e_j = d p_j p_j (1 − p_j);               d r = Σ_j d e_j
// The per-step weights (B, S) carry from step to step like coverage's cov: the caller sets
// AttentionStepCache::previous (start_previous at t = 0, advance_previous after), and the
// backward hands d α_{t−1} to AttentionExtraGrad::d_previous.
#pragma once

#include "nazar/attention/attention.h"

#include <span>

namespace nazar::attn {

// One row of n positions, soft (the expected alignment): pr holds e_j (scores, scaled) on entry
// and p_j on return; alpha (n) out. noise: ε (n) or null.
void monotonic_row(float* pr, float r, const float* noise, const float* prev, int n, float* alpha);

// Hard: alpha (n) out, one-hot at the first j >= from with e_j + r >= 0, all zero when none or
// when prev has no position (the previous step ran off the end). from = the first position with
// the largest α_{t−1} (its one-hot in decoding). pr: e_j in, p_j out.
void hard_monotonic_row(float* pr, float r, const float* prev, int n, float* alpha);

// Backward of monotonic_row from d α (n) to d e (n, out; may alias d_alpha) and d α_{t−1}
// (n, +=, or null). p (n) and prev (n) as forward saw them; q (n) scratch. Returns d r = Σ d e.
float monotonic_row_backward(const float* p, const float* prev, const float* d_alpha, int n,
                             float* q, float* d_e, float* d_prev);

// MoChA (Chiu & Raffel 2018, "Monotonic Chunkwise Attention"; docs/spec.md §5.7): on top of α,
// the step attends softly to the chunk of w positions ending where the reader stops, scored by
// the chunk energies u_j (AttentionConfig::mocha_chunk):
//
//   s_{k,j} = exp(u_j) / Σ_{l=max(0,k−w+1)}^{k} exp(u_l)     j in window(k) = [max(0, k−w+1), k]
//   β_j     = Σ_{k=j}^{min(j+w−1, n−1)} α_k s_{k,j}            (Σ β = Σ α; w = 1: β = α)
//   c_t     = Σ_j β_j h_j
//
// Each window's softmax subtracts its own maximum, so no u overflows or leaves a window empty.
// Backward (G_k = Σ_{j in window(k)} d β_j s_{k,j}):  d α_k = G_k,
//   d u_j = Σ_{k=j}^{j+w−1} α_k s_{k,j} (d β_j − G_k).
// Decoding is hard: α one-hot at the stop k gives β = the softmax of u over window(k) (zeros when
// the reader ran off the end). O(n·w) per row.
//
// Soft: beta (n) from alpha (n) and u (n); hard: alpha one-hot or zero.
void mocha_row(const float* alpha, const float* u, int n, int w, float* beta);
// Backward of mocha_row: d_alpha (n) and d_u (n) OVERWRITTEN from d_beta (n).
void mocha_row_backward(const float* alpha, const float* u, const float* d_beta, int n, int w,
                        float* d_alpha, float* d_u);

// α_{−1} (B, S): one-hot at position 0 (an empty source reads none of it: its rows score no
// position).
void start_previous(int B, int S, Tensor& prev);
// next (B, S) = the step's α by source position (MoChA: its `alpha`, not the β in `weights`);
// the step's own `previous` gives the shape.
void advance_previous(const AttentionStepCache& step, Tensor& next);

}  // namespace nazar::attn
