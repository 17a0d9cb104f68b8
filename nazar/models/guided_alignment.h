// Guided alignment (Marian's guided alignment, cost "ce"; docs/models.md "Guided alignment",
// docs/spec.md §7 "Guided alignment"): an extra training loss pulling the attention weights α
// toward given alignments (data/alignment_file.h). For row b of a batch and target position t with
// n_bt >= 1 links (j = t: the target token y_{t+1} predicted at step t; the </s> step has no
// links), the links normalised to sum 1, A_bti = [(i, t) is a link] / n_bt, and
//
//   L_ga = −λ Σ_b Σ_{t: n_bt > 0} Σ_{i in window_bt} A_bti log(α_bti + ε),   ε = 1e-6
//   d L_ga / d α_bti = −λ A_bti / (α_bti + ε)                            (i in the window)
//
// λ = guided_alignment_weight (times the trainer's decay, docs/training.md). The loss is a SUM
// over the aligned target positions, like the cross-entropy's sum over target tokens, and its
// gradient is scaled by the same grad_scale (1/target tokens of the batch by default): the
// trained objective is (CE + L_ga) / tokens. `positions` counts the aligned (b, t) for
// reporting the loss per aligned position.
// Local attention: α is 0 outside the step's window and has no gradient there; links outside the
// window are skipped (their −A log ε would only add a constant), while A keeps the 1/n_bt of
// all the position's links. Every other mechanism composes: α is the attention's output weights
// (before attention dropout, after the local-p Gaussian), so input feeding, coverage (its loss
// and the recurrence's carry add to the same d α) and copy attention (its mixture's d α adds
// too) need nothing special.
#pragma once

#include "nazar/data/alignment_file.h"
#include "nazar/models/decoder.h"

#include <cstdint>
#include <span>

namespace nazar {

inline constexpr float kGuidedAlignmentEps = 1e-6f;

struct GuidedAlignmentStats {
    double loss = 0;        // λ-weighted L_ga (not scaled by grad_scale)
    int64_t positions = 0;  // aligned target positions (b, t) with n_bt > 0
};

// rows[b]: row b's links sorted by target position (CorpusAlignments::links), each tgt < T and
// src < S. steps: the T steps' attention caches (weights, start, count). d_alpha (T, B, S), by
// source position: += λ · grad_scale · d L_ga / d α; an empty view computes the loss only.
GuidedAlignmentStats guided_alignment_loss(std::span<const DecoderStepCache> steps,
                                           std::span<const std::span<const AlignedPair>> rows,
                                           int T, int S, float weight, float grad_scale,
                                           TensorView d_alpha);

// The weight at update `step` (0-based, updates done so far):
//   λ_step = weight · decay^⌊step / decay_steps⌋   (decay in (0, 1], decay_steps >= 1)
double guided_alignment_weight_at(double weight, double decay, int64_t decay_steps, int64_t step);

}  // namespace nazar
