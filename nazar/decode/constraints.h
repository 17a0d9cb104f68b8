// Lexical constraints for beam search (docs/decoding.md "Constraints"): phrases that every
// finished output must contain, and phrases that no output may contain, as target token ids.
//
// Search (beam_search.h) follows dynamic beam allocation (Post & Vilar 2018, "Fast lexically
// constrained decoding with dynamic beam allocation for neural machine translation"): each
// hypothesis carries a ConstraintState; at every step the candidates are the usual best ones,
// every token that advances an unmet constraint, and each hypothesis's own best token; the beam
// is split into banks by how many constraint tokens a candidate has met, so that hypotheses
// which have placed a constraint compete with each other rather than with freer ones. </s> is
// allowed only once every include phrase is met; a token that completes an exclude phrase is
// never emitted.
//
// A phrase may have several spellings (a SentencePiece phrase after a space and glued to the
// word before it: "▁% d" and "% d"); emitting the tokens of any one consecutively meets it. A
// hypothesis works on one spelling of one phrase at a time: a token that does not continue it
// falls back to the longest tail that still begins the spelling, or abandons it (its tokens
// stop counting) and may start another. Each include phrase is met at most once (a second
// occurrence is allowed, not required).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nazar {

using Spelling = std::vector<int32_t>;

struct TokenConstraints {
    std::vector<std::vector<Spelling>> include;  // each (any of its spellings) must appear in
                                                 // every finished output
    std::vector<Spelling> exclude;               // none may appear in any output

    bool empty() const { return include.empty() && exclude.empty(); }
    // A met phrase counts as its longest spelling's length; the banks are 0..include_tokens().
    int phrase_tokens(int k) const;
    int include_tokens() const;
};

// Where a hypothesis stands with its sentence's include phrases.
struct ConstraintState {
    std::vector<uint8_t> met;  // per include phrase
    int current = -1;          // the phrase in progress, −1 = none
    int spelling = 0;          // which of its spellings
    int progress = 0;          // tokens of that spelling emitted so far (< its length)
    int met_tokens = 0;        // Σ phrase_tokens of the met phrases + progress: the bank

    bool all_met(const TokenConstraints& c) const;
};

ConstraintState initial_state(const TokenConstraints& c);

// The state after emitting token y.
ConstraintState next_state(const TokenConstraints& c, const ConstraintState& s, int32_t y);

// Appends to `out` the tokens that would advance an include phrase from state s: the next token
// of the spelling in progress, or the first token of every spelling of every unmet phrase
// (duplicates possible).
void advancing_tokens(const TokenConstraints& c, const ConstraintState& s,
                      std::vector<int32_t>& out);

// Appends to `out` every token y such that `prefix` + y would end with an exclude phrase.
// prefix: the hypothesis's tokens so far, oldest first (only its last max-phrase-length − 1
// tokens matter).
void banned_tokens(const TokenConstraints& c, std::span<const int32_t> prefix,
                   std::vector<int32_t>& out);
// The longest exclude phrase's length (how much of a prefix banned_tokens reads, plus one).
int longest_exclude(const TokenConstraints& c);

// Throws UsageError naming the phrase when a phrase has no spelling, a spelling is empty or
// holds an id outside [0, V) or one of `reserved` (<pad>, <s>, </s>).
void validate(const TokenConstraints& c, int V, std::span<const int32_t> reserved);

}  // namespace nazar
