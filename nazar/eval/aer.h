// Alignment error rate (Och & Ney 2003, §5) of hard word alignments against gold ones.
//
//   AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|),   S ⊆ P
//   precision = |A ∩ P| / |A|,   recall = |A ∩ S| / |S|
// A: hypothesis links, S: sure gold links, P: possible gold links (P includes S). The counts
// are summed over the corpus before dividing; a corpus with |A| + |S| = 0 gets AER 0.
// Formats, one sentence per line (Pharaoh / Moses "i-j", source index first, any base):
//   hypothesis:   "0-0 1-2 2-1"                       (hard links only; '?' is an error)
//   gold:         "0-0 1?2 2-1"   "i-j" sure, "i?j" possible
//   possible file (optional, one line per gold line): extra possible links, "i-j" or "i?j"
// Links are sets: duplicates count once. All scores are percentages.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

struct AlignmentLink {
    int src = 0;
    int tgt = 0;
    friend auto operator<=>(const AlignmentLink&, const AlignmentLink&) = default;
};

struct GoldAlignment {
    std::vector<AlignmentLink> sure{};      // S, sorted, unique
    std::vector<AlignmentLink> possible{};  // P ⊇ S, sorted, unique
};

// Parse one line. `line_no` (1-based) only goes into error messages.
std::vector<AlignmentLink> parse_hard_alignment(std::string_view line, std::size_t line_no = 0);
GoldAlignment parse_gold_alignment(std::string_view line, std::string_view possible_line = {},
                                   std::size_t line_no = 0);

struct AerScore {
    double score = 0;              // AER, percent
    double precision = 0;          // percent
    double recall = 0;             // percent
    int64_t hyp_links = 0;         // |A|
    int64_t sure_links = 0;        // |S|
    int64_t possible_links = 0;    // |P|
    int64_t hyp_and_sure = 0;      // |A ∩ S|
    int64_t hyp_and_possible = 0;  // |A ∩ P|
    int64_t segments = 0;

    // "AER = 25.00 (precision = 75.00 recall = 75.00 |A| = 4 |S| = 4 |P| = 5 segments = 2)"
    std::string format() const;
};

// `possible` is empty (no possible-links file) or has one line per gold line.
AerScore corpus_aer(std::span<const std::string> hyp, std::span<const std::string> gold,
                    std::span<const std::string> possible = {});

}  // namespace nazar
