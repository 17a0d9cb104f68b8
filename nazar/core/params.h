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
#pragma once

#include "nazar/core/tensor.h"

#include <string>
#include <vector>

namespace nazar {

struct ParamRef {
    std::string name;  // full state_dict name, e.g. "decoder.rnn.weight_hh_l0"
    Tensor* value;
    Tensor* grad;  // same shape as value
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
        if (!(grads[i]->shape() == values[i].second->shape()))
            grads[i]->resize(values[i].second->shape());
        out.push_back({values[i].first, values[i].second, grads[i]});
    }
}

inline void zero_grads(const ParamList& params) {
    for (const auto& p : params) p.grad->zero();
}

inline int64_t count_params(const ParamList& params) {
    int64_t n = 0;
    for (const auto& p : params) n += p.value->numel();
    return n;
}

}  // namespace nazar
