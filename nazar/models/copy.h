// Copy attention, the pointer-generator of See et al. 2017 (docs/spec.md §7a, docs/models.md
// "Copy attention"): a gate mixes the generator's distribution with the attention weights.
//
//   g_t     = w · [c_t ; s_t ; e_t] + b          (c_t context, s_t the decoder's TOP-layer RNN
//                                                  state after step t, e_t = Emb_tgt(y_{t-1}))
//   p_gen   = σ(g_t)
//   P(w)    = p_gen · softmax(z_t)[w] + (1 − p_gen) · Σ_{i : x̂_i = w} α_ti
//   loss_t  = −log(P(y_t) + ε),  ε = kCopyEpsilon
// z_t: the generator's logits (V); α_t: the attention weights by source position (0 outside a
// local window and at padding); x̂_i: the extended id of source token i (data/extended_vocab.h):
// its target-vocabulary id, or V + k for the k-th distinct out-of-vocabulary string of the
// sentence. The extended vocabulary of a sentence is [0, V + X_b). Every log-probability a copy
// model reports (scores, decoding) is log(P + ε), so that decoding scores equal forced scores.
// The log of the mixture is taken in the log domain (log p_gen = −softplus(−g), log(1 − p_gen) =
// −softplus(g), then log-sum-exp of the generator term, the copy term and log ε): no underflow.
//
// Parameters (names under "copy."): gate.weight (1, C + H + E) in the column order [c ; s ; e],
// gate.bias (1). Drawn after every other parameter (old models and non-copy models unchanged).
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"
#include "nazar/nn/linear.h"

#include <cstdint>
#include <string>

namespace nazar {

inline constexpr double kCopyEpsilon = 1e-12;

// One output row of the mixture.
struct CopyRow {
    const float* z = nullptr;  // (V) generator logits
    int V = 0;
    const float* alpha = nullptr;  // (S) attention weights by source position
    const int32_t* ids = nullptr;  // (S) extended ids x̂_i of the source positions
    int S = 0;                     // positions read (the sentence's length)
    float g = 0;                   // gate pre-activation g_t
    bool normalized = false;       // z are log-probabilities (log-softmax): log Σ exp z taken as 0
};

struct CopyRowGrad {
    float* d_z = nullptr;      // (V)  written: scale · d loss / d z
    float* d_alpha = nullptr;  // (S)  written: scale · d loss / d α
    float d_g = 0;             // out: scale · d loss / d g
};

// −log(P(y) + ε) of one row; with `grad`, also its gradients times `scale`. y in [0, V + K).
// With label smoothing ls > 0 (docs/spec.md §7a), the cross-entropy against (1 − ls) δ_y plus ls
// spread uniformly over the FIXED target vocabulary [0, V) (never the extended slots):
//   (1 − ls) · (−log(P(y) + ε)) + (ls / V) Σ_{v<V} −log(P(v) + ε)
double copy_row_loss(const CopyRow& r, int32_t y, float scale = 1.0f, CopyRowGrad* grad = nullptr,
                     float label_smoothing = 0.0f);
// argmax_w P(w) over the extended vocabulary (the lowest id on ties): the generator's best id
// or a source id.
int32_t copy_row_argmax(const CopyRow& r);
// log(P(w) + ε) for w in [0, V_ext): out (V_ext), V_ext >= V; p_gen returned. The words the
// source holds in double precision; the others (P = p_gen softmax(z)[w]) in float with simd.h's
// exp and log (within a few ulp of the double value: decoding's step, V words a row).
float copy_row_log_probs(const CopyRow& r, int V_ext, float* out);

// The gate: g = w · [c ; s ; e] + b for N rows.
class CopyGate {
public:
    CopyGate() = default;
    CopyGate(int C, int H, int E, Rng& rng);  // init U(-1/√(C+H+E), ·) like nn.Linear

    bool enabled() const { return C_ > 0; }
    // in (N, C + H + E) receives [c ; s ; e] (kept for backward); g (N) the pre-activations.
    void forward(ConstTensorView c, ConstTensorView s, ConstTensorView e, Tensor& in,
                 TensorView g) const;
    // d_g (N): d loss / d g. Accumulates grad.weight/bias; d_c, d_s, d_e (each (N, ·)) +=.
    void backward(ConstTensorView d_g, ConstTensorView in, TensorView d_c, TensorView d_s,
                  TensorView d_e);
    void collect(const std::string& prefix, ParamList& out);  // prefix "copy.gate."

    Linear linear;

private:
    int C_ = 0, H_ = 0, E_ = 0;
    Tensor d_in_;
};

}  // namespace nazar
