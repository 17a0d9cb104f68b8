// GRU cell with PyTorch's exact equations, gate order (r, z, n) and parameter layout
// (torch.nn.GRUCell / torch.nn.GRU, Cho et al. 2014):
//
//   gi = W_ih x + b_ih          (N, 3H)   = [gi_r | gi_z | gi_n]
//   gh = W_hh h + b_hh          (N, 3H)   = [gh_r | gh_z | gh_n]
//   r  = σ(gi_r + gh_r)    z = σ(gi_z + gh_z)    n = tanh(gi_n + r ⊙ gh_n)
//   h' = (1 − z) ⊙ n + z ⊙ h
//
// Two ways to step: from a precomputed projection gi (the RNN computes gi for all T steps in
// one GEMM) or from a raw input x (decoders feed [emb; context] step by step). The gate math
// is one fused pass (gru::gates_forward / gates_backward) shared by both and by the RNN.
// Layer normalisation (Config::layer_norm; Ba et al. 2016, docs/spec.md §2.3): the two products
// are normalised per gate block (layer_norm.h) before the biases, which become the LN shift:
//   gi = LN(x W_ihᵀ; γ_ih) + b_ih     gh = LN(h W_hhᵀ; γ_hh) + b_hh     (gates as above)
// γ_ih, γ_hh = ln_weight_ih / ln_weight_hh (3H each, initialised to 1). With it, gi / gh below
// mean these normalised sums, and the affine helpers (cell_project_input ...) compute the bare
// products x W_ihᵀ / h W_hhᵀ, the bias being added by the normalisation.
// Per-step caches are owned by the caller (one per step). Rows can be masked (StepMask):
// a masked row keeps its state (h' = h) and receives no gate gradient, which is how padded
// positions of a right-padded batch leave the recurrence untouched.
// This header also defines RNNCellParams (shared with LSTMCell and RNN) and StepMask.
// Tensor members of nn structs start (0)-shaped: "absent", and safe to copy (a default Tensor
// has shape () = one element but no data). Absent = no data or numel 0, for views too.
// Init as PyTorch: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H)).
//
// Gradients: backward ACCUMULATES (+=) into every d_* argument and into `grad`, except the
// raw kernels in namespace gru, which WRITE their d_gi / d_gh (documented there).
// Math: docs/derivations/gru.md.
#pragma once

#include "nazar/core/blas.h"
#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#include <span>

namespace nazar {

// Parameters of one recurrent cell, G = 3 (GRU: r, z, n) or 4 (LSTM: i, f, g, o) gate blocks
// stacked along dim 0, exactly as torch.nn.GRUCell / LSTMCell (and one layer-direction of
// torch.nn.GRU / LSTM) store them.
struct RNNCellParams {
    Tensor weight_ih{Shape{0}};     // (G·H, I)
    Tensor weight_hh{Shape{0}};     // (G·H, H)
    Tensor bias_ih{Shape{0}};       // (G·H), empty when the cell has no bias
    Tensor bias_hh{Shape{0}};       // (G·H), empty when the cell has no bias
    Tensor ln_weight_ih{Shape{0}};  // (G·H) LN gains γ_ih; empty without layer normalisation
    Tensor ln_weight_hh{Shape{0}};  // (G·H) LN gains γ_hh; empty without layer normalisation

    // Layer-normalised (the gains' shape, so also true for an inference model's placeholders).
    bool layer_norm() const { return ln_weight_ih.numel() > 0; }

    template <class F>
    void visit(F&& f) {  // torch.nn.GRUCell / LSTMCell state_dict names, then the LN gains
        f("weight_ih", weight_ih);
        f("weight_hh", weight_hh);
        f("bias_ih", bias_ih);
        f("bias_hh", bias_hh);
        f("ln_weight_ih", ln_weight_ih);  // absent (skipped by collect_params) without LN
        f("ln_weight_hh", ln_weight_hh);
    }
};

// Allocates an RNNCellParams of G gates (values ~ U(-1/sqrt(H), 1/sqrt(H)) from rng, or zeros
// when rng is null — that is how the matching `grad` is made). ParamMode::inference
// (core/params.h): placeholders and no draws (rng set), or an all-absent gradient (rng null).
// layer_norm adds the gains ln_weight_ih / ln_weight_hh, set to 1 (drawn from nothing, after
// the other tensors' draws, so the rng stream is the one a cell without LN sees).
RNNCellParams make_rnn_cell_params(int gates, int input_size, int hidden_size, bool bias, Rng* rng,
                                   ParamMode mode = ParamMode::training, bool layer_norm = false);

// The affine parts every cell and the RNN share (G·H = rows of the weights):
//   gi = x W_ihᵀ + b_ih   for M rows at once (M = N for one step, T·B for a whole layer).
// With p.layer_norm() each helper leaves the bias out (its value and its gradient): it is the
// normalisation's shift (layer_norm.h), added after normalising the product.
void cell_project_input(const RNNCellParams& p,
                        ConstTensorView x,        // (M, I) or (..., I)
                        TensorView gi,            // (M, G·H) or (..., G·H); overwritten
                        WeightTRows wih_t = {});  // W_ihᵀ of this batch (blas.h) or none
//   d_x += d_gi W_ih;  grad.weight_ih += d_giᵀ x;  grad.bias_ih += Σ_rows d_gi.
void cell_project_input_backward(const RNNCellParams& p, RNNCellParams& grad,
                                 ConstTensorView d_gi,  // (M, G·H)
                                 ConstTensorView x,     // (M, I)
                                 TensorView d_x);       // (M, I) +=; empty view = not needed
//   a += b_hh, then a += h W_hhᵀ   (LSTM: a = gi; GRUCell writes 0 + b_hh instead).
// whh_t: W_hhᵀ made for this batch (refresh_weight_t, blas.h), or null.
void cell_add_recurrent(const RNNCellParams& p,
                        ConstTensorView h,  // (N, H)
                        TensorView a,       // (N, G·H) +=
                        WeightTRows whh_t = {});
//   d_h += d_a W_hh;  grad.weight_hh += d_aᵀ h;  grad.bias_hh += Σ_rows d_a.
void cell_add_recurrent_backward(const RNNCellParams& p, RNNCellParams& grad,
                                 ConstTensorView d_a,  // (N, G·H)
                                 ConstTensorView h,    // (N, H)
                                 TensorView d_h);      // (N, H) +=; empty view = not needed

// Which rows of a step are real tokens: row b is active iff t < lengths[b].
// Default (empty lengths) = every row active.
struct StepMask {
    std::span<const int> lengths;  // (N)
    int t = 0;                     // time index of this step
    bool active(int b) const { return lengths.empty() || t < lengths[b]; }
};
// layer_norm: gi = LN(x W_ihᵀ; γ_ih) + b_ih in place over its G blocks of H, â and rstd kept in
// xhat (N, G·H) and rstd (N, G) (resized) for backward. Without layer_norm: nothing.
void cell_normalize_input(const RNNCellParams& p, int hidden_size, TensorView gi, Tensor& xhat,
                          Tensor& rstd);

// Written by forward, read by backward; one per step, owned by the caller. forward resizes the
// tensors (resize() keeps the buffer, so a cache reused across batches stops allocating).
struct GRUStepCache {
    Tensor gates{Shape{0}};  // (N, 3H)  r, z, n after their nonlinearities
    Tensor gh_n{Shape{0}};   // (N, H)   W_hn h + b_hn  (r multiplies it; backward needs it for d_r)
    Tensor gi{Shape{0}};     // (N, 3H)  W_ih x + b_ih; filled only by the raw-input forward()
    // layer_norm only (layer_norm.h): â and 1/sqrt(σ² + ε) of the two products
    Tensor ln_i{Shape{0}};    // (N, 3H)  â of x W_ihᵀ (normalize_input)
    Tensor ln_h{Shape{0}};    // (N, 3H)  â of h W_hhᵀ
    Tensor rstd_i{Shape{0}};  // (N, 3)
    Tensor rstd_h{Shape{0}};  // (N, 3)
};

namespace gru {

// Fused gate forward over N rows (one pass per row, vectorised kernels).
//   gates on entry: gh = W_hh h + b_hh; on exit: r, z, n.  gh_n gets gh's n block.
//   h_new = (1 − z) ⊙ n + z ⊙ h for active rows, h_new = h for masked rows.
// h_new may alias h.
void gates_forward(ConstTensorView gi,  // (N, 3H)
                   ConstTensorView h,   // (N, H)
                   TensorView gates,    // (N, 3H)  in: gh; out: r, z, n
                   TensorView gh_n,     // (N, H)   out
                   TensorView h_new,    // (N, H)   out
                   StepMask mask = {});

// Fused gate backward. WRITES d_gi and d_gh (pre-activation gradients; zero rows for masked
// rows) and ACCUMULATES the direct path into d_h:
//   d_h += d_h_new ⊙ z   (active rows),   d_h += d_h_new   (masked rows).
// The recurrent path d_h += d_gh W_hh and all parameter gradients are the caller's GEMMs.
void gates_backward(ConstTensorView d_h_new,  // (N, H)
                    ConstTensorView h,        // (N, H)   state forward started from
                    ConstTensorView gates,    // (N, 3H)  from forward
                    ConstTensorView gh_n,     // (N, H)   from forward
                    TensorView d_gi,          // (N, 3H)  written
                    TensorView d_gh,          // (N, 3H)  written
                    TensorView d_h,           // (N, H)   +=; must not alias d_h_new
                    StepMask mask = {});

}  // namespace gru

class GRUCell {
public:
    struct Config {
        int input_size = 0;   // I
        int hidden_size = 0;  // H
        bool bias = true;
        bool layer_norm = false;  // LN of both products (header comment); gains set to 1
    };

    GRUCell() = default;
    // U(-1/sqrt(H), 1/sqrt(H)) for all four tensors; inference: core/params.h
    GRUCell(Config cfg, Rng& rng, ParamMode mode = ParamMode::training);

    // gi = x W_ihᵀ + b_ih for any number of rows (M = N for one step, B·T for a whole sequence);
    // with layer_norm the bare product x W_ihᵀ (normalize_input finishes gi).
    void project_input(ConstTensorView x,     // (M, I) or (..., I)
                       TensorView gi) const;  // (M, 3H) or (..., 3H); overwritten
    // layer_norm: gi = LN(x W_ihᵀ; γ_ih) + b_ih in place, â and rstd saved in cache (the
    // backward of every step function below reads them). Without layer_norm: nothing.
    void normalize_input(TensorView gi,               // (N, 3H)  in: x W_ihᵀ; out: gi
                         GRUStepCache& cache) const;  // ln_i, rstd_i out
    // d_x += d_gi W_ih;  grad.weight_ih += d_giᵀ x;  grad.bias_ih += Σ_rows d_gi.
    void project_input_backward(ConstTensorView d_gi,  // (M, 3H)
                                ConstTensorView x,     // (M, I)
                                TensorView d_x);       // (M, I) +=; empty view = not needed

    // One step from a precomputed projection (with layer_norm: after normalize_input).
    void forward_projected(ConstTensorView gi,   // (N, 3H)  W_ih x + b_ih
                           ConstTensorView h,    // (N, H)
                           TensorView h_new,     // (N, H)   out; may alias h only if the
                                                 //          caller does not need h for backward
                           GRUStepCache& cache,  // out
                           StepMask mask = {},
                           WeightTRows whh_t = {}) const;  // W_hhᵀ of this batch (blas.h) or none
    // d_gi += ∂/∂gi;  d_h += ∂/∂h;  grad.weight_hh += d_ghᵀ h;  grad.bias_hh += Σ d_gh
    // (layer_norm: gi is the normalised sum; grad.ln_weight_hh too; gi's own LN is the caller's).
    void backward_projected(ConstTensorView d_h_new,  // (N, H)
                            ConstTensorView h,        // (N, H)  same tensor forward saw
                            const GRUStepCache& cache,
                            TensorView d_gi,  // (N, 3H) +=
                            TensorView d_h,   // (N, H)  +=
                            StepMask mask = {});

    // One step from a raw input (computes gi into cache.gi, then forward_projected).
    void forward(ConstTensorView x,    // (N, I)
                 ConstTensorView h,    // (N, H)
                 TensorView h_new,     // (N, H) out
                 GRUStepCache& cache,  // out
                 StepMask mask = {},
                 WeightTRows wih_t = {},  // W_ihᵀ, W_hhᵀ of this batch (blas.h) or none
                 WeightTRows whh_t = {}) const;
    // d_x += ∂/∂x;  d_h += ∂/∂h;  grad += all four parameter gradients.
    void backward(ConstTensorView d_h_new,  // (N, H)
                  ConstTensorView x,        // (N, I)
                  ConstTensorView h,        // (N, H)
                  const GRUStepCache& cache,
                  TensorView d_x,  // (N, I) +=; empty view = not needed
                  TensorView d_h,  // (N, H) +=
                  StepMask mask = {});
    // The data half of backward, for callers that batch the weight gradients over many steps
    // (the decoder: K = T·N instead of N). WRITES the step's pre-activation gradients d_gi and
    // d_gh and ACCUMULATES d_x += d_gi W_ih, d_h += ∂/∂h (the same operations, in the same
    // order, as backward). grad is untouched: the caller later adds
    // grad.weight_ih += Σ d_giᵀ x, grad.weight_hh += Σ d_ghᵀ h and the bias row sums
    // (cell_project_input_backward / cell_add_recurrent_backward with an empty d_x / d_h).
    // layer_norm: d_gi / d_gh are the gradients of the bare products x W_ihᵀ / h W_hhᵀ, and the
    // gradients that need the normalised ones (the gains and the biases) are accumulated into
    // grad here, per step (the helpers leave the biases out with LN).
    void backward_data(ConstTensorView d_h_new,  // (N, H)
                       ConstTensorView h,        // (N, H)
                       const GRUStepCache& cache,
                       TensorView d_gi,  // (N, 3H) written
                       TensorView d_gh,  // (N, 3H) written
                       TensorView d_x,   // (N, I)  +=; empty view = not needed
                       TensorView d_h,   // (N, H)  +=
                       StepMask mask = {});

    Config cfg;
    RNNCellParams params;
    RNNCellParams grad;

private:
    Tensor d_gi_{Shape{0}},
        d_gh_{Shape{0}};  // (N, 3H) scratch of backward; not state (reused between calls)
};

}  // namespace nazar
