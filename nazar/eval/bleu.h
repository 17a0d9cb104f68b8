// BLEU (Papineni et al. 2002), computed the way sacreBLEU 2.x computes it by default.
//
//   p_n  = Σ_seg Σ_g min(c_hyp(g), max_r c_r(g)) / Σ_seg (|hyp| - n + 1)     n = 1..N (N = 4)
//   BP   = 1 if c >= r else exp(1 - r / c)     c = Σ |hyp|, r = Σ the reference length closest
//                                              to |hyp| (ties: the shorter one)
//   BLEU = 100 · BP · exp((1/N) Σ_n log p_n)
// Counts are summed over the corpus before the ratio (corpus BLEU, not an average of sentences).
// Zero counts are smoothed as sacreBLEU names it (Chen & Cherry 2014):
//   exp   (default, mteval's NIST method 3): the k-th zero p_n becomes 1 / (2^k · total_n)
//   floor (method 1): a zero p_n becomes smooth_value / total_n          (default value 0.1)
//   add-k (method 2): n >= 2 counts and totals get + smooth_value         (default value 1)
//   none : a zero p_n makes BLEU 0.
// No matching n-gram of any order gives BLEU 0 whatever the smoothing (sacreBLEU 2.x).
// effective_order (sentence BLEU): N shrinks to the highest order with a non-zero total.
// Text is tokenized first (13a by default, see text.h) and optionally lowercased.
#pragma once

#include "nazar/eval/references.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

enum class BleuSmooth { exp, floor, add_k, none };
enum class BleuTokenize { mteval_13a, none, chars };  // sacreBLEU's "13a", "none", "char"

// The largest n-gram order accepted (UsageError above); BLEU's standard order is 4.
inline constexpr int kMaxBleuOrder = 100;

struct BleuOptions {
    BleuSmooth smooth_method = BleuSmooth::exp;
    std::optional<double> smooth_value{};  // floor: 0.1, add-k: 1 when unset; ignored otherwise
    BleuTokenize tokenize = BleuTokenize::mteval_13a;
    bool lowercase = false;
    bool effective_order = false;
    int max_ngram_order = 4;  // N
};

// Sufficient statistics: summable over segments (and over shards of a corpus).
struct BleuStats {
    std::vector<int64_t> correct{};  // (N)  clipped n-gram matches
    std::vector<int64_t> total{};    // (N)  hypothesis n-grams
    int64_t hyp_len = 0;             // c
    int64_t ref_len = 0;             // r
    int64_t segments = 0;

    BleuStats& operator+=(const BleuStats& o);
};

struct BleuScore {
    double score = 0;                  // 0..100
    std::vector<int64_t> counts{};     // (N)  = BleuStats::correct
    std::vector<int64_t> totals{};     // (N)  = BleuStats::total
    std::vector<double> precisions{};  // (N)  percent, after smoothing
    double bp = 0;
    double ratio = 0;  // hyp_len / ref_len (0 when ref_len is 0)
    int64_t hyp_len = 0;
    int64_t ref_len = 0;
    std::string signature{};  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:..."

    // sacreBLEU's line: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17
    // ref_len = 18)"
    std::string format() const;
};

// "tok:13a", "smooth:exp" names, and their inverses (throw nazar::UsageError on unknown names).
std::string_view to_string(BleuSmooth s);
std::string_view to_string(BleuTokenize t);
BleuSmooth parse_bleu_smooth(std::string_view name);
BleuTokenize parse_bleu_tokenize(std::string_view name);

// Lowercases (if asked) and tokenizes one line as BLEU sees it.
std::string bleu_preprocess(std::string_view line, const BleuOptions& opt);

// Statistics of a whole corpus; refs as in references.h.
BleuStats corpus_bleu_stats(std::span<const std::string> hyps, RefStreams refs,
                            const BleuOptions& opt = {});
// The score from (summed) statistics; `nrefs` only feeds the signature.
BleuScore bleu_from_stats(const BleuStats& stats, const BleuOptions& opt = {},
                          std::string_view nrefs = "1");

BleuScore corpus_bleu(std::span<const std::string> hyps, RefStreams refs,
                      const BleuOptions& opt = {});

// One segment against its references (sacreBLEU's sentence_score); by default with
// effective order, as sacreBLEU's sentence_bleu does.
BleuScore sentence_bleu(std::string_view hyp, std::span<const std::string> refs,
                        const BleuOptions& opt = BleuOptions{.effective_order = true});

}  // namespace nazar
