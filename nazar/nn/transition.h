// Deep transition (Barone et al. 2017, "Deep Architectures for Neural Machine Translation";
// Nematus' and Marian's transition depth): a recurrent layer whose step is a chain of D GRU
// cells, the first reading the input, the D − 1 others (the transitions) reading only the state
// the previous one left, so the state goes through D nonlinear updates between two inputs
// (docs/spec.md §2.4). Transition j = 1 … D − 1 of a step, h⁰ = the layer cell's new state:
//
//   g  = h^{j−1} W_jᵀ + b_hh,j       (N, 3H) = [g_r | g_z | g_n]  (layer_norm: LN(h W_jᵀ; γ_j) +
//   b_hh,j) r  = σ(b_ir,j + g_r)    z = σ(b_iz,j + g_z)    n = tanh(b_in,j + r ⊙ g_n) h^j = (1 − z)
//   ⊙ n + z ⊙ h^{j−1}
//
// which is a torch.nn.GRUCell step with a zero-width input (bias_ih,j stands where W_ih x + b_ih
// would), run by the same fused gate kernel (gru::gates_forward). The step's new state is
// h^{D−1}: it is the layer's output at the position and the state the next step starts from.
// Parameters per transition (torch names relative to the RNN, after its cells' names):
//   weight_hh_l{k}[_reverse]_t{j} (3H, H), bias_ih_…_t{j}, bias_hh_…_t{j} (3H),
//   ln_weight_hh_…_t{j} (3H, layer_norm only; γ initialised to 1)
// Init as every GRU tensor: U(−1/sqrt(H), 1/sqrt(H)).
//
// The helpers run the transitions of one step's n rows for RNN (nn/rnn.cpp): forward keeping
// what backward needs (the states each transition started from, the gates, g_n, LN's â and
// rstd, in packed rows [o, o + n) of (N, ·) buffers), forward without them (inference), and
// backward. Gradients ACCUMULATE (+=).
#pragma once

#include "nazar/core/blas.h"
#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#include <string>
#include <vector>

namespace nazar {

struct TransitionParams {
    Tensor weight_hh{Shape{0}};     // (3H, H)
    Tensor bias_ih{Shape{0}};       // (3H), empty when the cells have no bias
    Tensor bias_hh{Shape{0}};       // (3H), empty when the cells have no bias
    Tensor ln_weight_hh{Shape{0}};  // (3H) LN gains γ_j; empty without layer normalisation

    bool layer_norm() const { return ln_weight_hh.numel() > 0; }

    template <class F>
    void visit(F&& f, const std::string& suffix) {  // suffix: "_l{k}[_reverse]_t{j}"
        f("weight_hh" + suffix, weight_hh);
        f("bias_ih" + suffix, bias_ih);
        f("bias_hh" + suffix, bias_hh);
        f("ln_weight_hh" + suffix, ln_weight_hh);  // absent (skipped) without LN
    }
};

// As make_rnn_cell_params (gru_cell.h): values ~ U(−1/sqrt(H), 1/sqrt(H)) from rng in visit
// order, zeros when rng is null (a gradient), placeholders / absent for ParamMode::inference;
// layer_norm adds γ = 1 after the draws.
TransitionParams make_transition_params(int hidden_size, bool bias, Rng* rng, ParamMode mode,
                                        bool layer_norm);

// What one layer-direction's transitions keep for backward, [j − 1] for transition j, in the
// RNN's packed rows (N in all).
struct TransitionCache {
    std::vector<Tensor> h;  // [D − 1] (N, H)   the state transition j started from (h^{j−1})
    std::vector<Tensor> gates;   // [D − 1] (N, 3H)  r, z, n
    std::vector<Tensor> gh_n;    // [D − 1] (N, H)   g_n (before r multiplies it)
    std::vector<Tensor> ln_h;    // [D − 1] (N, 3H)  layer_norm: â of h W_jᵀ
    std::vector<Tensor> rstd_h;  // [D − 1] (N, 3)   layer_norm: its 1/sqrt(σ² + ε)
    Tensor out{Shape{0}};        // (N, H)           h^{D−1}, the step's new states
    Tensor bias_rows{Shape{0}};  // ((D − 1)·B, 3H)  b_ih,j on every row (the gate kernel's gi)
    std::vector<WeightT> whh_t;  // [D − 1] W_jᵀ for this batch (blas.h), or empty
};

namespace transition {

// Sizes the cache for N packed rows of batches of at most B rows and fills the bias rows and
// the transposed weights (when B > kSmallGemmRows).
void prepare(const std::vector<TransitionParams>& P, int64_t N, int B, int H, TransitionCache& tc);

// Rows [o, o + n): tc.h[0] holds h⁰ on entry (the caller's cell wrote it there); on exit
// tc.out holds h^{D−1}, and every transition's values are kept.
void forward(const std::vector<TransitionParams>& P, int H, int64_t o, int n, TransitionCache& tc);

// Inference: h (n, H) holds h⁰ on entry, h^{D−1} on exit (in place); gates (n, 3H) and gh_n
// (n, H) are scratch; tc from prepare with N = 0 (the bias rows and Wᵀ only). The same products
// and kernels on the same rows as forward (the same bits).
void infer(const std::vector<TransitionParams>& P, int H, TensorView h, TensorView gates,
           TensorView gh_n, const TransitionCache& tc);

// Rows [o, o + n): d (n, H) holds ∂L/∂h^{D−1} on entry and ∂L/∂h⁰ on exit (d_tmp (n, H) and
// d_gi (n, 3H) are scratch). d_gh[j − 1] rows [o, o + n) get the gradient of h W_jᵀ (the
// weight gradient is weight_grads' one product over all rows); grad's biases and gains +=.
void backward(const std::vector<TransitionParams>& P, std::vector<TransitionParams>& grad, int H,
              int64_t o, int n, const TransitionCache& tc, std::vector<Tensor>& d_gh, TensorView d,
              TensorView d_tmp, TensorView d_gi);

// After every step's backward: grad.weight_hh,j += d_gh_jᵀ h^{j−1} over the N rows, and
// (without LN) grad.bias_hh,j += Σ_rows d_gh_j.
void weight_grads(std::vector<TransitionParams>& grad, int64_t N, const TransitionCache& tc,
                  const std::vector<Tensor>& d_gh);

}  // namespace transition

}  // namespace nazar
