// The per-sentence extended vocabulary of copy attention (extended_vocab.h).
#include "nazar/data/extended_vocab.h"

#include "nazar/core/check.h"
#include "nazar/data/batcher.h"

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

ExtendedVocab extend_pair(std::span<const std::string_view> src_pieces,
                          std::span<const std::string_view> tgt_pieces, const Vocab& tgt,
                          std::vector<int32_t>& src_ids, std::vector<int32_t>& tgt_ids) {
    src_ids.clear();
    tgt_ids.clear();
    ExtendedVocab ext = extend_source(src_pieces, tgt, src_ids);
    for (std::string_view p : tgt_pieces) tgt_ids.push_back(ext.id(p, tgt));
    return ext;
}

void set_copy_ids(Batch& batch, std::span<const std::vector<int32_t>> src,
                  std::span<const std::vector<int32_t>> tgt) {
    NZ_CHECK(static_cast<int>(src.size()) == batch.B &&
                 (tgt.empty() || static_cast<int>(tgt.size()) == batch.B),
             "set_copy_ids: {} sources, {} targets for a batch of {}", src.size(), tgt.size(),
             batch.B);
    batch.src_copy.assign(static_cast<std::size_t>(batch.B) * batch.S, Vocab::pad);
    batch.tgt_copy.assign(tgt.empty() ? 0 : static_cast<std::size_t>(batch.B) * batch.T,
                          Vocab::pad);
    for (int b = 0; b < batch.B; ++b) {
        NZ_CHECK(static_cast<int>(src[b].size()) == batch.src_lengths[b],
                 "set_copy_ids: {} extended ids for a source of {}", src[b].size(),
                 batch.src_lengths[b]);
        std::copy(src[b].begin(), src[b].end(),
                  batch.src_copy.begin() + static_cast<std::ptrdiff_t>(b) * batch.S);
        if (tgt.empty()) continue;
        NZ_CHECK(static_cast<int>(tgt[b].size()) + 1 == batch.tgt_lengths[b],
                 "set_copy_ids: {} extended ids for a target of {}", tgt[b].size(),
                 batch.tgt_lengths[b] - 1);
        int32_t* row = batch.tgt_copy.data() + static_cast<std::size_t>(b) * batch.T;
        std::copy(tgt[b].begin(), tgt[b].end(), row);
        row[tgt[b].size()] = Vocab::eos;
    }
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
