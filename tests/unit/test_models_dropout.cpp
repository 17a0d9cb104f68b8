// The model's dropout sites (seq2seq.h DropoutMasks / DropoutOptions: embeddings, encoder states,
// decoder output, attention weights) and word dropout: masks of
// ones are the identity, evaluation never drops, the masks come from the training Rng in the
// documented order, per-sentence masks, bad masks are errors; word_dropout's fraction and what it
// never touches. Gradients: tests/grad/test_grad_models.cpp; PyTorch parity with fixed masks:
// tests/parity/test_parity_models.cpp (the *_dropout cases).
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nazar {
namespace test_models_dropout {
namespace {

using test::tiny_batch;
using test::tiny_config;

std::vector<Tensor> grads_of(Seq2Seq& m) {
    std::vector<Tensor> out;
    for (const auto& p : m.parameters()) out.push_back(*p.grad);
    return out;
}

DropoutMasks ones(const Seq2Seq& m, const Batch& b) {
    const int E = m.config().embedding_size, C = m.encoder.output_size(),
              D = m.decoder.output_size();
    DropoutMasks k;
    k.src_emb = Tensor({b.B, b.S, E});
    k.enc_out = Tensor({b.B, b.S, C});
    k.tgt_emb = Tensor({b.T, b.B, E});
    k.dec_out = Tensor({b.T, b.B, D});
    k.attention = Tensor({b.T, b.B, b.S});
    for (Tensor* t : {&k.src_emb, &k.enc_out, &k.tgt_emb, &k.dec_out, &k.attention}) t->fill(1.0f);
    return k;
}

// Masks of ones at every site give the undropped step (loss and every gradient).
TEST(ModelDropout, MasksOfOnesAreTheIdentity) {
    for (const auto kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
        auto c = tiny_config(kind,
                             kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive);
        Seq2Seq m(c, 5);
        const Batch b = tiny_batch();
        ParamList params = m.parameters();
        zero_grads(params);
        Rng r1(1), r2(1);
        const double plain = TrainPass(m).train_step(b, {.grad_scale = 1.0f}, r1).loss;
        const std::vector<Tensor> g0 = grads_of(m);
        zero_grads(params);
        const DropoutMasks k = ones(m, b);
        const double masked =
            TrainPass(m).train_step(b, {.grad_scale = 1.0f, .masks = &k}, r2).loss;
        // equal up to float rounding: the generator then reads a copy of o_t (other alignment
        // for the SIMD kernels) and Luong leaves its batched attention steps for the per-step path
        EXPECT_NEAR(plain, masked, 1e-6 * plain);
        const std::vector<Tensor> g1 = grads_of(m);
        for (std::size_t i = 0; i < g0.size(); ++i)
            EXPECT_LE(max_rel_error(g1[i], g0[i]), 1e-5) << params[i].name;
    }
}

// Dropout acts in train_step only: evaluation, scores and the step API are unchanged by it, and
// a dropped training step leaves nothing behind.
TEST(ModelDropout, EvaluationNeverDrops) {
    auto c = tiny_config();
    c.decoder.deep_output = true;
    Seq2Seq m(c, 5);
    const Batch b = tiny_batch();
    const double before = TrainPass(m).eval_loss(b).loss;
    std::vector<double> s0(2), s1(2);
    TrainPass(m).score(b, s0);
    Rng rng(4);
    const TrainOptions opt{
        .dropout = {
            .embedding = 0.5f, .encoder_output = 0.5f, .decoder_output = 0.5f, .attention = 0.5f}};
    const double train = TrainPass(m).train_step(b, opt, rng).loss;
    EXPECT_NE(train, before);
    EXPECT_EQ(TrainPass(m).eval_loss(b).loss, before);
    TrainPass(m).score(b, s1);
    EXPECT_EQ(s0, s1);
}

// p = 0 everywhere draws nothing (runs without dropout keep their random streams); each site
// with p > 0 draws one uniform per mask element, in the order src_emb, enc_out, tgt_emb, dec_out,
// attention.
TEST(ModelDropout, DrawsFromTheTrainingRngInOrder) {
    Seq2Seq m(tiny_config(), 5);
    const Batch b = tiny_batch();  // B 2, S 4, T 4; E 4, C 6, d_out 5
    Rng rng(8);
    const Rng::State start = rng.state();
    TrainPass(m).train_step(b, {}, rng);
    EXPECT_EQ(rng.state(), start);
    const int64_t per_element = 2 * 4 * 4 + 2 * 4 * 6 + 4 * 2 * 4 + 4 * 2 * 5 + 4 * 2 * 4;
    const int64_t per_sentence = 2 * 4 + 2 * 6 + 2 * 4 + 2 * 5 + 2 * 4;
    for (const bool seq : {false, true}) {
        Rng r(8);
        TrainPass(m).train_step(b,
                                {.dropout = {.embedding = 0.2f,
                                             .encoder_output = 0.2f,
                                             .decoder_output = 0.2f,
                                             .attention = 0.2f,
                                             .per_sequence = seq}},
                                r);
        Rng want(8);
        for (int64_t i = 0; i < (seq ? per_sentence : per_element); ++i) want.uniform();
        EXPECT_EQ(r.state(), want.state()) << (seq ? "per sentence" : "per element");
    }
    // the same seed gives the same step; another seed other masks
    Rng a(3), a2(3), z(4);
    const TrainOptions opt{.dropout = {.embedding = 0.3f, .decoder_output = 0.3f}};
    const double la = TrainPass(m).train_step(b, opt, a).loss;
    EXPECT_EQ(la, TrainPass(m).train_step(b, opt, a2).loss);
    EXPECT_NE(la, TrainPass(m).train_step(b, opt, z).loss);
}

TEST(ModelDropout, BadMasksAndProbabilitiesAreErrors) {
    Seq2Seq m(tiny_config(), 5);
    const Batch b = tiny_batch();
    Rng rng(1);
    DropoutMasks k = ones(m, b);
    k.enc_out = Tensor({2, 4, 5});  // C is 6
    EXPECT_THROW(TrainPass(m).train_step(b, {.masks = &k}, rng), Error);
    EXPECT_THROW(TrainPass(m).train_step(b, {.dropout = {.embedding = 1.0f}}, rng), Error);
    EXPECT_THROW(TrainPass(m).train_step(b, {.dropout = {.decoder_output = -0.1f}}, rng), Error);
}

// ---- word dropout ----

TEST(WordDropout, ReplacesRealInputTokensOnly) {
    // 200 sentences of 30 source / 20 target tokens, some padded
    std::vector<std::vector<int32_t>> src, tgt;
    for (int i = 0; i < 200; ++i) {
        src.push_back(std::vector<int32_t>(static_cast<std::size_t>(20 + i % 11), 5 + i % 4));
        tgt.push_back(std::vector<int32_t>(static_cast<std::size_t>(10 + i % 11), 6 + i % 3));
    }
    const Batch orig = test::make_batch(src, tgt);
    Batch b = orig;
    const SpecialIds ids{};
    Rng rng(2);
    word_dropout(b, 0.25f, ids, rng);
    EXPECT_EQ(b.tgt_out, orig.tgt_out);  // the targets the loss reads
    EXPECT_EQ(b.src_lengths, orig.src_lengths);
    EXPECT_EQ(b.tgt_lengths, orig.tgt_lengths);
    int64_t real = 0, unk = 0, draws = 0;
    for (int i = 0; i < b.B; ++i) {
        for (int s = 0; s < b.S; ++s) {
            const int32_t was = orig.src_at(i, s), now = b.src_at(i, s);
            if (s >= orig.src_lengths[i]) {
                EXPECT_EQ(now, was);  // padding
                continue;
            }
            ++real;
            ++draws;
            EXPECT_TRUE(now == was || now == ids.unk);
            unk += now == ids.unk;
        }
        for (int t = 0; t < b.T; ++t) {
            const int32_t was = orig.tgt_in_at(i, t), now = b.tgt_in_at(i, t);
            if (t == 0 || t >= orig.tgt_lengths[i]) {
                EXPECT_EQ(now, was);  // <s> and padding
                continue;
            }
            ++real;
            ++draws;
            EXPECT_TRUE(now == was || now == ids.unk);
            unk += now == ids.unk;
        }
    }
    EXPECT_NEAR(static_cast<double>(unk) / static_cast<double>(real), 0.25, 0.02);  // sd ≈ 0.005
    Rng want(2);
    for (int64_t i = 0; i < draws; ++i) want.uniform();
    EXPECT_EQ(rng.state(), want.state());  // one draw per real input token
    // p = 0: nothing changes, nothing drawn
    Batch same = orig;
    Rng r0(2);
    word_dropout(same, 0.0f, ids, r0);
    EXPECT_EQ(same.src, orig.src);
    EXPECT_EQ(same.tgt_in, orig.tgt_in);
    EXPECT_EQ(r0.state(), Rng(2).state());
    EXPECT_THROW(word_dropout(same, 1.0f, ids, r0), Error);
}

}  // namespace
}  // namespace test_models_dropout
}  // namespace nazar

namespace nazar {
namespace test_models_dropout {
namespace {

// Attention-weight dropout at the attention itself: c = Σ_i α_i m_i h_i (not renormalised), the
// weights reported stay α, and global / local windows index the mask by source position.
TEST(AttentionDropout, ContextSumsMaskedWeights) {
    for (const auto local : {LocalMode::global, LocalMode::monotonic}) {
        Rng rng(5);
        Attention att({.score = ScoreKind::general,
                       .local = local,
                       .window = 1,
                       .query_size = 3,
                       .context_size = 4},
                      rng);
        const int B = 2, S = 5, C = 4;
        Tensor h = test::random_tensor(rng, {B, S, C}), q = test::random_tensor(rng, {B, 3});
        const std::vector<int> len{5, 3};
        AttentionKeys keys;
        att.precompute(h, keys);
        Tensor plain({B, C}), dropped({B, C}), dense({B, S});
        AttentionStepCache c0, c1;
        att.forward(q, keys, h, len, 2, plain, c0);
        c1.drop_mask = Tensor::from({B, S}, std::vector<float>{2, 0, 2, 2, 0, 0, 2, 2, 0, 2});
        att.forward(q, keys, h, len, 2, dropped, c1);
        EXPECT_EQ(max_abs_diff(c0.weights, c1.weights), 0.0);  // α is reported, not α ⊙ m
        dense_weights(c0, dense);
        for (int b = 0; b < B; ++b)
            for (int k = 0; k < C; ++k) {
                double want = 0;
                for (int i = 0; i < S; ++i)
                    want +=
                        static_cast<double>(dense.at(b, i)) * c1.drop_mask.at(b, i) * h.at(b, i, k);
                EXPECT_NEAR(dropped.at(b, k), want, 1e-5) << "row " << b << " column " << k;
            }
        AttentionStepCache bad;
        bad.drop_mask = Tensor({B, S + 1});
        EXPECT_THROW(att.forward(q, keys, h, len, 2, dropped, bad), Error);
    }
}

}  // namespace
}  // namespace test_models_dropout
}  // namespace nazar
