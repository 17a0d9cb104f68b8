// Named parameters and their gradients, walked together (optimizers, checkpoints, gradcheck).
//
// Every layer keeps `params` and `grad` as two instances of one struct with a visit() method:
//
//   struct LinearParams {
//       Tensor weight;  // (out, in)
//       Tensor bias;    // (out)
//       template <class F> void visit(F&& f) { f("weight", weight); f("bias", bias); }
//   };
//
// The names passed to f are the PyTorch state_dict names relative to the module
// (docs/design.md §5), so a model prefixes them ("encoder.rnn." + "weight_ih_l0") and gets the
// weight-naming contract for free. collect_params() zips a params/grad pair into a ParamList.
// An empty (numel 0) tensor is an absent parameter (e.g. a disabled bias) and is skipped.
//
// ParamMode, chosen by whoever builds a layer or model (default training):
//   training   every parameter allocated and initialised, with a gradient tensor of its shape.
//   inference  no gradients (grad tensors stay empty, ParamRef::grad is null) and no values:
//              each parameter is a Tensor::reserved placeholder of its shape until the model
//              loader (models/model_file.h) gives it the file's values or a packed form. The
//              constructor draws nothing from the rng. Reading an unfilled placeholder faults.
#pragma once

#include "nazar/core/tensor.h"

#include <string>
#include <vector>

namespace nazar {

enum class ParamMode { training, inference };

// A parameter of `shape` for `mode`: zero-filled memory (training) or a placeholder (inference).
inline Tensor make_param(Shape shape, ParamMode mode) {
    return mode == ParamMode::training ? Tensor(shape) : Tensor::reserved(shape);
}
// A gradient of `shape` for `mode`: zero-filled (training) or absent, (0)-shaped (inference).
inline Tensor make_grad(Shape shape, ParamMode mode) {
    return mode == ParamMode::training ? Tensor(shape) : Tensor(Shape{0});
}

// A gradient tensor for ParamRef: null when absent (an inference model's, ParamMode).
inline Tensor* grad_or_null(Tensor& g) {
    return g.numel() == 0 ? nullptr : &g;
}

struct ParamRef {
    std::string name;  // full state_dict name, e.g. "decoder.rnn.weight_hh_l0"
    Tensor* value;
    Tensor* grad;  // same shape as value; null in an inference model (ParamMode::inference)
};
using ParamList = std::vector<ParamRef>;

template <class P>
void collect_params(P& params, P& grad, const std::string& prefix, ParamList& out) {
    std::vector<std::pair<std::string, Tensor*>> values;
    std::vector<Tensor*> grads;
    params.visit(
        [&](const std::string& name, Tensor& t) { values.emplace_back(prefix + name, &t); });
    grad.visit([&](const std::string&, Tensor& t) { grads.push_back(&t); });
    NZ_CHECK(values.size() == grads.size(), "collect_params: {} values but {} grads under '{}'",
             values.size(), grads.size(), prefix);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (values[i].second->numel() == 0) continue;
        // an empty gradient: the layer was built for inference (ParamMode), none is made here
        Tensor* g = grad_or_null(*grads[i]);
        NZ_CHECK(!g || g->shape() == values[i].second->shape(),
                 "collect_params: '{}' has shape {} but its gradient {}", values[i].first,
                 values[i].second->shape().str(), g ? g->shape().str() : "");
        out.push_back({values[i].first, values[i].second, g});
    }
}

inline void zero_grads(const ParamList& params) {
    for (const auto& p : params) {
        NZ_CHECK(p.grad, "parameter '{}' has no gradient: the model was built for inference",
                 p.name);
        p.grad->zero();
    }
}

inline int64_t count_params(const ParamList& params) {
    int64_t n = 0;
    for (const auto& p : params) n += p.value->numel();
    return n;
}

}  // namespace nazar
