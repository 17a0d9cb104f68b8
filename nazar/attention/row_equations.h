// Internal to nazar/attention: the equations of one attention row (one decoder step of one
// sentence), written once here and called by both paths: the per-step Attention::forward /
// backward (attention.cpp) and the all-steps forward_steps / backward_steps
// (all_steps.cpp, local_all_steps.cpp). Score kernels: additive_kernels.h, luong.h; the
// window arithmetic and the local-p predictor: local.h.
//
// A row scores the n = w.count source positions i = w.start + j, j in [0, n), of its window;
// its buffers are W >= n wide and columns [n, W) are exactly 0 (padding, clipped windows).
//   e_j = s r_j                       dot/general (r_j = q · k_j); additive writes e directly
//   pr  = softmax(e) over the window
//   α_j = pr_j g_j,  g_j = exp(-(i - p_t)² / 2σ²),  σ = D / 2     local-p (not renormalised)
//   α_j = pr_j                                                    global, local-m
//   c   = Σ_j α_j h_i
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/attention/local.h"

#include <span>

namespace nazar::attn {

// Throws unless there are B lengths, each in [0, S] (the message names the sentence).
void check_lengths(std::span<const int> lengths, int B, int S);

// The window of a row: global [0, S_b); local-m around p_t = min(t, S_b - 1) (written to p_t);
// local-p around the predicted p_t (read from p_t).
Window row_window(LocalMode mode, int t, int S_b, int D, float& p_t);

// σ of local-p's Gaussian for the half-window D.
float gaussian_sigma(int D);

// e = s r over the window; r's columns [n, W) are set to 0.
void scale_scores(float* r, float s, int n, int W, float* e);

// e ← softmax(e) over its first n columns, in place; columns [n, W) ← 0.
void masked_softmax(float* e, int n, int W);

// From the scores e of a row (in pr) to its weights: pr ← masked_softmax(e); α = pr ⊙ g
// (gaussian: local-p, centre p, width sigma) or α = pr. α's columns [n, W) are 0.
void row_weights(bool gaussian, float p, Window w, int W, float sigma,
                 float* pr,   // (W)  e in, softmax out
                 float* wt);  // (W)  α out

// c = Σ_j α_j h_j over the window's rows h (n, C).
void row_context(const float* wt, int n, const float* h, int C, float* c);

// c = Σ_j α_j h_j  =>  d_α_j = d_c · h_j;  d_h_j += α_j d_c
void row_context_backward(const float* d_c,  // (C)
                          const float* wt,   // (n)     α
                          int n,
                          const float* h,  // (n, C)  the window's encoder rows
                          int C,
                          float* d_alpha,  // (n)     out
                          float* d_h);     // (n, C)  +=

// Backward of row_weights from d α to d e:
//   α = pr ⊙ g  =>  d_pr = d_α ⊙ g;  d_p = Σ_j d_α_j pr_j g_j (i - p)/σ²   (gaussian only)
//   pr = softmax(e)  =>  d_e = pr ⊙ (d_pr − Σ_j pr_j d_pr_j)
// Returns d_p (0 without the Gaussian). d_pr is written only with the Gaussian (else d_pr = d_α
// and it may be null); d_e may alias d_alpha when there is no Gaussian.
float row_weights_backward(bool gaussian, float p, Window w, float sigma,
                           const float* pr,       // (n)
                           const float* d_alpha,  // (n)
                           float* d_pr,           // (n)  out (gaussian)
                           float* d_e);           // (n)  out

// e = s r  =>  d_r = s d_e over the window (dot/general, for the callers that batch
// d_q / d_k into GEMMs; bilinear_scores_backward takes d_e and s itself).
void scale_scores_backward(const float* d_e, float s, int n, float* d_r);

}  // namespace nazar::attn
