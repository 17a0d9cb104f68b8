// Coverage attention (Tu et al. 2016; See et al. 2017), additive/concat scores only
// (docs/spec.md §5b, docs/models.md "Coverage"):
//
//   cov_0 = 0,  cov_{t+1} = cov_t + α_t          (B, S) by source position; padding stays 0
//   e_ti  = v_a · tanh(W_q q_t + W_k h_i + w_c cov_ti)       w_c: (1, A)
//   "attention.coverage.weight"
//
// The score reads cov_t, so α_t depends on every earlier α_t': the backward carries
// d cov_t into d α_t' for all t' < t (Σ over later steps), as See et al. train it. Dot/general
// scores refuse coverage (validate(): no hidden layer to feed it into, and their all-steps
// GEMM path cannot run a recurrence over steps). Any locality works: a window reads cov at its
// own positions, positions outside it get α = 0 and keep their coverage.
//
// The coverage loss (training; weight λ = coverage_loss_weight):
//   L_cov = λ Σ_b Σ_{t < T_b} Σ_i min(α_ti, cov_ti)
//   d α_ti = λ [α_ti < cov_ti],  d cov_ti = λ [α_ti >= cov_ti]   (ties go to cov)
#pragma once

#include "nazar/attention/attention.h"

#include <span>

namespace nazar::attn {

// e[j] = v · tanh(u + keys[j] + cov[j] w_c), j in [0, n).  u_j, tmp: A floats of scratch.
void coverage_scores(const float* u,     // (A)
                     const float* keys,  // (n, A)
                     const float* v,     // (A)
                     const float* w_c,   // (A)
                     const float* cov,   // (n)  cov_t at the scored positions
                     int n, int A,
                     float* u_j,  // (A) scratch
                     float* tmp,  // (A) scratch
                     float* e);   // (n) out

// Backward of coverage_scores for upstream d_e (n): with pre_j = u + k_j + cov_j w_c and
// d_pre_j = d_e_j v ⊙ (1 − tanh²(pre_j)):
//   d_u += Σ_j d_pre_j;  d_k_j += d_pre_j;  d_v += Σ_j d_e_j tanh(pre_j);
//   d_w_c += Σ_j cov_j d_pre_j;  d_cov_j += w_c · d_pre_j
void coverage_scores_backward(const float* u, const float* keys, const float* v, const float* w_c,
                              const float* cov, const float* d_e, int n, int A,
                              float* u_j,     // (A) scratch
                              float* tmp,     // (A) scratch
                              float* d_pre,   // (A) scratch
                              float* d_u,     // (A)     +=
                              float* d_keys,  // (n, A)  +=
                              float* d_v,     // (A)     +=
                              float* d_w_c,   // (A)     +=
                              float* d_cov);  // (n)     +=, or null

// next (B, S) = prev.coverage + α of prev (its window scattered by source position).
void advance_coverage(const AttentionStepCache& prev, Tensor& next);
// cov_0: zeros (B, S).
void start_coverage(int B, int S, Tensor& cov);

}  // namespace nazar::attn
