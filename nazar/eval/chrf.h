// chrF (Popović 2015) and chrF++ (Popović 2017), computed the way sacreBLEU 2.x does.
//
// Per segment and order n, with c_h, c_r the n-gram counts of hypothesis and reference:
//   hyp_n = Σ c_h (0 when the reference has no n-gram of this order),  ref_n = Σ c_r,
//   match_n = Σ_g min(c_h(g), c_r(g))
// Orders: character n-grams 1..char_order (code points; whitespace removed unless
// `whitespace`), then word n-grams 1..word_order (chrF++: words split on whitespace, one
// leading or trailing ASCII punctuation mark split off). With several references the segment
// keeps the statistics of the reference with the best segment-level score (first on ties).
// Corpus: the statistics are summed over segments, then
//   P_n = match_n / hyp_n, R_n = match_n / ref_n, over the orders with hyp_n > 0 and ref_n > 0;
//   P, R = their means;  chrF_β = 100 · (1 + β²) P R / (β² P + R)     (0 when P + R = 0)
// eps_smoothing = true instead averages per-order F scores over all orders, with 1e-16 for an
// undefined P_n or R_n (chrF++.py / Moses / NLTK); sacreBLEU's default is false.
#pragma once

#include "nazar/eval/references.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

// The largest character and word n-gram orders accepted (UsageError above): statistics and
// work grow with the order, and sacrebleu's defaults are 6 and 0 (chrF++: 2).
inline constexpr int kMaxChrfOrder = 100;

struct ChrfOptions {
    int char_order = 6;
    int word_order = 0;  // 2 = chrF++
    int beta = 2;
    bool lowercase = false;
    bool whitespace = false;  // keep whitespace inside character n-grams
    bool eps_smoothing = false;
};

// Summable statistics: (char_order + word_order) triples [hyp_n, ref_n, match_n].
struct ChrfStats {
    std::vector<int64_t> counts{};  // (3 · (char_order + word_order))
    int64_t segments = 0;

    ChrfStats& operator+=(const ChrfStats& o);
};

struct ChrfScore {
    double score = 0;  // 0..100
    int beta = 2;
    int char_order = 6;
    int word_order = 0;
    std::string signature{};  // "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:..."

    std::string name() const;    // "chrF2", "chrF2++"
    std::string format() const;  // "chrF2 = 59.73"
};

// The F score of a statistics vector (segment or corpus), 0..100.
double chrf_from_counts(std::span<const int64_t> counts, const ChrfOptions& opt = {});

ChrfStats corpus_chrf_stats(std::span<const std::string> hyps, RefStreams refs,
                            const ChrfOptions& opt = {});
ChrfScore chrf_from_stats(const ChrfStats& stats, const ChrfOptions& opt = {},
                          std::string_view nrefs = "1");

ChrfScore corpus_chrf(std::span<const std::string> hyps, RefStreams refs,
                      const ChrfOptions& opt = {});
ChrfScore sentence_chrf(std::string_view hyp, std::span<const std::string> refs,
                        const ChrfOptions& opt = {});

}  // namespace nazar
