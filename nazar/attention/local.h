// Local attention (Luong, Pham & Manning 2015, §3.2; docs/spec.md §5): the window arithmetic and
// the local-p position predictor. The Gaussian of local-p's weights is a row equation
// (row_equations.h); attention.cpp combines these with any score.
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

// local-p predictor, batched (one GEMM each way):
//   hidden = tanh(query W_pᵀ)  sig = sigmoid(hidden v_pᵀ)  p[b] = S_b · sig[b]
void predict_positions(ConstTensorView query,         // (B, H)
                       ConstTensorView W_p,           // (P, H)
                       ConstTensorView v_p,           // (1, P)
                       std::span<const int> lengths,  // (B)
                       TensorView hidden,             // (B, P)  out
                       TensorView sig,                // (B)     out
                       TensorView p);                 // (B)     out
// Backward from d_p (B): d_u = d_p · S_b · sig (1 - sig);  d_v_p += Σ_b d_u hidden[b];
// d_pre = d_u v_p ⊙ (1 - hidden²);  d_W_p += d_preᵀ query;  d_query += d_pre W_p.
void predict_positions_backward(
    ConstTensorView d_p,           // (B)
    ConstTensorView query,         // (B, H)
    ConstTensorView W_p,           // (P, H)
    ConstTensorView v_p,           // (1, P)
    std::span<const int> lengths,  // (B)
    ConstTensorView hidden,        // (B, P)  from forward
    ConstTensorView sig,           // (B)     from forward
    TensorView d_pre,              // (B, P)  written (the caller may batch d_W_p from it)
    TensorView d_query,            // (B, H)  +=
    TensorView d_W_p,              // (P, H)  +=  (empty view: not computed)
    TensorView d_v_p);             // (1, P)  +=

// out[b, start[b] + j] = weights[b, j] for j < W with start[b] + j < S; zero elsewhere.
void scatter_window(ConstTensorView weights,     // (B, W)
                    std::span<const int> start,  // (B)
                    TensorView out);             // (B, S) overwritten

}  // namespace nazar::attn
