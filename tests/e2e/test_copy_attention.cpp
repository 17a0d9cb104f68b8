// End-to-end copy attention (models/copy.h): a copy model emits source words that are not in its
// target vocabulary. (1) Hand-set gate (p_gen ≈ 0): greedy and beam search emit, at every step,
// the extended id of the most attended source position. (2) Trained briefly on a copy task whose
// words are mostly outside the target vocabulary, greedy decoding reproduces held-out sentences
// made of identifiers never seen in training. Fixed seeds and step budgets, no timing.
#include "nazar/data/extended_vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/optim.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace nazar {
namespace test_copy_attention {
namespace {

// Source ids 4..63 (60 symbols), target vocabulary V = 8: ids 4..7 are the source symbols 4..7
// ("common words"); every other symbol exists on the target side only as a copy.
constexpr int kV = 8;

ModelConfig copy_config(DecoderKind kind) {
    ModelConfig c;
    c.src_vocab_size = 64;
    c.tgt_vocab_size = kV;
    c.embedding_size = 16;
    c.encoder = {.cell = CellType::gru, .hidden_size = 24, .num_layers = 1, .bidirectional = true};
    c.decoder.kind = kind;
    c.decoder.hidden_size = 32;
    c.decoder.input_feeding = kind == DecoderKind::luong;
    c.attention.score = kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive;
    c.attention.attention_size = 24;
    c.copy_attention = true;
    return c;
}

// A sentence's extended ids: common words keep their id, others get V + k by first occurrence.
std::vector<int32_t> extended(const std::vector<int32_t>& s) {
    std::vector<int32_t> out, seen;
    for (int32_t x : s) {
        if (x < kV) {
            out.push_back(x);
            continue;
        }
        const auto it = std::find(seen.begin(), seen.end(), x);
        out.push_back(kV + static_cast<int32_t>(it - seen.begin()));
        if (it == seen.end()) seen.push_back(x);
    }
    return out;
}

std::vector<int32_t> target_ids(const std::vector<int32_t>& s) {  // tgt_in/tgt_out: <unk>
    std::vector<int32_t> out;
    for (int32_t x : s) out.push_back(x < kV ? x : 1);
    return out;
}

Batch copy_batch(const std::vector<std::vector<int32_t>>& sents) {
    std::vector<std::vector<int32_t>> tgt, ext;
    for (const auto& s : sents) {
        tgt.push_back(target_ids(s));
        ext.push_back(extended(s));
    }
    Batch b = test::make_batch(sents, tgt);
    set_copy_ids(b, ext, ext);
    return b;
}

// symbols from [lo, hi) with common words mixed in
std::vector<std::vector<int32_t>> sentences(Rng& rng, int n, int lo, int hi) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> s(3 + rng.below(4));
        for (auto& x : s)
            x = rng.below(3) == 0 ? 4 + static_cast<int32_t>(rng.below(4))
                                  : lo + static_cast<int32_t>(rng.below(hi - lo));
        out.push_back(s);
    }
    return out;
}

TEST(CopyAttention, HandSetGateCopiesTheMostAttendedWord) {
    Seq2Seq model(copy_config(DecoderKind::bahdanau), 3);
    model.copy_gate.linear.params.weight.zero();
    model.copy_gate.linear.params.bias[0] = -30.0f;  // p_gen ≈ 1e-13: only copies
    const Batch b = copy_batch({{40, 5, 41, 40}, {50, 51}});
    const GreedyOptions o{.max_length_ratio = 0, .max_length_extra = 4, .max_length = 4};
    const auto out = greedy_decode(model, b.src, b.src_lengths, b.S, o, b.src_copy);
    for (int s = 0; s < b.B; ++s) {
        ASSERT_EQ(out[s].tokens.size(), 4u);
        ASSERT_EQ(out[s].p_gen.size(), 4u);
        for (int t = 0; t < 4; ++t) {
            // the id with the most attention summed over its positions (a repeated word adds up)
            const ConstTensorView row = out[s].attention.select(t);
            std::vector<double> mass(kV + 4, 0.0);
            for (int i = 0; i < row.numel(); ++i)
                mass[static_cast<std::size_t>(b.src_copy[static_cast<std::size_t>(s) * b.S + i])] +=
                    row[i];
            const int best =
                static_cast<int>(std::max_element(mass.begin(), mass.end()) - mass.begin());
            EXPECT_EQ(out[s].tokens[t], best);
            EXPECT_LT(out[s].p_gen[t], 1e-6f);
        }
    }
    // beam size 1 is greedy, token for token, with the same p_gen
    const auto beam =
        beam_search(model, b.src, b.src_lengths, b.S,
                    {.beam_size = 1, .max_length_ratio = 0, .max_length_extra = 4, .max_length = 4},
                    b.src_copy);
    for (int s = 0; s < b.B; ++s) {
        EXPECT_EQ(beam[s].front().tokens, out[s].tokens);
        EXPECT_EQ(beam[s].front().p_gen, out[s].p_gen);
        EXPECT_NEAR(beam[s].front().log_prob, out[s].score, 1e-4);
    }
    // the greedy score is the forced score of its output (both log(P + ε))
    std::vector<std::vector<int32_t>> hyps;
    for (const auto& r : out) hyps.push_back(r.tokens);
    std::vector<std::vector<int32_t>> src = {{40, 5, 41, 40}, {50, 51}}, tgt;
    for (const auto& h : hyps) tgt.push_back(target_ids({h.begin(), h.end()}));
    Batch forced = test::make_batch(src, tgt);
    std::vector<std::vector<int32_t>> src_ext = {extended(src[0]), extended(src[1])};
    set_copy_ids(forced, src_ext, hyps);
    // the outputs ran to the limit without </s>: score only the four tokens (drop the </s>)
    for (int s = 0; s < forced.B; ++s)
        forced.tgt_copy[static_cast<std::size_t>(s) * forced.T + 4] = 0;
    std::vector<double> scores(2);
    TrainPass(model).score(forced, scores);
    for (int s = 0; s < 2; ++s) EXPECT_NEAR(scores[s], out[s].score, 1e-3);
}

void learns_to_copy_unseen_words(DecoderKind kind, int min_exact) {
    Rng data_rng(5);
    const auto train = sentences(data_rng, 48, 8, 40);  // identifiers 8..39
    const auto held = sentences(data_rng, 16, 40, 64);  // identifiers never trained on
    const Batch batch = copy_batch(train);
    Seq2Seq model(copy_config(kind), 7);
    ParamList params = model.parameters();
    Optimizer adam = Optimizer::adam(params, {.lr = 1e-2});
    Rng rng(3);
    for (int step = 0; step < 300; ++step) {
        zero_grads(params);
        TrainPass(model).train_step(batch, {}, rng);
        adam.step();
    }
    const Batch test = copy_batch(held);
    const auto out = greedy_decode(model, test.src, test.src_lengths, test.S, {}, test.src_copy);
    int exact = 0, copied = 0;
    for (std::size_t i = 0; i < held.size(); ++i) {
        std::vector<int32_t> want = extended(held[i]);
        want.push_back(3);
        exact += out[i].tokens == want;
        for (int32_t y : out[i].tokens) copied += y >= kV;
    }
    EXPECT_GT(copied, 0) << "no source-only word was emitted";
    // a model without copy attention cannot emit ids >= V: 0 of these sentences
    EXPECT_GE(exact, min_exact) << exact << " of " << held.size() << " held-out sentences exact";
    std::printf("%d of %zu held-out sentences exact, %d copied tokens\n", exact, held.size(),
                copied);
}

TEST(CopyAttention, BahdanauLearnsToCopyUnseenWords) {
    learns_to_copy_unseen_words(DecoderKind::bahdanau, 10);  // measured: 13 of 16
}
TEST(CopyAttention, LuongLearnsToCopyUnseenWords) {
    learns_to_copy_unseen_words(DecoderKind::luong, 5);  // measured: 7 of 16
}

}  // namespace
}  // namespace test_copy_attention
}  // namespace nazar
