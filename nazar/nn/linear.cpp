// Linear layer: y = x Wᵀ + b (see linear.h).
#include "nazar/nn/linear.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/nn/absent.h"

#include <cmath>

namespace nazar {

Linear::Linear(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    NZ_CHECK(cfg.in_features > 0 && cfg.out_features > 0,
             "Linear: sizes must be positive, got in={} out={}", cfg.in_features, cfg.out_features);
    const float bound = 1.0f / std::sqrt(static_cast<float>(cfg.in_features));
    const bool init = mode == ParamMode::training;
    params.weight = make_param({cfg.out_features, cfg.in_features}, mode);
    if (init) rng.fill_uniform(params.weight, -bound, bound);
    grad.weight = make_grad({cfg.out_features, cfg.in_features}, mode);
    if (cfg.bias) {
        params.bias = make_param({cfg.out_features}, mode);
        if (init) rng.fill_uniform(params.bias, -bound, bound);
        grad.bias = make_grad({cfg.out_features}, mode);
    } else {
        params.bias = Tensor({0});  // absent: numel 0, skipped by collect_params
        grad.bias = Tensor({0});
    }
}

void Linear::forward(ConstTensorView x, TensorView y) const {
    NZ_CHECK(x.ndim() >= 1 && x.shape()[-1] == cfg.in_features,
             "Linear::forward: x {} needs last dim {}", x.shape().str(), cfg.in_features);
    const ConstTensorView xm = x.as_matrix();
    const TensorView ym = y.as_matrix();
    NZ_CHECK(ym.dim(1) == cfg.out_features && ym.dim(0) == xm.dim(0),
             "Linear::forward: y {} does not match x {} and out_features {}", y.shape().str(),
             x.shape().str(), cfg.out_features);
    if (xm.dim(0) == 0) return;
    // y = x Wᵀ (+ b): bias rows first, then one GEMM with beta = 1.
    if (!absent(params.bias)) {
        for (int r = 0; r < ym.dim(0); ++r) ym.select(r).copy_from(params.bias);
        gemm(xm, false, params.weight, true, ym, 1.0f, 1.0f);
    } else {
        gemm(xm, false, params.weight, true, ym, 1.0f, 0.0f);
    }
}

void Linear::backward(ConstTensorView d_y, ConstTensorView x, TensorView d_x) {
    const ConstTensorView xm = x.as_matrix(), dym = d_y.as_matrix();
    NZ_CHECK(
        xm.dim(1) == cfg.in_features && dym.dim(1) == cfg.out_features && xm.dim(0) == dym.dim(0),
        "Linear::backward: d_y {} and x {} do not match Linear({} -> {})", d_y.shape().str(),
        x.shape().str(), cfg.in_features, cfg.out_features);
    if (xm.dim(0) == 0) return;
    // y = x Wᵀ + b   =>   d_W += d_yᵀ x;   d_b += Σ_rows d_y;   d_x += d_y W
    gemm(dym, true, xm, false, grad.weight, 1.0f, 1.0f);
    if (!absent(params.bias)) kernels::sum_rows_into(dym, grad.bias);
    if (!absent(d_x)) {
        NZ_CHECK(d_x.numel() == x.numel() && d_x.shape()[-1] == cfg.in_features,
                 "Linear::backward: d_x {} vs x {}", d_x.shape().str(), x.shape().str());
        gemm(dym, false, params.weight, false, d_x.as_matrix(), 1.0f, 1.0f);
    }
}

}  // namespace nazar
