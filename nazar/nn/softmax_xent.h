// Fused output layer + cross-entropy (docs/spec.md §7, docs/design.md §4: fused log-softmax + NLL).
//
//   z[n]    = W x[n] + b                                   logits, (V) per row
//   lp[n]   = z[n] − logsumexp(z[n])                       log-softmax (never log(softmax))
//   loss    = Σ_{n: y[n] ≠ pad} (1−ε)·(−lp[n][y[n]]) + ε·mean_v(−lp[n][v])
// The smoothed term is PyTorch's CrossEntropyLoss(label_smoothing=ε, ignore_index=pad,
// reduction='sum'). The SUM and the token count are returned; the caller divides.
//
// Rows are processed in chunks of `chunk_rows` non-pad positions (gathered), so the (N, V)
// logits never exist at once: per chunk one gemm for the logits, one fused pass computing
// log-softmax, loss and the logit gradient in place, then one gemm each for d_X and d_W.
// Shape letters: N rows (B·T target positions, flattened), H input size (d_out), V vocabulary.
//
// Gradients: forward_backward ACCUMULATES (+=) into d_X, d_W, d_b, scaled by `grad_scale`
// (pass 1/tokens when the loss is the mean; count_targets() gives tokens up front).
// Deterministic for a given thread count: per-row losses are summed in a fixed order.
#pragma once

#include "nazar/core/blas.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <span>
#include <vector>

namespace nazar {

struct SoftmaxXentOptions {
    int ignore_index = -1;         // targets equal to this (the padding id) are skipped; -1: none
    float label_smoothing = 0.0f;  // ε in [0, 1)
    int chunk_rows = 256;          // rows per chunk: bounds scratch at chunk_rows × V floats
};

struct XentStats {
    double loss = 0;      // Σ over counted rows (not divided)
    int64_t tokens = 0;   // counted rows (targets ≠ ignore_index)
    int64_t correct = 0;  // counted rows whose target logit is the row maximum (accuracy)
};

// Number of targets not equal to ignore_index (checks nothing else).
int64_t count_targets(std::span<const int> targets, int ignore_index);

class SoftmaxXent {
public:
    explicit SoftmaxXent(SoftmaxXentOptions opt = {});

    // Loss only (validation): no gradients.
    XentStats forward(ConstTensorView X,              // (N, H)
                      ConstTensorView W,              // (V, H)  generator.weight
                      ConstTensorView b,              // (V)     generator.bias (empty: none)
                      std::span<const int> targets);  // (N)     in [0, V) or ignore_index

    // Loss and gradients in one pass over the chunks (the logits are not kept).
    //   d z[n][v] = grad_scale · (p[n][v] − (1−ε)·[v = y[n]] − ε/V)     (0 for ignored rows)
    //   d_X += d z · W;   d_W += d zᵀ · X;   d_b += Σ_n d z[n]
    XentStats forward_backward(ConstTensorView X,             // (N, H)
                               ConstTensorView W,             // (V, H)
                               ConstTensorView b,             // (V) or empty
                               std::span<const int> targets,  // (N)
                               float grad_scale,
                               TensorView d_X,   // (N, H)  +=
                               TensorView d_W,   // (V, H)  +=
                               TensorView d_b);  // (V)     += (empty if no bias)

    const SoftmaxXentOptions& options() const { return opt_; }
    // Floats of logit scratch held now: min(chunk_rows, counted rows) × V, never N × V.
    int64_t logits_scratch() const { return logits_.numel(); }

private:
    XentStats run(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                  std::span<const int> targets, bool backward, float grad_scale, TensorView d_X,
                  TensorView d_W, TensorView d_b);

    SoftmaxXentOptions opt_;
    // Scratch reused across calls (sized on first use; no allocation in steady state).
    Tensor x_chunk_;                // (chunk, H)  gathered rows of X
    Tensor logits_;                 // (chunk, V)  logits, then d z in place
    Tensor dx_chunk_;               // (chunk, H)  d z · W before scattering into d_X
    std::vector<double> row_loss_;  // (chunk)  per-row loss, summed in row order
    std::vector<int> correct_;      // (chunk)  per-row 0/1
    std::vector<int> rows_;         // indices of counted rows
};

// Log-probabilities of one chunk of rows, for scoring and decoding:
//   out[r] = log_softmax(W x[r] + b)
// wt: Wᵀ packed for this batch (refresh_weight_t, blas.h) for the product, or none.
void output_log_probs(ConstTensorView X,  // (R, H)
                      ConstTensorView W,  // (V, H)
                      ConstTensorView b,  // (V) or empty
                      TensorView out,     // (R, V)  written
                      WeightTRows wt = {});

}  // namespace nazar
