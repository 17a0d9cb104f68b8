// Layer normalisation of gate blocks (Ba, Kiros & Hinton 2016) for the layer-normalised
// recurrent cells (gru_cell.h, lstm_cell.h; docs/spec.md §2.3, docs/derivations/gru.md):
// a row of a product x Wᵀ (G·H columns) is G gate blocks of H units, and each block is
// normalised on its own:
//
//   μ = (1/H) Σ_j a_j        σ² = (1/H) Σ_j (a_j − μ)²   (biased, as torch's layer_norm)
//   â = (a − μ) · rstd,  rstd = 1 / sqrt(σ² + ε),  ε = 1e-5
//   y = γ ⊙ â + β             γ: (G·H) gains, β: (G·H) the cell's bias (absent = 0)
//
// Backward of one block, g = d_y ⊙ γ (means over the block's H units):
//   d_a = rstd · (g − mean(g) − â ⊙ mean(g ⊙ â));   d_γ += d_y ⊙ â;   d_β += d_y
// Both work IN PLACE on the rows (the product's buffer becomes y; d_y becomes d_a).
#pragma once

#include "nazar/core/tensor.h"

namespace nazar::layer_norm {

inline constexpr float kEps = 1e-5f;  // torch.nn.functional.layer_norm's default

// a: in x Wᵀ, out γ ⊙ â + β, over M rows of G blocks of H. xhat and rstd are written when given
// (what backward reads); empty views = not kept (decoding).
void blocks_forward(TensorView a,           // (M, G·H)  in place
                    int H,                  // block size
                    ConstTensorView gamma,  // (G·H)
                    ConstTensorView beta,   // (G·H) or empty = no shift
                    TensorView xhat = {},   // (M, G·H)  out: â, or empty
                    TensorView rstd = {});  // (M, G)    out: 1/sqrt(σ² + ε), or empty

// d: in d_y, out d_a (WRITES, in place). ACCUMULATES d_gamma += Σ_rows d_y ⊙ â and
// d_beta += Σ_rows d_y (d_beta empty: no shift, or its gradient is not wanted).
void blocks_backward(TensorView d,           // (M, G·H)  in place
                     int H,                  // block size
                     ConstTensorView gamma,  // (G·H)
                     ConstTensorView xhat,   // (M, G·H)  from forward
                     ConstTensorView rstd,   // (M, G)    from forward
                     TensorView d_gamma,     // (G·H) +=
                     TensorView d_beta);     // (G·H) += or empty

}  // namespace nazar::layer_norm
