// The per-sentence extended vocabulary of copy attention (extended_vocab.h).
#include "nazar/data/extended_vocab.h"

#include "nazar/core/check.h"

#include <algorithm>

namespace nazar {

int32_t ExtendedVocab::id(std::string_view piece, const Vocab& tgt) const {
    if (tgt.contains(piece)) return tgt.id(piece);
    const auto it = std::find(words.begin(), words.end(), piece);
    return it == words.end() ? Vocab::unk : base + static_cast<int32_t>(it - words.begin());
}

std::string_view ExtendedVocab::word(int32_t id) const {
    NZ_CHECK(id >= base && id < size(), "extended id {} outside [{}, {})", id, base, size());
    return words[static_cast<std::size_t>(id - base)];
}

ExtendedVocab extend_source(std::span<const std::string_view> pieces, const Vocab& tgt,
                            std::vector<int32_t>& ids) {
    ExtendedVocab ext{.base = tgt.size(), .words = {}};
    for (std::string_view p : pieces) {
        if (tgt.contains(p)) {
            ids.push_back(tgt.id(p));
            continue;
        }
        const auto it = std::find(ext.words.begin(), ext.words.end(), p);
        ids.push_back(ext.base + static_cast<int32_t>(it - ext.words.begin()));
        if (it == ext.words.end()) ext.words.emplace_back(p);
    }
    return ext;
}

std::string decode_extended(std::span<const int32_t> ids, const Vocab& tgt,
                            const ExtendedVocab& ext, const Tokenizer& tokenizer) {
    std::vector<std::string_view> pieces;
    pieces.reserve(ids.size());
    for (int32_t id : ids) {
        if (id == Vocab::eos) break;
        if (id == Vocab::pad || id == Vocab::bos) continue;
        pieces.push_back(id >= ext.base ? ext.word(id) : tgt.piece(id));
    }
    return tokenizer.decode(std::span<const std::string_view>(pieces));
}

}  // namespace nazar
