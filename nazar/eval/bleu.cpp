// Corpus and sentence BLEU, sacreBLEU-compatible (formulas in bleu.h).
#include "nazar/eval/bleu.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/eval/ngram.h"
#include "nazar/eval/text.h"

#include <cmath>
#include <cstdlib>
#include <mutex>

namespace nazar {

namespace {

// Accumulates the statistics of segments [begin, end) into `out`.
void segment_stats(std::span<const std::string> hyps, RefStreams refs, const BleuOptions& opt,
                   std::size_t begin, std::size_t end, BleuStats& out) {
    const int N = opt.max_ngram_order;
    TokenInterner interner;
    NgramMatcher matcher;
    NgramCounts counts;
    std::vector<std::string_view> ref_lines;
    std::vector<std::string> texts;                    // tokenized hyp, then refs
    std::vector<std::vector<std::string_view>> words;  // their tokens
    std::vector<std::vector<uint32_t>> ids;
    std::vector<std::span<const uint32_t>> ref_ids;
    for (std::size_t i = begin; i < end; ++i) {
        segment_refs(refs, i, ref_lines);
        const std::size_t S = ref_lines.size() + 1;
        if (texts.size() < S) texts.resize(S), words.resize(S), ids.resize(S);
        std::size_t num_tokens = 0;
        for (std::size_t s = 0; s < S; ++s) {
            texts[s] = bleu_preprocess(s == 0 ? std::string_view(hyps[i]) : ref_lines[s - 1], opt);
            words[s].clear();
            split_whitespace(texts[s], words[s]);
            num_tokens += words[s].size();
        }
        interner.reset(num_tokens);
        ref_ids.clear();
        for (std::size_t s = 0; s < S; ++s) {
            ids[s].clear();
            for (const auto w : words[s]) ids[s].push_back(interner.id(w));
            if (s > 0) ref_ids.emplace_back(ids[s]);
        }
        matcher.count(ids[0], ref_ids, N, counts);
        for (int n = 0; n < N; ++n) {
            out.correct[n] += counts.clipped[n];
            out.total[n] += counts.hyp_total[n];
        }
        // Closest reference length; on a tie the shorter reference.
        const int64_t c = static_cast<int64_t>(words[0].size());
        int64_t best = -1, best_diff = -1;
        for (std::size_t s = 1; s < S; ++s) {
            const int64_t r = static_cast<int64_t>(words[s].size()), diff = std::llabs(c - r);
            if (best_diff < 0 || diff < best_diff || (diff == best_diff && r < best))
                best = r, best_diff = diff;
        }
        out.hyp_len += c;
        out.ref_len += best;
        ++out.segments;
    }
}

double smooth_default(BleuSmooth s) {
    return s == BleuSmooth::floor ? 0.1 : s == BleuSmooth::add_k ? 1.0 : 0.0;
}

}  // namespace

BleuStats& BleuStats::operator+=(const BleuStats& o) {
    if (correct.size() < o.correct.size())
        correct.resize(o.correct.size(), 0), total.resize(o.total.size(), 0);
    for (std::size_t n = 0; n < o.correct.size(); ++n)
        correct[n] += o.correct[n], total[n] += o.total[n];
    hyp_len += o.hyp_len;
    ref_len += o.ref_len;
    segments += o.segments;
    return *this;
}

std::string_view to_string(BleuSmooth s) {
    switch (s) {
        case BleuSmooth::exp:
            return "exp";
        case BleuSmooth::floor:
            return "floor";
        case BleuSmooth::add_k:
            return "add-k";
        case BleuSmooth::none:
            return "none";
    }
    return "?";
}

std::string_view to_string(BleuTokenize t) {
    switch (t) {
        case BleuTokenize::mteval_13a:
            return "13a";
        case BleuTokenize::none:
            return "none";
        case BleuTokenize::chars:
            return "char";
    }
    return "?";
}

BleuSmooth parse_bleu_smooth(std::string_view name) {
    for (auto s : {BleuSmooth::exp, BleuSmooth::floor, BleuSmooth::add_k, BleuSmooth::none})
        if (to_string(s) == name) return s;
    throw UsageError(
        fmt::format("unknown BLEU smoothing '{}' (expected exp, floor, add-k or none)", name));
}

BleuTokenize parse_bleu_tokenize(std::string_view name) {
    for (auto t : {BleuTokenize::mteval_13a, BleuTokenize::none, BleuTokenize::chars})
        if (to_string(t) == name) return t;
    throw UsageError(fmt::format("unknown BLEU tokenizer '{}' (expected 13a, none or char)", name));
}

std::string bleu_preprocess(std::string_view line, const BleuOptions& opt) {
    std::string lowered;
    if (opt.lowercase) {
        lowered = to_lower(line);
        line = lowered;
    }
    switch (opt.tokenize) {
        case BleuTokenize::mteval_13a:
            return tokenize_13a(line);
        case BleuTokenize::chars:
            return tokenize_chars(line);
        case BleuTokenize::none:
            break;
    }
    return std::string(line);
}

BleuStats corpus_bleu_stats(std::span<const std::string> hyps, RefStreams refs,
                            const BleuOptions& opt) {
    if (opt.max_ngram_order < 1 || opt.max_ngram_order > kMaxBleuOrder)
        throw UsageError(fmt::format("BLEU n-gram order must be in [1, {}], got {}", kMaxBleuOrder,
                                     opt.max_ngram_order));
    check_ref_streams(hyps.size(), refs);
    const int N = opt.max_ngram_order;
    BleuStats total{.correct = std::vector<int64_t>(N, 0), .total = std::vector<int64_t>(N, 0)};
    std::mutex mu;
    // Integer sums: the result does not depend on how the segments are split.
    parallel_for(static_cast<int64_t>(hyps.size()), 4096, [&](int64_t begin, int64_t end) {
        BleuStats part{.correct = std::vector<int64_t>(N, 0), .total = std::vector<int64_t>(N, 0)};
        segment_stats(hyps, refs, opt, static_cast<std::size_t>(begin),
                      static_cast<std::size_t>(end), part);
        std::lock_guard lock(mu);
        total += part;
    });
    return total;
}

BleuScore bleu_from_stats(const BleuStats& stats, const BleuOptions& opt, std::string_view nrefs) {
    const int N = opt.max_ngram_order;
    NZ_CHECK(
        static_cast<int>(stats.correct.size()) == N && static_cast<int>(stats.total.size()) == N,
        "BleuStats has {} orders but max_ngram_order is {}", stats.correct.size(), N);
    const double k = opt.smooth_value.value_or(smooth_default(opt.smooth_method));
    BleuScore out;
    out.counts = stats.correct;
    out.totals = stats.total;
    out.precisions.assign(N, 0.0);
    out.hyp_len = stats.hyp_len;
    out.ref_len = stats.ref_len;
    out.ratio = stats.ref_len > 0
                    ? static_cast<double>(stats.hyp_len) / static_cast<double>(stats.ref_len)
                    : 0.0;
    out.bp = stats.hyp_len >= stats.ref_len ? 1.0
             : stats.hyp_len > 0            ? std::exp(1.0 - static_cast<double>(stats.ref_len) /
                                                                 static_cast<double>(stats.hyp_len))
                                            : 0.0;

    out.signature =
        fmt::format("nrefs:{}|case:{}|eff:{}|tok:{}|smooth:{}|version:nazar-0.1.0", nrefs,
                    opt.lowercase ? "lc" : "mixed", opt.effective_order ? "yes" : "no",
                    to_string(opt.tokenize), to_string(opt.smooth_method));
    // No match of any order: BLEU is 0 whatever the smoothing (sacreBLEU 2.x, its issue #141).
    bool any_match = false;
    for (const int64_t c : stats.correct) any_match |= c > 0;
    if (!any_match) return out;

    int effective = N;
    double exp_divisor = 1.0;  // 2^k for the k-th zero count (smooth = exp)
    for (int n = 1; n <= N; ++n) {
        double correct = static_cast<double>(stats.correct[n - 1]);
        double total = static_cast<double>(stats.total[n - 1]);
        if (opt.smooth_method == BleuSmooth::add_k && n > 1) correct += k, total += k;
        if (total == 0) break;
        if (opt.effective_order) effective = n;
        if (correct == 0) {
            if (opt.smooth_method == BleuSmooth::exp) {
                exp_divisor *= 2;
                out.precisions[n - 1] = 100.0 / (exp_divisor * total);
            } else if (opt.smooth_method == BleuSmooth::floor) {
                out.precisions[n - 1] = 100.0 * k / total;
            }
        } else {
            out.precisions[n - 1] = 100.0 * correct / total;
        }
    }
    // A zero precision (no smoothing, or no n-grams at all) makes the geometric mean 0.
    double log_sum = 0;
    bool zero = false;
    for (int n = 0; n < effective; ++n) {
        if (out.precisions[n] <= 0)
            zero = true;
        else
            log_sum += std::log(out.precisions[n]);
    }
    out.score = zero ? 0.0 : out.bp * std::exp(log_sum / effective);
    return out;
}

BleuScore corpus_bleu(std::span<const std::string> hyps, RefStreams refs, const BleuOptions& opt) {
    const BleuStats stats = corpus_bleu_stats(hyps, refs, opt);
    return bleu_from_stats(stats, opt, nrefs_field(refs));
}

BleuScore sentence_bleu(std::string_view hyp, std::span<const std::string> refs,
                        const BleuOptions& opt) {
    std::vector<std::string> h{std::string(hyp)};
    std::vector<std::vector<std::string>> streams;
    for (const auto& r : refs) streams.push_back({r});
    return corpus_bleu(h, streams, opt);
}

std::string BleuScore::format() const {
    std::string prec;
    for (std::size_t n = 0; n < precisions.size(); ++n)
        prec += fmt::format("{}{:.1f}", n ? "/" : "", precisions[n]);
    return fmt::format("BLEU = {:.2f} {} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                       score, prec, bp, ratio, hyp_len, ref_len);
}

}  // namespace nazar
