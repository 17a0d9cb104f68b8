// Vocabularies: piece <-> id. Ids 0..3 are always <pad>, <unk>, <s>, </s>; pieces follow.
//
// The specials live outside the piece table: a literal "<s>" in the data is an ordinary piece
// with its own id, never confused with the sentence-start symbol. Built vocabularies order
// pieces by count (descending), ties by bytes (ascending), so the same data gives the same ids.
// max_size counts the 4 specials; min_freq drops rarer pieces (they read as <unk>).
//
// For spm tokenizers the vocabulary is the SentencePiece model's piece list (from_spm): the
// model's own size is the limit, and byte-fallback pieces keep their ids even when unseen.
//
// to_json/from_json give the string stored in the model file's metadata.
#pragma once

#include "nazar/data/tokenizer.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nazar {

struct VocabOptions {
    int max_size = 0;  // 0 = no limit; otherwise >= 5 (the 4 specials + 1 piece)
    int min_freq = 1;  // pieces seen fewer times (in kept pairs) become <unk>
};

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Interns pieces while a corpus loads (provisional ids in first-seen order) and counts them.
class PieceCounter {
public:
    int32_t intern(std::string_view piece);  // id, new pieces get the next one
    void count(int32_t id, int64_t n = 1) { counts_[id] += n; }
    int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
    const std::vector<std::string_view>& pieces() const { return pieces_; }
    const std::vector<int64_t>& counts() const { return counts_; }

private:
    PieceMap map_;
    std::vector<std::string_view> pieces_;  // views of map_'s keys (node-based, stable)
    std::vector<int64_t> counts_;
};

class Vocab {
public:
    static constexpr int32_t pad = 0, unk = 1, bos = 2, eos = 3;
    static constexpr int32_t kNumSpecials = 4;
    static constexpr std::string_view kSpecialNames[kNumSpecials] = {"<pad>", "<unk>", "<s>",
                                                                     "</s>"};

    Vocab() = default;  // the specials only
    // From counted pieces; `remap` (if given) receives the final id of every provisional id.
    static Vocab build(const PieceCounter& counter, const VocabOptions& options,
                       std::vector<int32_t>* remap = nullptr);
    static Vocab from_pieces(std::span<const std::string> pieces);  // ids 4.. in this order
    static Vocab from_spm(const Tokenizer& spm);

    int32_t size() const { return kNumSpecials + static_cast<int32_t>(pieces_.size()); }
    int32_t id(std::string_view piece) const;  // <unk> when absent
    bool contains(std::string_view piece) const { return map_.find(piece) != map_.end(); }
    std::string_view piece(int32_t id) const;  // specials give their names

    // Ids -> text: stops at </s>, skips <pad> and <s>; <unk> decodes as the piece "<unk>"
    // (char/word) or as SentencePiece's unknown surface " ⁇ " (spm).
    std::string decode(std::span<const int32_t> ids, const Tokenizer& tokenizer) const;
    void encode(const Pieces& pieces, std::vector<int32_t>& out) const;  // appends

    std::string to_json() const;  // {"specials": [...], "pieces": [...]}
    static Vocab from_json(std::string_view json);

    bool operator==(const Vocab& o) const { return pieces_ == o.pieces_; }

private:
    void index();
    std::vector<std::string> pieces_;  // id - kNumSpecials -> piece
    PieceMap map_;                     // piece -> id
};

}  // namespace nazar
