// Beam size and penalties chosen on a dev set by re-ranking each beam's n-best lists
// (search_tuning.h).
#include "nazar/decode/search_tuning.h"

#include "nazar/core/check.h"
#include "nazar/decode/hypothesis.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/wer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace nazar {
namespace {

// What re-ranking needs of one hypothesis: score(α, β) = log_prob / lp(n, α) + β · coverage.
struct Candidate {
    std::string text;
    double log_prob = 0;
    int n = 0;            // emitted tokens including </s> (the attention's rows)
    double coverage = 0;  // Σ_i log(clamp(Σ_t a_{t,i}, 1e-10, 1)): coverage_penalty with β = 1
    bool finished = true;
};

using NBest = std::vector<std::vector<Candidate>>;  // per source, in the search's order

// Sources per translate() call: bounds what the attention matrices of one call hold.
constexpr std::size_t kChunk = 256;

NBest search(const Translator& tr, std::span<const std::string> sources,
             const TranslationOptions& base, int beam, bool coverage) {
    TranslationOptions o = base;
    o.beam_size = beam;
    o.n_best = beam;  // every finished hypothesis: the list any (α, β) ranks
    o.length_penalty = 0;
    o.coverage_penalty = 0;
    o.alignments = false;
    o.attention = coverage;
    NBest out;
    out.reserve(sources.size());
    for (std::size_t begin = 0; begin < sources.size(); begin += kChunk) {
        const std::size_t count = std::min(kChunk, sources.size() - begin);
        std::vector<Translation> res = tr.translate(sources.subspan(begin, count), o);
        for (Translation& t : res) {
            std::vector<Candidate>& list = out.emplace_back();
            for (TranslationHypothesis& h : t.hypotheses) {
                Candidate c{.text = std::move(h.text),
                            .log_prob = h.log_prob,
                            .n = static_cast<int>(h.tokens.size()) + (h.finished ? 1 : 0),
                            .coverage = 0,
                            .finished = h.finished};
                if (coverage) {
                    c.n = static_cast<int>(h.attention.dim(0));
                    c.coverage = coverage_penalty(h.attention, 1.0f);
                }
                list.push_back(std::move(c));
            }
        }
    }
    return out;
}

// The index of the hypothesis translate() returns first with (α, β): the highest score, the
// earlier in the list on a tie.
std::size_t pick(const std::vector<Candidate>& list, float alpha, float beta) {
    std::size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < list.size(); ++k) {
        const Candidate& c = list[k];
        const double s =
            c.log_prob / length_penalty(c.n, alpha) + static_cast<double>(beta) * c.coverage;
        if (k == 0 || s > best_score) {
            best = k;
            best_score = s;
        }
    }
    return best;
}

struct Scored {
    double score = 0;
    int64_t unfinished = 0;
};

Scored score_point(const NBest& lists, RefStreams refs, TuneMetric metric, float alpha,
                   float beta) {
    std::vector<std::string> hyps(lists.size());
    Scored r;
    for (std::size_t i = 0; i < lists.size(); ++i) {
        if (lists[i].empty()) continue;  // (a search always finds one; guards only)
        const Candidate& c = lists[i][pick(lists[i], alpha, beta)];
        hyps[i] = c.text;
        r.unfinished += c.finished ? 0 : 1;
    }
    r.score = metric_score(metric, hyps, refs);
    return r;
}

// a better than b for the metric; ties go to the smaller beam, then the smaller α, then β.
bool better(const TuningPoint& a, const TuningPoint& b, TuneMetric metric) {
    if (a.score != b.score) return higher_is_better(metric) ? a.score > b.score : a.score < b.score;
    if (a.beam != b.beam) return a.beam < b.beam;
    if (a.length_penalty != b.length_penalty) return a.length_penalty < b.length_penalty;
    return a.coverage_penalty < b.coverage_penalty;
}

}  // namespace

TuneMetric parse_tune_metric(std::string_view name) {
    for (TuneMetric m : {TuneMetric::exact, TuneMetric::bleu, TuneMetric::chrf, TuneMetric::wer,
                         TuneMetric::cer, TuneMetric::per})
        if (name == to_string(m)) return m;
    throw UsageError(
        fmt::format("unknown metric '{}' (choices: exact, bleu, chrf, wer, cer, per)", name));
}

std::string_view to_string(TuneMetric m) {
    switch (m) {
        case TuneMetric::exact:
            return "exact";
        case TuneMetric::bleu:
            return "bleu";
        case TuneMetric::chrf:
            return "chrf";
        case TuneMetric::wer:
            return "wer";
        case TuneMetric::cer:
            return "cer";
        case TuneMetric::per:
            return "per";
    }
    return "?";
}

bool higher_is_better(TuneMetric m) {
    return m == TuneMetric::exact || m == TuneMetric::bleu || m == TuneMetric::chrf;
}

double metric_score(TuneMetric m, std::span<const std::string> hyps, RefStreams refs) {
    switch (m) {
        case TuneMetric::exact:
            return exact_match(hyps, refs).score;
        case TuneMetric::bleu:
            return corpus_bleu(hyps, refs).score;
        case TuneMetric::chrf:
            return corpus_chrf(hyps, refs).score;
        case TuneMetric::wer:
            return corpus_error_rate(hyps, refs, ErrorMetric::wer).score;
        case TuneMetric::cer:
            return corpus_error_rate(hyps, refs, ErrorMetric::cer).score;
        case TuneMetric::per:
            return corpus_error_rate(hyps, refs, ErrorMetric::per).score;
    }
    return 0;
}

void validate(const TuningGrid& g) {
    if (g.beams.empty() || g.length_penalties.empty() || g.coverage_penalties.empty())
        throw UsageError(
            "tuning grid: every list (beams, length penalties, coverage penalties) "
            "needs at least one value");
    for (int k : g.beams)
        if (k < 1 || k > 1024)
            throw UsageError(fmt::format("tuning grid: beam {} is outside [1, 1024]", k));
    for (const auto* list : {&g.length_penalties, &g.coverage_penalties})
        for (float p : *list)
            if (!std::isfinite(p) || p < 0)
                throw UsageError(
                    fmt::format("tuning grid: penalty {} is not a finite number >= 0", p));
}

TuningResult tune_search(const Translator& translator, std::span<const std::string> sources,
                         RefStreams refs, TuneMetric metric, const TuningGrid& grid,
                         const TranslationOptions& base,
                         const std::function<void(const BeamSummary&)>& on_beam) {
    validate(grid);
    check_ref_streams(sources.size(), refs);
    if (sources.empty()) throw UsageError("tune: the dev set is empty");
    std::vector<std::string_view> segment;
    for (std::size_t i = 0; i < sources.size(); ++i)  // before decoding: fail fast
        segment_refs(refs, i, segment);
    const TranslationOptions builtin;  // translate's defaults, scored for comparison
    const bool coverage = std::any_of(grid.coverage_penalties.begin(),
                                      grid.coverage_penalties.end(), [](float b) { return b > 0; });
    TuningResult r;
    r.metric = metric;
    bool have_best = false, have_defaults = false;
    std::vector<int> beams = grid.beams;
    std::sort(beams.begin(), beams.end());
    beams.erase(std::unique(beams.begin(), beams.end()), beams.end());
    const bool defaults_in_grid =
        std::find(beams.begin(), beams.end(), builtin.beam_size) != beams.end();
    if (!defaults_in_grid) beams.push_back(builtin.beam_size);  // searched for the comparison only

    for (const int K : beams) {
        const bool grid_beam = defaults_in_grid || K != builtin.beam_size;
        const auto t0 = std::chrono::steady_clock::now();
        const NBest lists = search(translator, sources, base, K, coverage && K > 1);
        BeamSummary summary;
        summary.beam = K;
        summary.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (K == builtin.beam_size) {
            const Scored d =
                score_point(lists, refs, metric, builtin.length_penalty, builtin.coverage_penalty);
            r.defaults = {K, builtin.length_penalty, builtin.coverage_penalty, d.score};
            have_defaults = true;
        }
        if (!grid_beam) continue;
        bool have_beam_best = false;
        // Beam 1 is greedy: one hypothesis, which no penalty re-ranks.
        const std::vector<float> zero{0.0f};
        for (const float alpha : K == 1 ? zero : grid.length_penalties)
            for (const float beta : K == 1 ? zero : grid.coverage_penalties) {
                const Scored s = score_point(lists, refs, metric, alpha, beta);
                const TuningPoint p{K, alpha, beta, s.score};
                r.points.push_back(p);
                if (!have_beam_best || better(p, summary.best, metric)) {
                    summary.best = p;
                    summary.unfinished = s.unfinished;
                    have_beam_best = true;
                }
            }
        if (!have_best || better(summary.best, r.best, metric)) {
            r.best = summary.best;
            have_best = true;
        }
        r.beams.push_back(summary);
        if (on_beam) on_beam(summary);
    }
    NZ_CHECK(have_best && have_defaults, "tune_search: no point scored");
    return r;
}

}  // namespace nazar
