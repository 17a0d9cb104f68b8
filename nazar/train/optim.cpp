#include "nazar/train/optim.h"

#include "nazar/train/metadata.h"

#include "nazar/core/text_limits.h"
#include "nazar/core/threads.h"

#include <fmt/format.h>
#include <cmath>
#include <cstdlib>

namespace nazar {

namespace {

constexpr int64_t kBlock = 1 << 14;  // elements per work item: big enough to amortise dispatch
const std::string kPrefix = "optim.";

// The element-wise updates. Operation order follows the ATen CPU kernels PyTorch runs:
// add(x, y, alpha) = x + alpha·y;  addcmul(x, a, b, value) = x + value·a·b;
// addcdiv(x, a, b, value) = x + value·a / b. All scalars arrive already cast to float.

void sgd_block(float* p, const float* g, float* buf, int64_t n, float lr, float mu,
               float one_minus_tau, float wd, bool nesterov, bool first) {
    for (int64_t i = 0; i < n; ++i) {
        float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
        if (buf) {
            buf[i] = first ? d : buf[i] * mu + one_minus_tau * d;
            d = nesterov ? d + mu * buf[i] : buf[i];
        }
        p[i] = p[i] + (-lr) * d;
    }
}

struct AdamScalars {
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float wd;             // Adam: L2 into the gradient (0 for AdamW)
    float decay;          // AdamW: 1 − lr·λ (1 for Adam)
    float neg_step_size;  // −lr / (1 − β1^t)
    float bc2_sqrt;       // √(1 − β2^t)
    float eps;
};

// Branches hoisted into template parameters so that each variant is one straight vector loop.
template <bool kDecoupled, bool kL2>
void adam_loop(float* __restrict p, const float* __restrict g, float* __restrict m,
               float* __restrict v, int64_t n, const AdamScalars s) {
    for (int64_t i = 0; i < n; ++i) {
        float pi = p[i];
        if constexpr (kDecoupled) pi = pi * s.decay;
        const float gi = kL2 ? g[i] + s.wd * pi : g[i];
        const float mi = m[i] * s.beta1 + s.one_minus_beta1 * gi;
        const float vi = v[i] * s.beta2 + s.one_minus_beta2 * gi * gi;
        const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi + s.neg_step_size * mi / denom;
    }
}

void adam_block(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s) {
    const bool decoupled = s.decay != 1.0f, l2 = s.wd != 0.0f;
    if (decoupled)
        adam_loop<true, false>(p, g, m, v, n, s);
    else if (l2)
        adam_loop<false, true>(p, g, m, v, n, s);
    else
        adam_loop<false, false>(p, g, m, v, n, s);
}

}  // namespace

const char* optim_kind_name(OptimKind kind) {
    switch (kind) {
        case OptimKind::sgd:
            return "sgd";
        case OptimKind::adam:
            return "adam";
        case OptimKind::adamw:
            return "adamw";
    }
    return "?";
}

OptimKind parse_optim_kind(const std::string& name) {
    if (name == "sgd") return OptimKind::sgd;
    if (name == "adam") return OptimKind::adam;
    if (name == "adamw") return OptimKind::adamw;
    throw UsageError(
        fmt::format("unknown optimizer '{}' (choices: sgd, adam, adamw)", excerpt(name)));
}

Optimizer::Optimizer(OptimKind kind, ParamList params, double lr)
    : kind_(kind), params_(std::move(params)) {
    for (const auto& p : params_) {
        NZ_CHECK(p.value != nullptr && p.grad != nullptr,
                 "optimizer: parameter '{}' has no value or grad", p.name);
        NZ_CHECK(p.value->shape() == p.grad->shape(), "optimizer: '{}' value {} but grad {}",
                 p.name, p.value->shape().str(), p.grad->shape().str());
    }
    set_lr(lr);
    make_blocks();
}

Optimizer Optimizer::sgd(ParamList params, SgdOptions opt) {
    NZ_CHECK_USAGE(opt.momentum >= 0, "sgd: momentum must be >= 0, got {}", opt.momentum);
    NZ_CHECK_USAGE(opt.weight_decay >= 0, "sgd: weight_decay must be >= 0, got {}",
                   opt.weight_decay);
    NZ_CHECK_USAGE(
        !opt.nesterov || (opt.momentum > 0 && opt.dampening == 0),
        "sgd: nesterov needs momentum > 0 and dampening = 0, got momentum {} dampening {}",
        opt.momentum, opt.dampening);
    Optimizer o(OptimKind::sgd, std::move(params), opt.lr);
    o.sgd_ = opt;
    if (opt.momentum != 0) o.buffers_.push_back({"momentum_buffer", {}});
    for (auto& b : o.buffers_)
        for (const auto& p : o.params_) b.t.emplace_back(p.value->shape());
    return o;
}

Optimizer Optimizer::adam(ParamList params, AdamOptions opt) {
    NZ_CHECK_USAGE(0 <= opt.beta1 && opt.beta1 < 1 && 0 <= opt.beta2 && opt.beta2 < 1,
                   "adam: betas must be in [0, 1), got ({}, {})", opt.beta1, opt.beta2);
    NZ_CHECK_USAGE(opt.eps >= 0, "adam: eps must be >= 0, got {}", opt.eps);
    NZ_CHECK_USAGE(opt.weight_decay >= 0, "adam: weight_decay must be >= 0, got {}",
                   opt.weight_decay);
    Optimizer o(OptimKind::adam, std::move(params), opt.lr);
    o.adam_ = opt;
    o.buffers_.push_back({"exp_avg", {}});
    o.buffers_.push_back({"exp_avg_sq", {}});
    for (auto& b : o.buffers_)
        for (const auto& p : o.params_) b.t.emplace_back(p.value->shape());
    return o;
}

Optimizer Optimizer::adamw(ParamList params, AdamOptions opt) {
    Optimizer o = adam(std::move(params), opt);
    o.kind_ = OptimKind::adamw;
    return o;
}

void Optimizer::set_lr(double lr) {
    NZ_CHECK(std::isfinite(lr) && lr >= 0, "optimizer: lr must be finite and >= 0, got {}", lr);
    lr_ = lr;
}

void Optimizer::make_blocks() {
    blocks_.clear();
    for (int i = 0; i < static_cast<int>(params_.size()); ++i) {
        const int64_t n = params_[i].value->numel();
        for (int64_t b = 0; b < n; b += kBlock) blocks_.push_back({i, b, std::min(n, b + kBlock)});
    }
}

void Optimizer::step() {
    for (const auto& p : params_)
        NZ_CHECK(p.value->shape() == p.grad->shape(), "optimizer: '{}' value {} but grad {}",
                 p.name, p.value->shape().str(), p.grad->shape().str());
    ++step_;
    if (kind_ == OptimKind::sgd)
        step_sgd();
    else
        step_adam();
}

void Optimizer::step_sgd() {
    const float lr = static_cast<float>(lr_), mu = static_cast<float>(sgd_.momentum);
    const float one_minus_tau = static_cast<float>(1.0 - sgd_.dampening),
                wd = static_cast<float>(sgd_.weight_decay);
    const bool first = step_ == 1, nesterov = sgd_.nesterov;
    std::vector<Tensor>* bufs = buffers_.empty() ? nullptr : &buffers_[0].t;
    parallel_for(static_cast<int64_t>(blocks_.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) {
            const Block& bl = blocks_[k];
            const ParamRef& p = params_[bl.param];
            float* buf = bufs ? (*bufs)[bl.param].data() + bl.begin : nullptr;
            sgd_block(p.value->data() + bl.begin, p.grad->data() + bl.begin, buf, bl.end - bl.begin,
                      lr, mu, one_minus_tau, wd, nesterov, first);
        }
    });
}

void Optimizer::step_adam() {
    const double t = static_cast<double>(step_);
    const AdamOptions& o = adam_;
    const bool decoupled = kind_ == OptimKind::adamw;
    AdamScalars s;
    s.beta1 = static_cast<float>(o.beta1);
    s.one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
    s.beta2 = static_cast<float>(o.beta2);
    s.one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
    s.wd = decoupled ? 0.0f : static_cast<float>(o.weight_decay);
    s.decay = decoupled ? static_cast<float>(1.0 - lr_ * o.weight_decay) : 1.0f;
    s.neg_step_size = static_cast<float>(-(lr_ / (1.0 - std::pow(o.beta1, t))));
    s.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, t)));
    s.eps = static_cast<float>(o.eps);
    std::vector<Tensor>& m = buffers_[0].t;
    std::vector<Tensor>& v = buffers_[1].t;
    parallel_for(static_cast<int64_t>(blocks_.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) {
            const Block& bl = blocks_[k];
            const ParamRef& p = params_[bl.param];
            adam_block(p.value->data() + bl.begin, p.grad->data() + bl.begin,
                       m[bl.param].data() + bl.begin, v[bl.param].data() + bl.begin,
                       bl.end - bl.begin, s);
        }
    });
}

void Optimizer::save_state(SafeTensors& out) const {
    for (const auto& b : buffers_)
        for (std::size_t i = 0; i < params_.size(); ++i)
            out.set(kPrefix + b.name + "." + params_[i].name, b.t[i]);
    out.metadata[kPrefix + "kind"] = optim_kind_name(kind_);
    out.metadata[kPrefix + "step"] = fmt::format("{}", step_);
    out.metadata[kPrefix + "lr"] = fmt::format("{}", lr_);  // shortest round-trip form
}

void Optimizer::load_state(const SafeTensors& in) {
    const std::string& kind = in.meta(kPrefix + "kind");
    NZ_CHECK_INPUT(kind == optim_kind_name(kind_),
                   "{}: optimizer state is '{}', this run uses '{}'", in.source, kind,
                   optim_kind_name(kind_));
    const double step = meta_double(in, kPrefix + "step");
    NZ_CHECK_INPUT(step >= 0 && step <= 9007199254740992.0 && step == std::floor(step),
                   "{}: optim.step = {} is not a step count in [0, 2^53]", in.source, step);
    const double lr = meta_double(in, kPrefix + "lr");
    NZ_CHECK_INPUT(std::isfinite(lr) && lr >= 0, "{}: optim.lr = {} is not a learning rate",
                   in.source, lr);
    // Every "optim." tensor must be one of ours (catches renamed params and mismatched options).
    std::size_t expected = 0;
    for (const auto& b : buffers_) expected += b.t.size();
    std::size_t found = 0;
    for (const auto& [name, t] : in.tensors()) {
        if (name.rfind(kPrefix, 0) != 0) continue;
        bool ours = false;
        for (const auto& b : buffers_)
            for (const auto& p : params_) ours = ours || name == kPrefix + b.name + "." + p.name;
        NZ_CHECK_INPUT(
            ours,
            "{}: optimizer state tensor '{}' matches no parameter/buffer of this {} optimizer",
            in.source, name, optim_kind_name(kind_));
        ++found;
    }
    NZ_CHECK_INPUT(found == expected, "{}: {} optimizer state tensors, expected {}", in.source,
                   found, expected);
    // Validate everything before changing anything.
    for (const auto& b : buffers_)
        for (std::size_t i = 0; i < params_.size(); ++i)
            in.get(kPrefix + b.name + "." + params_[i].name, b.t[i].shape());
    for (auto& b : buffers_)
        for (std::size_t i = 0; i < params_.size(); ++i)
            b.t[i].copy_from(in.get(kPrefix + b.name + "." + params_[i].name));
    step_ = static_cast<int64_t>(step);
    set_lr(lr);
}

}  // namespace nazar
