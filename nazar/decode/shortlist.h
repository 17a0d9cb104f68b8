// Vocabulary shortlists (docs/decoding.md "Shortlists"): for each batch, the target tokens the
// output layer computes are the most frequent target tokens, the likeliest translations of
// every source token in the batch, the specials and any constraint tokens — a few hundred of
// thousands — so the output layer (most of a decoder step at batch 1) costs that much less.
// As Marian's --shortlist and Sockeye's --restrict-lexicon; log-probs are normalised over the
// shortlist.
//
// The table (`nazar shortlist`) is learned from a parallel corpus, tokenized with the model's
// tokenizers: for each source token s, the target tokens t ranked by the Dice coefficient of
// their sentence co-occurrence, 2 c(s, t) / (c(s) + c(t)), among those seen with s at least
// twice; and the target tokens by sentence frequency. File (UTF-8 TSV, pieces as the vocabulary
// writes them):
//   #nazar-shortlist 1
//   <frequent>\t<piece>\t<count>        the most frequent target tokens, most frequent first
//   <source piece>\t<target piece>\t<score>   per source token, best first
#pragma once

#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/decode/constraints.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nazar {

struct ShortlistOptions {
    int frequent = 100;  // the most frequent target tokens, always in
    int best = 50;       // translations per source token
};

class Shortlist {
public:
    Shortlist() = default;
    // Reads a table for a model's vocabularies (pieces the vocabularies lack are skipped),
    // keeping the `frequent` and `best` entries with the highest scores (counts for
    // <frequent>), in any file order. Errors name the file and line.
    static Shortlist load(const std::string& path, const Vocab& src_vocab, const Vocab& tgt_vocab,
                          const ShortlistOptions& options = {});

    // The target ids of a batch (src: B·S ids, lengths): the specials `always`, the frequent
    // tokens, each source token's best, every token of `constraints`; increasing.
    std::vector<int32_t> candidates(std::span<const int32_t> src, std::span<const int> lengths,
                                    int S, std::span<const TokenConstraints> constraints,
                                    std::span<const int32_t> always) const;

    int target_vocab_size() const { return tgt_size_; }
    std::size_t entries() const;  // source tokens with translations

private:
    int tgt_size_ = 0;
    std::vector<int32_t> frequent_;
    std::vector<std::vector<int32_t>> best_;  // per source id
};

// Builds the table from (source, target) pairs of text with the tokenizers and vocabularies of
// a model, keeping up to `keep` translations per source token and `keep` frequent tokens, and
// writes it to `path` (atomically).
struct ShortlistBuildStats {
    int64_t pairs = 0, source_tokens = 0, entries = 0;
};
ShortlistBuildStats build_shortlist(const std::vector<std::pair<std::string, std::string>>& pairs,
                                    const Tokenizer& src_tok, const Vocab& src_vocab,
                                    const Tokenizer& tgt_tok, const Vocab& tgt_vocab, int keep,
                                    const std::string& path);

}  // namespace nazar
