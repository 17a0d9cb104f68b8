// `nazar explain model`: one decoder step of a tiny seq2seq model, through docs/spec.md §1's four
// steps (score -> weights -> context -> output) with every number printed, for Bahdanau and for
// Luong general. The tiny model (word tokens "The cat sat" -> "Le chat s'est assis", E = 3, C = 4,
// H = 4, A = 3) is seeded, not trained: its weights are printed, so each value can be checked by
// hand. The by-hand arithmetic (plain loops, double precision) is then compared with what the
// real model code (DecodeSession::step) computed for the same step: the attention row and the
// log-probabilities must agree (max |difference| is printed and returned).
#pragma once

#include "nazar/models/config.h"

#include <string>

namespace nazar::demo {

struct StepWalkthrough {
    std::string text;            // the printed walk-through
    double max_weight_diff = 0;  // |α by hand − α of DecodeSession::step|, max over positions
    double max_logp_diff =
        0;  // |log p by hand − log p of DecodeSession::step|, max over the vocabulary
};

// kind: bahdanau (additive score, attention before the RNN step) or luong (general score, after).
StepWalkthrough explain_model_step(DecoderKind kind);

}  // namespace nazar::demo
