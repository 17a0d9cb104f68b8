// Local attention (Luong, Pham & Manning 2015, §3.2; SPEC.md §5): the window arithmetic, the
// local-p position predictor and its Gaussian. attention.cpp combines these with any score.
//
// Exact semantics (the PyTorch reference python/nazar_torch.py follows these to the letter):
//   S_b = lengths[b], the REAL length of sentence b (never the padded S). D >= 1, σ = D / 2.
//   local-m  p_t = min(t, S_b - 1) (t = 0-based decoder step);  centre c = p_t.
//   local-p  p_t = S_b · sigmoid(v_p · tanh(W_p q))  (real, in (0, S_b));
//            centre c = min(floor(p_t + 0.5), S_b - 1)   (round half up, then clamp).
//   window   positions i in [lo, hi], lo = max(0, c - D), hi = min(S_b - 1, c + D);
//            start = lo, count = hi - lo + 1 (1..2D+1). S_b = 0: start 0, count 0, c = 0,
//            p_t = 0, all weights 0, context 0.
//   weights  local-m: α_i = softmax over the window of e_i (zero elsewhere).
//            local-p: α_i = softmax over the window of e_i · exp(-(i - p_t)² / (2σ²)),
//            with the real-valued p_t; NOT renormalised (Luong's eq. 10), so Σ α < 1.
//   gradient flows through p_t (the Gaussian) into W_p, v_p and the query; the window
//   choice (the rounding of p_t) is piecewise constant and passes no gradient.
// Only the window's scores are computed: per-step work is O(D), independent of S.
#pragma once

#include "nazar/core/tensor.h"

#include <span>

namespace nazar::attn {

struct Window {
    int start = 0;  // first source position in the window
    int count = 0;  // number of positions (0 only when S_b = 0)
};

// The clipped window around integer centre c (see above), for a sentence of length S_b.
Window window_around(int c, int S_b, int D);
// local-m: p_t = min(t, S_b - 1) and its window.
Window monotonic_window(int t, int S_b, int D, float& p_t);
// local-p: the window of a predicted real position p_t.
Window predictive_window(float p_t, int S_b, int D);

// g[j] = exp(-(start + j - p)² / (2σ²)),  j in [0, count)
void gaussian(float p, int start, int count, float sigma, float* g);

// Backward of local-p's weights α_j = pr_j g_j over one window (g_j = exp(-(start+j-p)²/2σ²),
// inv_var = 1/σ²): d_pr_j = d_α_j g_j (written over d_w in place); returns
// d_p = Σ_j d_α_j pr_j g_j (start+j-p)/σ².
float gaussian_backward(float p, int start, int count, float inv_var,
                        const float* probs,  // (count)  pr
                        float* d_w);         // (count)  d_α in, d_pr out
// Softmax backward over one window: d_e = pr ⊙ (d_pr − Σ_j pr_j d_pr_j); d_e may alias d_pr.
void window_softmax_backward(const float* probs, const float* d_pr, int count, float* d_e);

// local-p predictor, batched (one GEMM each way):
//   hidden = tanh(query W_pᵀ)  sig = sigmoid(hidden v_pᵀ)  p[b] = S_b · sig[b]
void predict_positions(TensorView query,              // (B, H)
                       TensorView W_p,                // (P, H)
                       TensorView v_p,                // (1, P)
                       std::span<const int> lengths,  // (B)
                       TensorView hidden,             // (B, P)  out
                       TensorView sig,                // (B)     out
                       TensorView p);                 // (B)     out
// Backward from d_p (B): d_u = d_p · S_b · sig (1 - sig);  d_v_p += Σ_b d_u hidden[b];
// d_pre = d_u v_p ⊙ (1 - hidden²);  d_W_p += d_preᵀ query;  d_query += d_pre W_p.
void predict_positions_backward(
    TensorView d_p,                // (B)
    TensorView query,              // (B, H)
    TensorView W_p,                // (P, H)
    TensorView v_p,                // (1, P)
    std::span<const int> lengths,  // (B)
    TensorView hidden,             // (B, P)  from forward
    TensorView sig,                // (B)     from forward
    TensorView d_pre,              // (B, P)  written (the caller may batch d_W_p from it)
    TensorView d_query,            // (B, H)  +=
    TensorView d_W_p,              // (P, H)  +=  (empty view: not computed)
    TensorView d_v_p);             // (1, P)  +=

// out[b, start[b] + j] = weights[b, j] for j < W with start[b] + j < S; zero elsewhere.
void scatter_window(TensorView weights,          // (B, W)
                    std::span<const int> start,  // (B)
                    TensorView out);             // (B, S) overwritten

}  // namespace nazar::attn
