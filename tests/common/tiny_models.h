// Tiny seq2seq configurations and a hand-made padded batch for the model tests
// (tests/unit/test_models_*.cpp, tests/grad/test_grad_models.cpp, tests/e2e/test_overfit_copy.cpp).
#pragma once

#include "nazar/data/batcher.h"
#include "nazar/data/vocab.h"
#include "nazar/models/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace nazar::test {

// V = 10 (ids 4..9 are pieces), E = 4, bidirectional GRU encoder of 3 (C = 6), decoder of 5, A = 4.
inline ModelConfig tiny_config(DecoderKind kind = DecoderKind::bahdanau,
                               ScoreKind score = ScoreKind::additive) {
    ModelConfig c;
    c.src_vocab_size = 10;
    c.tgt_vocab_size = 10;
    c.embedding_size = 4;
    c.encoder = {.cell = CellType::gru,
                 .hidden_size = 3,
                 .num_layers = 1,
                 .bidirectional = true,
                 .dropout = 0};
    c.decoder.kind = kind;
    c.decoder.hidden_size = 5;
    c.attention.score = score;
    c.attention.attention_size = 4;
    return c;
}

// Builds a right-padded batch from source and target sentences (targets without <s>/</s>).
inline Batch make_batch(const std::vector<std::vector<int32_t>>& srcs,
                        const std::vector<std::vector<int32_t>>& tgts, int bos = 2, int eos = 3,
                        int pad = 0) {
    Batch b;
    b.B = static_cast<int>(srcs.size());
    for (const auto& s : srcs) b.S = std::max(b.S, static_cast<int>(s.size()));
    for (const auto& t : tgts) b.T = std::max(b.T, static_cast<int>(t.size()) + 1);
    b.src.assign(static_cast<std::size_t>(b.B) * b.S, pad);
    b.tgt_in.assign(static_cast<std::size_t>(b.B) * b.T, pad);
    b.tgt_out.assign(static_cast<std::size_t>(b.B) * b.T, pad);
    for (int i = 0; i < b.B; ++i) {
        const auto& s = srcs[i];
        const auto& t = tgts[i];
        for (std::size_t j = 0; j < s.size(); ++j) b.src[i * b.S + j] = s[j];
        b.tgt_in[i * b.T] = bos;
        for (std::size_t j = 0; j < t.size(); ++j) {
            b.tgt_in[i * b.T + j + 1] = t[j];
            b.tgt_out[i * b.T + j] = t[j];
        }
        b.tgt_out[i * b.T + t.size()] = eos;
        b.src_lengths.push_back(static_cast<int>(s.size()));
        b.tgt_lengths.push_back(static_cast<int>(t.size()) + 1);
        b.index.push_back(i);
    }
    return b;
}

// B = 2: the second sentence is padded on both sides (S = 4, T = 4).
inline Batch tiny_batch() {
    return make_batch({{5, 6, 7, 8}, {9, 5}}, {{5, 6, 7}, {8}});
}

// B = 4, S = 4, T = 6: three sentences padded on the target side, three on the source side.
inline Batch tiny_batch4() {
    return make_batch({{5, 6, 7, 8}, {9, 5}, {4, 4, 6}, {7}},
                      {{5, 6, 7, 8, 9}, {8}, {6, 6, 4}, {9, 9}});
}

// Source sentences right-padded with 0 into one (B, S) row-major block (the decoding tests).
struct Sources {
    std::vector<int32_t> ids;
    std::vector<int> lengths;
    int S = 0;
};
inline Sources pad(const std::vector<std::vector<int32_t>>& sents) {
    Sources s;
    for (const auto& x : sents) s.S = std::max(s.S, static_cast<int>(x.size()));
    for (const auto& x : sents) {
        for (int i = 0; i < s.S; ++i) s.ids.push_back(i < static_cast<int>(x.size()) ? x[i] : 0);
        s.lengths.push_back(static_cast<int>(x.size()));
    }
    return s;
}

// A vocabulary of n entries: the specials, then pieces "p4" .. "p<n-1>".
inline Vocab vocab_of_size(int n) {
    std::vector<std::string> pieces;
    for (int i = Vocab::kNumSpecials; i < n; ++i) pieces.push_back(fmt::format("p{}", i));
    return Vocab::from_pieces(pieces);
}

}  // namespace nazar::test
