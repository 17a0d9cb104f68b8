// "Absent" tensors of the nn layers (nazar/nn/*.cpp): an optional input, state or parameter that
// was not given. Internal to nazar/nn.
#pragma once

#include "nazar/core/tensor.h"

namespace nazar {

// No data or no elements: a default-constructed Tensor/TensorView (whose shape () has numel 1,
// so empty() is false) or a (0)-shaped one.
inline bool absent(ConstTensorView v) {
    return v.data() == nullptr || v.numel() == 0;
}

}  // namespace nazar
