// Error rates on tokens or characters, and exact-match accuracy.
//
//   WER = Σ_seg (S + D + I) / Σ_seg |ref|     Levenshtein on whitespace-separated tokens
//   CER = the same on code points (runs of whitespace collapsed to one space, ends trimmed)
//   PER = Σ_seg (max(|hyp|, |ref|) - Σ_g min(c_hyp(g), c_ref(g))) / Σ_seg |ref|
//         position-independent error rate (Tillmann et al. 1997): tokens as a bag
//   exact = segments whose tokens equal those of some reference / segments
// All rates are percentages. With several references (g2p lexicons list several
// pronunciations) each segment is scored against the reference with the fewest errors (the
// first on ties), and that reference's length enters the denominator. In g2p papers "PER"
// often means phoneme error rate: that is WER here on space-separated phonemes, and g2p's
// "WER" (words with any error) is 100 - exact.
// S/D/I split: of the minimal-cost alignments, the one whose every cell takes its predecessor
// in the order substitution (or match), deletion, insertion. Memory O(|hyp|).
// PER reports S = min(|hyp|,|ref|) - matches, D = max(0, |ref|-|hyp|), I = max(0, |hyp|-|ref|).
#pragma once

#include "nazar/eval/references.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

enum class ErrorMetric { wer, cer, per };

struct EditCounts {
    int64_t substitutions = 0;
    int64_t deletions = 0;
    int64_t insertions = 0;
    int64_t errors() const { return substitutions + deletions + insertions; }
};

// The most cells (|hyp| + 1) · (|ref| + 1) one alignment may fill: about 32768 tokens against
// 32768, a second or two. A longer segment is refused (UsageError naming the segment and both
// lengths) instead of running for minutes; PER and exact have no such limit.
inline constexpr int64_t kMaxEditCells = int64_t{1} << 30;

// Levenshtein distance between two id sequences with its S/D/I split (see file header).
// Throws UsageError when the sequences need more than kMaxEditCells cells.
EditCounts edit_distance(std::span<const uint32_t> hyp, std::span<const uint32_t> ref);

struct ErrorRate {
    ErrorMetric metric = ErrorMetric::wer;
    double score = 0;  // percent: 100 · errors / ref_len (0 when ref_len is 0)
    int64_t errors = 0;
    int64_t substitutions = 0;
    int64_t deletions = 0;
    int64_t insertions = 0;
    int64_t hyp_len = 0;
    int64_t ref_len = 0;  // Σ length of the chosen references
    int64_t segments = 0;

    std::string name() const;  // "WER", "CER", "PER"
    // "WER = 12.50 (S = 1 D = 0 I = 1 errors = 2 ref_len = 16 segments = 2)"
    std::string format() const;
};

ErrorRate corpus_error_rate(std::span<const std::string> hyps, RefStreams refs, ErrorMetric metric);
inline ErrorRate corpus_wer(std::span<const std::string> hyps, RefStreams refs) {
    return corpus_error_rate(hyps, refs, ErrorMetric::wer);
}
inline ErrorRate corpus_cer(std::span<const std::string> hyps, RefStreams refs) {
    return corpus_error_rate(hyps, refs, ErrorMetric::cer);
}
inline ErrorRate corpus_per(std::span<const std::string> hyps, RefStreams refs) {
    return corpus_error_rate(hyps, refs, ErrorMetric::per);
}

struct ExactMatch {
    double score = 0;  // percent of segments matching a reference
    int64_t correct = 0;
    int64_t segments = 0;

    std::string format() const;  // "Exact = 75.00 (correct = 3 segments = 4)"
};

// Tokens are compared after whitespace splitting, so spacing differences do not count.
ExactMatch exact_match(std::span<const std::string> hyps, RefStreams refs);

}  // namespace nazar
