// The per-sentence extended vocabulary of copy attention (docs/spec.md §7a, models/copy.h).
//
// Source side: token i of a sentence gets the extended id x̂_i = the target vocabulary's id of
// its string when the target vocabulary holds that string (specials never: a literal "<unk>"
// piece is an ordinary string), else V + k, where k numbers the sentence's distinct such strings
// in order of first occurrence (the same string twice gets the same id). Strings are compared
// exactly, as pieces (word, character or SentencePiece pieces alike).
// Target side: the target vocabulary's id when it holds the string; else the extended id of the
// same string in the sentence's source (a copy-only target); else <unk>.
// The map (the X_b strings of ids V … V + X_b − 1) turns emitted extended ids back into text.
#pragma once

#include "nazar/data/vocab.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

struct ExtendedVocab {
    int32_t base = 0;                // V
    std::vector<std::string> words;  // words[k] is extended id V + k

    int32_t size() const { return base + static_cast<int32_t>(words.size()); }
    // The extended id of a string: the target id, a word's id, or <unk>.
    int32_t id(std::string_view piece, const Vocab& tgt) const;
    // The string of an extended id (>= V); ids < V belong to the target vocabulary.
    std::string_view word(int32_t id) const;
};

// x̂ of a source sentence's pieces (appended to `ids`), and the sentence's map.
ExtendedVocab extend_source(std::span<const std::string_view> pieces, const Vocab& tgt,
                            std::vector<int32_t>& ids);

// A pair's extended ids from its pieces: x̂ of the source, then the target's (source-only
// strings as their extended id, others <unk>). Returns the sentence's map.
ExtendedVocab extend_pair(std::span<const std::string_view> src_pieces,
                          std::span<const std::string_view> tgt_pieces, const Vocab& tgt,
                          std::vector<int32_t>& src_ids, std::vector<int32_t>& tgt_ids);

// Fills batch.src_copy / tgt_copy (the layout of src / tgt_out, pad <pad>, </s> after each
// target) from each pair's extended ids; tgt may be empty (no targets).
struct Batch;  // data/batcher.h
void set_copy_ids(Batch& batch, std::span<const std::vector<int32_t>> src,
                  std::span<const std::vector<int32_t>> tgt);

// Ids -> text like Vocab::decode (stops at </s>, skips <pad>/<s>), extended ids as their word.
std::string decode_extended(std::span<const int32_t> ids, const Vocab& tgt,
                            const ExtendedVocab& ext, const Tokenizer& tokenizer);

}  // namespace nazar
