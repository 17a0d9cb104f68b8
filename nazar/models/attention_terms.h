// The attention's part of a training step beyond the cross-entropy (TrainPass::train_step): the
// coverage recurrence's forward and backward (nazar/attention/coverage.h) and the coverage loss
// (docs/models.md "Coverage"):
//
//   forward    cov_0 = 0, cov_{t+1} = cov_t + α_t, set into each step's attention cache before
//              the step runs (begin_step); monotonic attention carries α_t itself (monotonic.h)
//   loss       L_cov = λ Σ_b Σ_{t: tgt_out[b,t] != pad} Σ_i min(α_ti, cov_ti)
//   backward   steps t = T−1 … 0: Attention::backward gets d α_t = D_t + carry_t, where D_t is the
//              loss's direct gradient and carry_t = Σ_{t'' > t} (d cov_t'' of the score + the
//              loss's d cov_t''), and writes the score's d cov_t, which joins the carry.
//              Monotonic: carry_t = d α_t from step t + 1's recursion (d α_{t'−1}, t' = t + 1)
//              only.
// All gradients are scaled by the step's grad_scale, like the cross-entropy's.
// Other terms that read α_t or c_t directly add their gradients to D_t (direct_alpha(): copy
// attention's mixture, guided alignment, models/guided_alignment.h) and to the step's d c_t
// (direct_context(): the copy gate) after loss_forward; each step's backward then gets them all
// through the one hook, Attention::extra (AttentionExtraGrad).
// The per-step decoder path only: Seq2Seq runs no split outputs while this is active.
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/core/tensor.h"
#include "nazar/models/decoder.h"

#include <cstdint>
#include <span>

namespace nazar {

class AttentionTerms {
public:
    // Whether a batch needs this at all: coverage attention or a loss weight > 0.
    // `direct`: another term (copy attention, guided alignment) will add direct gradients.
    static bool needed(const Attention& att, float coverage_weight, bool direct = false);

    // Forward, before step t's attention runs: cov_t into steps[t].attention.coverage (t = 0:
    // zeros (B, S); else advanced from step t − 1); monotonic: α_{t−1} into .previous (t = 0:
    // one-hot at 0; monotonic.h) and, given an rng (training) and cfg.monotonic_noise > 0, the
    // pre-sigmoid noise into .noise. Nothing without either.
    static void begin_step(const Attention& att, std::span<DecoderStepCache> steps, int t, int B,
                           int S, Rng* rng = nullptr);

    // After the forward of every step: the weighted coverage loss of the batch (returned) and
    // its direct gradients, times grad_scale. targets: (T, B) time-major, pad = ignored.
    double loss_forward(const Attention& att, std::span<const DecoderStepCache> steps,
                        std::span<const int> targets, int pad, int B, int S, float coverage_weight,
                        float grad_scale);

    // After loss_forward: the direct d α_t of every step (T, B, S), by source position, for other
    // terms to add into (+=).
    TensorView direct_alpha() { return d_alpha_.view(); }
    // After loss_forward: a zeroed (T, B, C) of direct d c_t, handed to each step's backward
    // (before this call: none).
    TensorView direct_context(int C);

    // Around the backward of step t (t = T−1 … 0, in that order): sets att.extra for the step,
    // then takes its d cov_t into the carry and clears att.extra.
    void before_step_backward(Attention& att, int t);
    void after_step_backward(Attention& att, int t);

private:
    int T_ = 0, B_ = 0, S_ = 0;
    bool coverage_ = false, monotonic_ = false, mocha_ = false;
    Tensor d_alpha_;     // (T, B, S)  the losses' direct d α_t
    Tensor d_cov_;       // (T, B, S)  the losses' direct d cov_t
    Tensor carry_;       // (B, S)     Σ over later steps of d cov (monotonic: the next step's)
    Tensor step_alpha_;  // (B, S)     d α_t handed to the step: d_alpha_[t] + carry_
    Tensor step_carry_;  // (B, S)     what the step hands back: d cov_t, or d α_{t−1} (monotonic)
    Tensor d_ctx_;       // (T, B, C)  the direct d c_t (copy gate), when direct_context()
    bool context_ = false;
    AttentionExtraGrad extra_;
};

}  // namespace nazar
