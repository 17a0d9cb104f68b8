// The coverage recurrence and the coverage loss of a training step (attention_terms.h).
#include "nazar/models/attention_terms.h"

#include "nazar/attention/coverage.h"
#include "nazar/attention/monotonic.h"
#include "nazar/core/kernels.h"

#include <algorithm>

namespace nazar {

bool AttentionTerms::needed(const Attention& att, float coverage_weight, bool direct) {
    return att.cfg.coverage || att.cfg.monotonic || coverage_weight > 0.0f || direct;
}

TensorView AttentionTerms::direct_context(int C) {
    d_ctx_.resize({T_, B_, C});  // zeroed
    context_ = true;
    return d_ctx_.view();
}

void AttentionTerms::begin_step(const Attention& att, std::span<DecoderStepCache> steps, int t,
                                int B, int S, Rng* rng) {
    AttentionStepCache& c = steps[t].attention;
    if (att.cfg.monotonic) {
        if (t == 0)
            attn::start_previous(B, S, c.previous);
        else
            attn::advance_previous(steps[t - 1].attention, c.previous);
        c.hard = false;
        if (rng != nullptr && att.cfg.monotonic_noise > 0.0f) {
            c.noise.resize({B, S}, false);
            rng->fill_normal(c.noise, 0.0f, att.cfg.monotonic_noise);
        } else {
            c.noise.resize({0});
        }
    }
    if (!att.cfg.coverage) {
        c.coverage.resize({0});
        return;
    }
    if (t == 0)
        attn::start_coverage(B, S, c.coverage);
    else
        attn::advance_coverage(steps[t - 1].attention, c.coverage);
}

double AttentionTerms::loss_forward(const Attention& att, std::span<const DecoderStepCache> steps,
                                    std::span<const int> targets, int pad, int B, int S,
                                    float coverage_weight, float grad_scale) {
    const int T = static_cast<int>(targets.size()) / std::max(B, 1);
    NZ_CHECK(static_cast<int>(steps.size()) >= T, "attention terms: {} steps for T = {}",
             steps.size(), T);
    NZ_CHECK_USAGE(coverage_weight == 0.0f || att.cfg.coverage,
                   "coverage_loss_weight {} needs a coverage model (coverage: true)",
                   coverage_weight);
    T_ = T;
    B_ = B;
    S_ = S;
    coverage_ = att.cfg.coverage;
    monotonic_ = att.cfg.monotonic;
    mocha_ = att.cfg.mocha_chunk > 0;
    context_ = false;
    d_alpha_.resize({T, B, S});  // zeroed
    d_cov_.resize({T, B, S});
    carry_.resize({B, S});
    step_alpha_.resize({B, S}, false);
    step_carry_.resize({B, S}, false);
    if (coverage_weight == 0.0f) return 0.0;
    // L = λ Σ min(α, cov)  =>  d α = λ [α < cov],  d cov = λ [α >= cov]  (real targets only)
    const float g = coverage_weight * grad_scale;
    double loss = 0.0;
    for (int t = 0; t < T; ++t) {
        const AttentionStepCache& c = steps[t].attention;
        NZ_CHECK_SHAPE(c.coverage, {B, S});
        const int W = c.weights.dim(1);
        for (int b = 0; b < B; ++b) {
            if (targets[static_cast<std::size_t>(t) * B + b] == pad) continue;
            const float* cov = c.coverage.data() + int64_t{b} * S;
            const float* wt = c.weights.data() + int64_t{b} * W;  // window j = position start + j
            float* da = d_alpha_.data() + (int64_t{t} * B + b) * S;
            float* dc = d_cov_.data() + (int64_t{t} * B + b) * S;
            double row = 0.0;
            for (int i = 0; i < S; ++i) {
                const int j = i - c.start[b];
                const float a = j >= 0 && j < c.count[b] ? wt[j] : 0.0f;
                row += std::min(a, cov[i]);
                (a < cov[i] ? da : dc)[i] = g;
            }
            loss += row;
        }
    }
    return coverage_weight * loss;
}

void AttentionTerms::before_step_backward(Attention& att, int t) {
    NZ_CHECK(t >= 0 && t < T_, "attention terms: step {} outside [0, {})", t, T_);
    // d α_t = D_t + Σ_{t'' > t} d cov_t''  (monotonic: + d α_t from step t + 1; MoChA: that one
    // joins d α after the chunkwise backward, D_t reading the weights β)
    step_alpha_.copy_from(d_alpha_.select(t));
    if (!mocha_) kernels::axpy(step_alpha_.numel(), 1.0f, carry_.data(), step_alpha_.data());
    step_carry_.zero();
    extra_.d_weights = step_alpha_.view();
    extra_.d_alpha = mocha_ ? ConstTensorView(carry_) : ConstTensorView();
    extra_.d_coverage = coverage_ ? step_carry_.view() : TensorView();
    extra_.d_previous = monotonic_ ? step_carry_.view() : TensorView();
    extra_.d_context = context_ ? ConstTensorView(d_ctx_.select(t)) : ConstTensorView();
    att.extra = &extra_;
}

void AttentionTerms::after_step_backward(Attention& att, int t) {
    att.extra = nullptr;
    if (monotonic_) {  // the step before reads d α_{t−1} alone
        carry_.copy_from(step_carry_);
        return;
    }
    // carry += d cov_t (score) + D^cov_t (loss)
    kernels::axpy(carry_.numel(), 1.0f, step_carry_.data(), carry_.data());
    kernels::axpy(carry_.numel(), 1.0f, d_cov_.select(t).data(), carry_.data());
}

}  // namespace nazar
