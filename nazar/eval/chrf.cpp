// chrF / chrF++, sacreBLEU-compatible (formulas in chrf.h).
#include "nazar/eval/chrf.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/eval/ngram.h"
#include "nazar/eval/text.h"

#include <mutex>

namespace nazar {

namespace {

bool is_ascii_punct(char c) {  // Python's string.punctuation
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

// chrF++ words: whitespace split, then one trailing (else leading) punctuation mark split off
// from any word longer than one character.
void chrf_words(std::string_view s, std::vector<std::string_view>& out) {
    std::vector<std::string_view> raw;
    split_whitespace(s, raw);
    out.clear();
    for (const auto w : raw) {
        if (utf8_char_len(w, 0) == w.size()) {
            out.push_back(w);
        } else if (is_ascii_punct(w.back())) {
            out.push_back(w.substr(0, w.size() - 1));
            out.push_back(w.substr(w.size() - 1));
        } else if (is_ascii_punct(w.front())) {
            out.push_back(w.substr(0, 1));
            out.push_back(w.substr(1));
        } else {
            out.push_back(w);
        }
    }
}

// The sequences one text contributes: code points (whitespace dropped unless kept), and words.
struct Prepared {
    std::string text;
    std::vector<uint32_t> chars;
    std::vector<std::string_view> words;
    std::vector<uint32_t> word_ids;
};

void prepare(std::string_view line, const ChrfOptions& opt, Prepared& p) {
    p.text = opt.lowercase ? to_lower(line) : std::string(line);
    std::vector<char32_t> cps;
    utf8_decode(p.text, cps);
    p.chars.clear();
    for (const char32_t c : cps)
        if (opt.whitespace || !is_space(c)) p.chars.push_back(static_cast<uint32_t>(c));
    p.words.clear();
    if (opt.word_order > 0) chrf_words(p.text, p.words);
}

void segment_stats(std::span<const std::string> hyps, RefStreams refs, const ChrfOptions& opt,
                   std::size_t begin, std::size_t end, ChrfStats& out) {
    const int NC = opt.char_order, NW = opt.word_order, N = NC + NW;
    NgramMatcher matcher;
    TokenInterner interner;
    NgramCounts chars, words;
    std::vector<std::string_view> ref_lines;
    std::vector<Prepared> prep;
    std::vector<std::span<const uint32_t>> ref_chars, ref_words;
    std::vector<int64_t> stats(3 * N), best(3 * N);
    for (std::size_t i = begin; i < end; ++i) {
        segment_refs(refs, i, ref_lines);
        const std::size_t R = ref_lines.size();
        if (prep.size() < R + 1) prep.resize(R + 1);
        std::size_t num_words = 0;
        for (std::size_t s = 0; s <= R; ++s) {
            prepare(s == 0 ? std::string_view(hyps[i]) : ref_lines[s - 1], opt, prep[s]);
            num_words += prep[s].words.size();
        }
        ref_chars.clear();
        ref_words.clear();
        if (NW > 0) interner.reset(num_words);
        for (std::size_t s = 0; s <= R; ++s) {
            if (NW > 0) {
                prep[s].word_ids.clear();
                for (const auto w : prep[s].words) prep[s].word_ids.push_back(interner.id(w));
            }
            if (s > 0)
                ref_chars.emplace_back(prep[s].chars), ref_words.emplace_back(prep[s].word_ids);
        }
        matcher.count(prep[0].chars, ref_chars, NC, chars);
        if (NW > 0) matcher.count(prep[0].word_ids, ref_words, NW, words);

        double best_f = -1.0;
        for (std::size_t r = 0; r < R; ++r) {
            for (int n = 0; n < N; ++n) {
                const NgramCounts& c = n < NC ? chars : words;
                const int m = n < NC ? n : n - NC, M = c.max_order;
                const int64_t ref_n = c.ref_total[r * M + m];
                stats[3 * n + 0] = ref_n > 0 ? c.hyp_total[m] : 0;
                stats[3 * n + 1] = ref_n;
                stats[3 * n + 2] = c.match[r * M + m];
            }
            const double f = chrf_from_counts(stats, opt);
            if (f > best_f) best_f = f, best = stats;
        }
        for (int k = 0; k < 3 * N; ++k) out.counts[k] += best[k];
        ++out.segments;
    }
}

void check_options(const ChrfOptions& opt) {
    if (opt.char_order < 1 || opt.char_order > kMaxChrfOrder)
        throw UsageError(fmt::format("chrF character order must be in [1, {}], got {}",
                                     kMaxChrfOrder, opt.char_order));
    if (opt.word_order < 0 || opt.word_order > kMaxChrfOrder)
        throw UsageError(fmt::format("chrF word order must be in [0, {}], got {}", kMaxChrfOrder,
                                     opt.word_order));
    if (opt.beta < 0) throw UsageError(fmt::format("chrF beta must be >= 0, got {}", opt.beta));
}

}  // namespace

ChrfStats& ChrfStats::operator+=(const ChrfStats& o) {
    if (counts.size() < o.counts.size()) counts.resize(o.counts.size(), 0);
    for (std::size_t k = 0; k < o.counts.size(); ++k) counts[k] += o.counts[k];
    segments += o.segments;
    return *this;
}

double chrf_from_counts(std::span<const int64_t> counts, const ChrfOptions& opt) {
    const int N = opt.char_order + opt.word_order;
    NZ_CHECK(static_cast<int>(counts.size()) == 3 * N,
             "chrF statistics have {} entries, expected 3 x {} orders", counts.size(), N);
    constexpr double eps = 1e-16;
    const double factor = static_cast<double>(opt.beta) * opt.beta;
    double eps_score = 0, avg_p = 0, avg_r = 0;
    int effective = 0;
    for (int n = 0; n < N; ++n) {
        const double h = static_cast<double>(counts[3 * n]),
                     r = static_cast<double>(counts[3 * n + 1]),
                     m = static_cast<double>(counts[3 * n + 2]);
        const double p = h > 0 ? m / h : eps, rec = r > 0 ? m / r : eps;
        const double denom = factor * p + rec;
        eps_score += denom > 0 ? (1 + factor) * p * rec / denom : eps;
        if (h > 0 && r > 0) avg_p += p, avg_r += rec, ++effective;
    }
    if (opt.eps_smoothing) return 100.0 * eps_score / N;
    if (effective == 0) return 0.0;
    avg_p /= effective;
    avg_r /= effective;
    if (avg_p + avg_r == 0) return 0.0;
    return 100.0 * (1 + factor) * avg_p * avg_r / (factor * avg_p + avg_r);
}

ChrfStats corpus_chrf_stats(std::span<const std::string> hyps, RefStreams refs,
                            const ChrfOptions& opt) {
    check_options(opt);
    check_ref_streams(hyps.size(), refs);
    const int N = opt.char_order + opt.word_order;
    ChrfStats total{.counts = std::vector<int64_t>(3 * N, 0)};
    std::mutex mu;
    parallel_for(static_cast<int64_t>(hyps.size()), 2048, [&](int64_t begin, int64_t end) {
        ChrfStats part{.counts = std::vector<int64_t>(3 * N, 0)};
        segment_stats(hyps, refs, opt, static_cast<std::size_t>(begin),
                      static_cast<std::size_t>(end), part);
        std::lock_guard lock(mu);
        total += part;
    });
    return total;
}

ChrfScore chrf_from_stats(const ChrfStats& stats, const ChrfOptions& opt, std::string_view nrefs) {
    check_options(opt);
    ChrfScore out{.score = chrf_from_counts(stats.counts, opt),
                  .beta = opt.beta,
                  .char_order = opt.char_order,
                  .word_order = opt.word_order,
                  .signature = {}};
    out.signature =
        fmt::format("nrefs:{}|case:{}|eff:{}|nc:{}|nw:{}|space:{}|version:nazar-0.1.0", nrefs,
                    opt.lowercase ? "lc" : "mixed", opt.eps_smoothing ? "no" : "yes",
                    opt.char_order, opt.word_order, opt.whitespace ? "yes" : "no");
    return out;
}

ChrfScore corpus_chrf(std::span<const std::string> hyps, RefStreams refs, const ChrfOptions& opt) {
    const ChrfStats stats = corpus_chrf_stats(hyps, refs, opt);
    return chrf_from_stats(stats, opt, nrefs_field(refs));
}

ChrfScore sentence_chrf(std::string_view hyp, std::span<const std::string> refs,
                        const ChrfOptions& opt) {
    std::vector<std::string> h{std::string(hyp)};
    std::vector<std::vector<std::string>> streams;
    for (const auto& r : refs) streams.push_back({r});
    return corpus_chrf(h, streams, opt);
}

std::string ChrfScore::name() const {
    return fmt::format("chrF{}{}", beta, std::string(word_order, '+'));
}

std::string ChrfScore::format() const {
    return fmt::format("{} = {:.2f}", name(), score);
}

}  // namespace nazar
