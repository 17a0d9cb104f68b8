// Additive attention score (Bahdanau, Cho & Bengio 2015, eq. 6; Luong 2015 "concat"):
//
//   e_i = v_a · tanh(W_q q + W_k h_i)       W_q: (A, H)   W_k: (A, C)   v_a: (1, A)
//
// The key half k_i = W_k h_i is computed once per batch (Attention::precompute); the query half
// u = W_q q once per step. The fused kernel below never materialises the (n, A) tanh matrix:
// each row is add + tanh + dot in one pass over A floats. Backward recomputes the tanh instead
// of storing (B, S, A) per step (T steps of that would dominate training memory).
//
//   z_i   = tanh(u + k_i)                       (A)
//   d_z_i = d_e_i v_a
//   d_pre = d_z_i ⊙ (1 - z_i²)     =>  d_u += d_pre,  d_k_i += d_pre,  d_v_a += d_e_i z_i
// Gradients ACCUMULATE (+=). Rows of `keys` are contiguous with stride A.
#pragma once

namespace nazar::attn {

// e[j] = v · tanh(u + keys[j]),  j in [0, n).  tmp: A floats of scratch.
void additive_scores(const float* u,     // (A)
                     const float* keys,  // (n, A)
                     const float* v,     // (A)
                     int n, int A,
                     float* tmp,  // (A) scratch
                     float* e);   // (n) out

// e[j] = v · tanh(u + keys[j]) and f[j] = w · tanh(u + keys[j]): two scores of one hidden layer
// (MoChA's monotonic and chunk energies) with one tanh per element; each bit for bit what
// additive_scores gives for it alone.
void additive_scores2(const float* u, const float* keys, const float* v, const float* w, int n,
                      int A,
                      float* tmp,  // (A) scratch
                      float* e,    // (n) out: with v
                      float* f);   // (n) out: with w

// Backward of additive_scores for upstream d_e (n).
void additive_scores_backward(const float* u,     // (A)
                              const float* keys,  // (n, A)
                              const float* v,     // (A)
                              const float* d_e,   // (n)
                              int n, int A,
                              float* tmp,     // (A) scratch
                              float* d_u,     // (A)     +=
                              float* d_keys,  // (n, A)  +=
                              float* d_v);    // (A)     +=

// The fused kernels use 16-lane AVX-512 where the CPU has it (unless NAZAR_ATTN_AVX512=0),
// else 8-lane AVX2; both give bit-identical results. set_additive_avx512(false) forces the
// 8-lane path, true re-enables AVX-512 where present; returns whether AVX-512 is now used.
bool set_additive_avx512(bool on);
bool additive_avx512();  // whether AVX-512 is used now (tests save and restore it)

namespace naive {  // libm tanh, no fusion: the oracle for tests and the benchmark
void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* e);
}

}  // namespace nazar::attn
