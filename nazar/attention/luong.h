// Multiplicative attention scores (Luong, Pham & Manning 2015, §3.1, eq. 8):
//
//   dot      e_i = s · q · h_i            requires H == C (validate() names both sizes and
//                                         suggests `general`; docs/spec.md §4.1, "mistake 3")
//   general  e_i = s · q · (W_a h_i)      W_a = key.weight: (H, C); keys W_a h_i once per batch
//   concat   v_a · tanh(W_a [q; h_i]) = v_a · tanh(W_q q + W_k h_i): the additive kernel of
//            additive_kernels.h with the same parameter names (Luong's timing is the decoder's
//            choice)
//   s        1 (ScaleMode::none), 1/sqrt(C) (inv_sqrt), or a learned scalar "scale" (learned)
//
// OpenNMT-py applies W to the query instead: the same score with W = W_aᵀ (matters for fixtures).
//
//   e_i = s r_i, r_i = q · k_i   =>  d_q += s Σ_i d_e_i k_i,  d_k_i += s d_e_i q,
//                                    d_s += Σ_i d_e_i r_i   (learned scale, in attention.cpp)
// Gradients ACCUMULATE (+=). Rows of `keys` are contiguous with stride K.
#pragma once

namespace nazar::attn {

// r[j] = q · keys[j]  (unscaled), j in [0, n)
void bilinear_scores(const float* q,     // (K)
                     const float* keys,  // (n, K)
                     int n, int K,
                     float* r);  // (n) out

// d_q += s Σ_j d_e[j] keys[j];  d_keys[j] += s d_e[j] q
void bilinear_scores_backward(const float* q,     // (K)
                              const float* keys,  // (n, K)
                              const float* d_e,   // (n)
                              int n, int K, float s,
                              float* d_q,      // (K)     +=
                              float* d_keys);  // (n, K)  +=

}  // namespace nazar::attn
