// Global gradient-norm clipping, torch.nn.utils.clip_grad_norm_ (1.13) semantics:
//
//   norm  = ‖(g_1, …, g_P)‖₂ over every gradient of the ParamList (one vector)
//   coef  = max_norm / (norm + 1e-6), computed in float32;  if coef < 1: g_i ← g_i · coef
//
// The norm is returned (before clipping), as PyTorch does. A non-finite norm (inf/NaN in some
// gradient, or overflow) is returned as is and the gradients are left untouched: PyTorch would
// multiply them by NaN; here the trainer sees the value and decides (skip the step, stop).
// Squares are summed in double over fixed blocks, then in block order: the result does not
// depend on the thread count.
#pragma once

#include "nazar/core/params.h"

namespace nazar {

// Total L2 norm of all gradients (float32, like PyTorch's returned tensor).
float grad_norm(const ParamList& params);

// Clips in place when the norm exceeds max_norm (> 0); returns the norm before clipping.
float clip_grad_norm(const ParamList& params, float max_norm);

}  // namespace nazar
