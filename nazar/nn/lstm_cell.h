// LSTM cell with PyTorch's exact equations, gate order (i, f, g, o) and parameter layout
// (torch.nn.LSTMCell / torch.nn.LSTM, Hochreiter & Schmidhuber 1997 with forget gate):
//
//   a  = W_ih x + b_ih + W_hh h + b_hh      (N, 4H) = [a_i | a_f | a_g | a_o]
//   i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)
//   c' = f ⊙ c + i ⊙ g        h' = o ⊙ tanh(c')
//
// As GRUCell (gru_cell.h, which defines RNNCellParams and StepMask): step from a precomputed
// projection gi = W_ih x + b_ih (the RNN's one GEMM for all steps) or from a raw input x; the
// gate math is one fused pass (lstm::gates_forward / gates_backward); per-step caches are the
// caller's; masked rows keep (h, c) and get no gate gradient.
// Init as PyTorch: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H)).
// Layer normalisation (Config::layer_norm; docs/spec.md §2.3, as the GRU's in gru_cell.h): each
// product normalised per gate block before its bias,
//   a = LN(x W_ihᵀ; γ_ih) + b_ih + LN(h W_hhᵀ; γ_hh) + b_hh
// (c' is not normalised). The affine helpers then compute the bare products.
//
// Gradients: backward ACCUMULATES (+=) into every d_* argument and into `grad`, except the
// raw kernels in namespace lstm, which WRITE d_gates (documented there).
// Math: docs/derivations/lstm.md.
#pragma once

#include "nazar/nn/gru_cell.h"

namespace nazar {

// Written by forward, read by backward; one per step, owned by the caller (resized by forward).
struct LSTMStepCache {
    Tensor gates{Shape{0}};   // (N, 4H)  i, f, g, o after their nonlinearities
    Tensor tanh_c{Shape{0}};  // (N, H)   tanh(c')
    // layer_norm only (layer_norm.h): the normalised recurrent term, â and 1/sqrt(σ² + ε)
    Tensor gh{Shape{0}};      // (N, 4H)  LN(h W_hhᵀ; γ_hh) + b_hh, added into gates
    Tensor ln_i{Shape{0}};    // (N, 4H)  â of x W_ihᵀ (normalize_input)
    Tensor ln_h{Shape{0}};    // (N, 4H)  â of h W_hhᵀ
    Tensor rstd_i{Shape{0}};  // (N, 4)
    Tensor rstd_h{Shape{0}};  // (N, 4)
};

namespace lstm {

// Fused gate forward over N rows.
//   gates on entry: the pre-activations a (N, 4H); on exit: i, f, g, o.
//   active rows: c_new = f ⊙ c + i ⊙ g, tanh_c = tanh(c_new), h_new = o ⊙ tanh_c;
//   masked rows: c_new = c, h_new = h, tanh_c = 0 (unused).
// h_new may alias h and c_new may alias c (row by row, inputs are read before writing).
void gates_forward(ConstTensorView h,  // (N, H)
                   ConstTensorView c,  // (N, H)
                   TensorView gates,   // (N, 4H)  in: a; out: i, f, g, o
                   TensorView tanh_c,  // (N, H)   out
                   TensorView h_new,   // (N, H)   out
                   TensorView c_new,   // (N, H)   out
                   StepMask mask = {});

// Fused gate backward. WRITES d_gates (= ∂/∂a, which is both d_gi and d_gh; zero for masked
// rows) and ACCUMULATES the direct paths:
//   active rows: d_c += (d_c_new + d_h_new ⊙ o ⊙ (1 − tanh_c²)) ⊙ f
//   masked rows: d_c += d_c_new,  d_h += d_h_new
// The recurrent path d_h += d_gates W_hh and all parameter gradients are the caller's GEMMs.
void gates_backward(ConstTensorView d_h_new,  // (N, H)
                    ConstTensorView d_c_new,  // (N, H)   empty view = zero
                    ConstTensorView c,        // (N, H)   cell state forward started from
                    ConstTensorView gates,    // (N, 4H)  from forward
                    ConstTensorView tanh_c,   // (N, H)   from forward
                    TensorView d_gates,       // (N, 4H)  written
                    TensorView d_h,  // (N, H)   += (masked rows only); must not alias d_h_new
                    TensorView d_c,  // (N, H)   +=; must not alias d_c_new
                    StepMask mask = {});

}  // namespace lstm

class LSTMCell {
public:
    struct Config {
        int input_size = 0;   // I
        int hidden_size = 0;  // H
        bool bias = true;
        bool layer_norm = false;  // LN of both products (header comment); gains set to 1
    };

    LSTMCell() = default;
    // U(-1/sqrt(H), 1/sqrt(H)) for all four tensors; inference: core/params.h
    LSTMCell(Config cfg, Rng& rng, ParamMode mode = ParamMode::training);

    // gi = x W_ihᵀ + b_ih for any number of rows (M = N, or B·T for a whole sequence); with
    // layer_norm the bare product x W_ihᵀ (normalize_input finishes gi).
    void project_input(ConstTensorView x,     // (M, I) or (..., I)
                       TensorView gi) const;  // (M, 4H) or (..., 4H); overwritten
    // layer_norm: gi = LN(x W_ihᵀ; γ_ih) + b_ih in place, â and rstd saved in cache. Without
    // layer_norm: nothing.
    void normalize_input(TensorView gi,                // (N, 4H)  in: x W_ihᵀ; out: gi
                         LSTMStepCache& cache) const;  // ln_i, rstd_i out
    // d_x += d_gi W_ih;  grad.weight_ih += d_giᵀ x;  grad.bias_ih += Σ_rows d_gi.
    void project_input_backward(ConstTensorView d_gi,  // (M, 4H)
                                ConstTensorView x,     // (M, I)
                                TensorView d_x);       // (M, I) +=; empty view = not needed

    // One step from a precomputed projection.
    void forward_projected(ConstTensorView gi,    // (N, 4H)  W_ih x + b_ih
                           ConstTensorView h,     // (N, H)
                           ConstTensorView c,     // (N, H)
                           TensorView h_new,      // (N, H)   out
                           TensorView c_new,      // (N, H)   out
                           LSTMStepCache& cache,  // out
                           StepMask mask = {},
                           WeightTRows whh_t = {}) const;  // W_hhᵀ of this batch (blas.h) or none
    // d_gi += ∂/∂gi;  d_h, d_c += ∂/∂h, ∂/∂c;  grad.weight_hh += d_aᵀ h;  grad.bias_hh += Σ d_a
    // (layer_norm: gi is the normalised sum; grad.ln_weight_hh too; gi's own LN is the caller's).
    void backward_projected(ConstTensorView d_h_new,  // (N, H)
                            ConstTensorView d_c_new,  // (N, H)  empty view = zero
                            ConstTensorView h,        // (N, H)  same tensors forward saw
                            ConstTensorView c,        // (N, H)
                            const LSTMStepCache& cache,
                            TensorView d_gi,  // (N, 4H) +=
                            TensorView d_h,   // (N, H)  +=
                            TensorView d_c,   // (N, H)  +=
                            StepMask mask = {});

    // One step from a raw input x: a = x W_ihᵀ + h W_hhᵀ + b_ih + b_hh straight into cache.gates.
    void forward(ConstTensorView x,     // (N, I)
                 ConstTensorView h,     // (N, H)
                 ConstTensorView c,     // (N, H)
                 TensorView h_new,      // (N, H) out
                 TensorView c_new,      // (N, H) out
                 LSTMStepCache& cache,  // out
                 StepMask mask = {},
                 WeightTRows wih_t = {},  // W_ihᵀ, W_hhᵀ of this batch (blas.h) or none
                 WeightTRows whh_t = {}) const;
    // d_x, d_h, d_c += their gradients;  grad += all four parameter gradients.
    void backward(ConstTensorView d_h_new,  // (N, H)
                  ConstTensorView d_c_new,  // (N, H)  empty view = zero
                  ConstTensorView x,        // (N, I)
                  ConstTensorView h,        // (N, H)
                  ConstTensorView c,        // (N, H)
                  const LSTMStepCache& cache,
                  TensorView d_x,  // (N, I) +=; empty view = not needed
                  TensorView d_h,  // (N, H) +=
                  TensorView d_c,  // (N, H) +=
                  StepMask mask = {});
    // The data half of backward (see GRUCell::backward_data): WRITES d_gates (= d_gi = d_gh)
    // and ACCUMULATES d_x += d_gates W_ih, d_h += d_gates W_hh (+ masked rows' direct path),
    // d_c += ∂/∂c. grad is untouched (the caller batches the weight gradients).
    // layer_norm: the two products' gradients differ: d_gates is x W_ihᵀ's and d_gh (required)
    // h W_hhᵀ's, and the gains' and biases' gradients are accumulated into grad here.
    void backward_data(ConstTensorView d_h_new,  // (N, H)
                       ConstTensorView d_c_new,  // (N, H)  empty view = zero
                       ConstTensorView c,        // (N, H)
                       const LSTMStepCache& cache,
                       TensorView d_gates,  // (N, 4H) written
                       TensorView d_x,      // (N, I)  +=; empty view = not needed
                       TensorView d_h,      // (N, H)  +=
                       TensorView d_c,      // (N, H)  +=
                       StepMask mask = {},
                       TensorView d_gh = {});  // (N, 4H) written (layer_norm only)

    Config cfg;
    RNNCellParams params;
    RNNCellParams grad;

private:
    Tensor d_gates_{Shape{0}}, d_gh_{Shape{0}};  // (N, 4H) scratch of backward; not state
};

}  // namespace nazar
