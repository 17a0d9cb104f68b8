// Finite-difference gradient checks (docs/design.md §8.2).
//
// Usage: run forward + backward once to fill the analytic gradients, then
//   check_gradients(loss, {{"x", x, d_x}, {"W", W, grad_W}}, {.eps = 1e-2, .rtol = 1e-2});
// where `loss()` re-runs the forward pass on the current values and returns Σ out ⊙ R for a
// fixed random R (dot_loss): uniform upstream gradients would hide transpose bugs.
//
// Each entry is perturbed by ±eps (central difference, truncation error O(eps²)) and the
// numeric slope is compared with the analytic one:  |num − ana| ≤ atol + rtol · max(|num|, |ana|).
// Forward passes run in float32, so the loss carries rounding noise of about 1e-7 · Σ|terms|;
// divided by 2·eps this is the floor `atol` must sit above. Each test states its tolerances.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/tensor.h"
#include "nazar/nn/gru_cell.h"  // RNNCellParams

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace nazar::test {

struct GradCheckOptions {
    double eps = 1e-2;
    double rtol = 1e-2;
    double atol = 1e-3;
    int max_entries = 0;  // > 0: check only this many entries per tensor (evenly spread)
};

struct GradTarget {
    std::string name;
    TensorView value;  // perturbed in place (restored afterwards)
    TensorView grad;   // analytic d loss / d value, same shape
};

inline double dot_loss(ConstTensorView out, ConstTensorView R) {
    double s = 0;
    for (int64_t i = 0; i < out.numel(); ++i) s += static_cast<double>(out[i]) * R[i];
    return s;
}

inline ::testing::AssertionResult check_gradients(const std::function<double()>& loss,
                                                  const std::vector<GradTarget>& targets,
                                                  GradCheckOptions opt = {}) {
    std::ostringstream bad;
    int failures = 0;
    int64_t checked = 0;
    for (const auto& t : targets) {
        if (!(t.value.shape() == t.grad.shape())) {
            return ::testing::AssertionFailure() << t.name << ": value " << t.value.shape().str()
                                                 << " vs grad " << t.grad.shape().str();
        }
        const int64_t n = t.value.numel();
        const int64_t step = (opt.max_entries > 0 && n > opt.max_entries) ? n / opt.max_entries : 1;
        for (int64_t i = 0; i < n; i += step) {
            const float orig = t.value[i];
            t.value[i] = static_cast<float>(orig + opt.eps);
            const double up = loss();
            t.value[i] = static_cast<float>(orig - opt.eps);
            const double down = loss();
            t.value[i] = orig;
            // the perturbation actually applied (float rounding of orig ± eps)
            const double h = (static_cast<double>(static_cast<float>(orig + opt.eps)) -
                              static_cast<double>(static_cast<float>(orig - opt.eps)));
            const double num = (up - down) / h;
            const double ana = t.grad[i];
            ++checked;
            if (!(std::abs(num - ana) <=
                  opt.atol + opt.rtol * std::max(std::abs(num), std::abs(ana)))) {
                if (++failures <= 12)
                    bad << "\n  " << t.name << "[" << i << "]: numeric " << num << ", analytic "
                        << ana;
            }
        }
    }
    if (failures == 0 && checked > 0) return ::testing::AssertionSuccess();
    if (checked == 0) return ::testing::AssertionFailure() << "nothing checked";
    return ::testing::AssertionFailure()
           << failures << " of " << checked << " gradient entries disagree" << bad.str();
}

// Whole-model checks (tests/grad/test_grad_models.cpp derives these tolerances): d loss / d every
// parameter of `params`, whose gradients the caller has just computed (train_step), against
// central differences of `loss`, 10 entries per tensor. The gradients are copied first: a loss
// that re-runs train_step (dropout masks fixed by re-seeding) overwrites them.
inline ::testing::AssertionResult check_model_gradients(const std::function<double()>& loss,
                                                        const ParamList& params) {
    std::vector<Tensor> grads;
    for (const auto& p : params) grads.push_back(*p.grad);
    std::vector<GradTarget> targets;
    for (std::size_t i = 0; i < params.size(); ++i)
        targets.push_back({params[i].name, *params[i].value, grads[i]});
    return check_gradients(loss, targets,
                           {.eps = 1e-2, .rtol = 3e-2, .atol = 3e-3, .max_entries = 10});
}

// The four tensors of a GRU/LSTM cell (p) and their gradients (g) as targets, and the two
// layer-norm gains when the cell has them.
inline void add_params(std::vector<GradTarget>& targets, RNNCellParams& p, RNNCellParams& g) {
    targets.push_back({"weight_ih", p.weight_ih, g.weight_ih});
    targets.push_back({"weight_hh", p.weight_hh, g.weight_hh});
    targets.push_back({"bias_ih", p.bias_ih, g.bias_ih});
    targets.push_back({"bias_hh", p.bias_hh, g.bias_hh});
    if (p.layer_norm()) {
        targets.push_back({"ln_weight_ih", p.ln_weight_ih, g.ln_weight_ih});
        targets.push_back({"ln_weight_hh", p.ln_weight_hh, g.ln_weight_hh});
    }
}

}  // namespace nazar::test
