// Shared by the files of the extension nazar._nazar (docs/python.md): numpy views of tensors and
// the registration functions of each part. Only the library's public API is used; the Python
// side (python/nazar/*.py) wraps what these functions return in small picklable classes.
#pragma once

#include "nazar/core/tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace nazar::py {

namespace pb = pybind11;

// A float32 array over `t`'s buffer, which the array then owns (no copy): C-contiguous,
// shape = t's shape.
pb::array_t<float> to_numpy(Tensor&& t);
// A copy of a view (the view's memory stays with its owner).
pb::array_t<float> copy_to_numpy(ConstTensorView v);

void init_translate(pb::module_& m);
void init_model(pb::module_& m);
void init_train(pb::module_& m);
void init_eval(pb::module_& m);

}  // namespace nazar::py
