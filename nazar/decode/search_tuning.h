// Choosing the beam size, length penalty and coverage penalty on a dev set (`nazar tune`).
//
// Beam search keeps the best K candidates by raw log p at every step; the penalties only rank the
// hypotheses that finish (hypothesis.h), and the early stop is exact (beam_search.h). So one
// search per beam size with n_best = K finds every hypothesis any (α, β) could return, and the
// translation translate() gives with (K, α, β) is the best of them by
//   log p / ((5 + n) / 6)^α + β · Σ_i log(min(Σ_t a_{t,i}, 1)).
// tune_search decodes the dev sources once per beam size, keeps each hypothesis's text, log p,
// length and coverage sum (not its attention), and scores every (α, β) of the grid by re-ranking:
// a grid of 66 penalty pairs costs one decode, not 66.
#pragma once

#include "nazar/decode/translator.h"
#include "nazar/eval/references.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

// exact, bleu, chrf (higher is better) or wer, cer, per (lower is better), as `nazar eval`
// computes them (defaults: BLEU 13a, chrF 6/0/2).
enum class TuneMetric { exact, bleu, chrf, wer, cer, per };
TuneMetric parse_tune_metric(std::string_view name);  // UsageError listing the choices
std::string_view to_string(TuneMetric m);
bool higher_is_better(TuneMetric m);
double metric_score(TuneMetric m, std::span<const std::string> hyps, RefStreams refs);

struct TuningGrid {
    std::vector<int> beams{1, 5, 10};
    std::vector<float> length_penalties{0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f,
                                        1.2f, 1.4f, 1.6f, 1.8f, 2.0f};
    std::vector<float> coverage_penalties{0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
};
// Throws UsageError on an empty list, a beam outside [1, 1024] or a negative / non-finite
// penalty.
void validate(const TuningGrid& grid);

struct TuningPoint {
    int beam = 0;
    float length_penalty = 0, coverage_penalty = 0;  // beam 1: the penalties play no part
    double score = 0;
};

struct BeamSummary {
    int beam = 0;
    double seconds = 0;      // the search's wall time
    int64_t unfinished = 0;  // sources whose best hypothesis (at the beam's best point) was cut
                             // at the maximum length
    TuningPoint best;        // the beam's best (α, β)
};

struct TuningResult {
    TuneMetric metric = TuneMetric::bleu;
    std::vector<TuningPoint> points;  // every point scored, in decode order
    std::vector<BeamSummary> beams;   // one per beam size, in grid order
    TuningPoint best;                 // the best point (ties: smaller beam, then α, then β)
    // translate's built-in defaults (TranslationOptions{}: beam 5, α 0.6, β 0) with the same
    // length limits, scored the same way (beam 5 is searched for it when not in the grid).
    TuningPoint defaults;
};

// sources: the distinct dev sources; refs: their reference streams (references.h). `base`
// holds what is not tuned: the length limits, batch size and ensemble_attention (its beam,
// n_best and penalties are ignored). on_beam (optional) is called after each beam size's search.
TuningResult tune_search(const Translator& translator, std::span<const std::string> sources,
                         RefStreams refs, TuneMetric metric, const TuningGrid& grid,
                         const TranslationOptions& base,
                         const std::function<void(const BeamSummary&)>& on_beam = nullptr);

}  // namespace nazar
