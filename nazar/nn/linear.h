// Linear (fully connected) layer, PyTorch's nn.Linear layout:   y = x Wᵀ + b
//
//   weight (out, in), bias (out) or absent (empty tensor) when Config.bias is false.
//   x may be (N, in) or any (..., in) such as (B, T, in): leading dimensions are collapsed
//   (as_matrix), so one GEMM serves every position of a batch.
// Init as PyTorch: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform(a=√5)).
//
// Gradients: backward ACCUMULATES (+=) into d_x and into `grad`. The caller zeroes them once
// per batch.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

namespace nazar {

struct LinearParams {
    Tensor weight{Shape{0}};  // (out, in)
    Tensor bias{Shape{0}};    // (out), or empty when the layer has no bias

    template <class F>
    void visit(F&& f) {
        f("weight", weight);
        f("bias", bias);  // empty = absent; collect_params skips it
    }
};

class Linear {
public:
    struct Config {
        int in_features = 0;
        int out_features = 0;
        bool bias = true;
    };

    Linear() = default;
    // U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; inference: placeholders, no gradients
    // and no draws (core/params.h).
    Linear(Config cfg, Rng& rng, ParamMode mode = ParamMode::training);

    // y = x Wᵀ + b. One GEMM over all rows.
    void forward(ConstTensorView x,    // (N, in)  or (..., in)
                 TensorView y) const;  // (N, out) or (..., out), same leading dims; overwritten

    // d_x += d_y W;  grad.weight += d_yᵀ x;  grad.bias += Σ_rows d_y.
    void backward(ConstTensorView d_y,  // (N, out) or (..., out)
                  ConstTensorView x,    // (N, in)  same tensor forward saw
                  TensorView d_x);      // (N, in)  +=; pass an empty view when not needed

    Config cfg;
    LinearParams params;
    LinearParams grad;  // same shapes as params, zero after construction
};

}  // namespace nazar
