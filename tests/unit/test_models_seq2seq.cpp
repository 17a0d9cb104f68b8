// Seq2Seq: parameter names (docs/design.md §5), score/loss consistency, padding invariance, the
// incremental step API against forced decoding, row selection, += gradients, determinism.
#include "nazar/core/gemm/nn512.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace nazar {
namespace test_models_seq2seq {
namespace {

using test::make_batch;
using test::tiny_batch;
using test::tiny_config;

std::vector<std::string> names(Seq2Seq& m) {
    std::vector<std::string> out;
    for (const auto& p : m.parameters()) out.push_back(p.name + " " + p.value->shape().str());
    return out;
}

TEST(Seq2Seq, BahdanauParameterNamesAndShapes) {
    Seq2Seq m(tiny_config());
    const std::vector<std::string> want = {
        "encoder.embedding.weight (10, 4)",
        "encoder.rnn.weight_ih_l0 (9, 4)",
        "encoder.rnn.weight_hh_l0 (9, 3)",
        "encoder.rnn.bias_ih_l0 (9,)",
        "encoder.rnn.bias_hh_l0 (9,)",
        "encoder.rnn.weight_ih_l0_reverse (9, 4)",
        "encoder.rnn.weight_hh_l0_reverse (9, 3)",
        "encoder.rnn.bias_ih_l0_reverse (9,)",
        "encoder.rnn.bias_hh_l0_reverse (9,)",
        "bridge.weight (5, 3)",
        "bridge.bias (5,)",  // backward-first: h_0^bwd has H_enc = 3
        "decoder.embedding.weight (10, 4)",
        "decoder.rnn.weight_ih_l0 (15, 10)",  // [E ; C] = 4 + 6
        "decoder.rnn.weight_hh_l0 (15, 5)",
        "decoder.rnn.bias_ih_l0 (15,)",
        "decoder.rnn.bias_hh_l0 (15,)",
        "attention.query.weight (4, 5)",
        "attention.key.weight (4, 6)",
        "attention.v.weight (1, 4)",
        "generator.weight (10, 5)",
        "generator.bias (10,)"};
    EXPECT_EQ(names(m), want);
}

TEST(Seq2Seq, LuongAndDeepOutputParameterNames) {
    auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.decoder.input_feeding = true;
    c.decoder.num_layers = 2;
    c.decoder.cell = CellType::lstm;
    c.attention.local = LocalMode::predictive;
    c.attention.position_size = 3;
    c.embedding_size = 5;
    c.tie_target_embeddings = true;
    Seq2Seq m(c);
    const auto n = names(m);
    auto has = [&](const std::string& s) { return std::find(n.begin(), n.end(), s) != n.end(); };
    EXPECT_TRUE(has("bridge.weight (10, 6)"));              // mean over C = 6, two layers of 5
    EXPECT_TRUE(has("decoder.rnn.weight_ih_l0 (20, 10)"));  // LSTM 4H; [E ; s̃] = 5 + 5
    EXPECT_TRUE(has("decoder.rnn.weight_ih_l1 (20, 5)"));
    EXPECT_TRUE(has("decoder.combine.weight (5, 11)"));
    EXPECT_TRUE(has("attention.key.weight (5, 6)"));
    EXPECT_TRUE(has("attention.position.weight (3, 5)"));
    EXPECT_TRUE(has("attention.position_v.weight (1, 3)"));
    EXPECT_TRUE(has("generator.bias (10,)"));
    EXPECT_FALSE(has("generator.weight (10, 5)"));  // tied: it is decoder.embedding.weight
    EXPECT_EQ(m.generator_weight().data(), m.decoder.embedding.params.weight.data());

    auto d = tiny_config();
    d.decoder.deep_output = true;
    d.decoder.deep_output_size = 7;
    Seq2Seq md(d);
    const auto nd = names(md);
    for (const char* s :
         {"decoder.deep_output.state.weight (7, 5)", "decoder.deep_output.prev.weight (7, 4)",
          "decoder.deep_output.context.weight (7, 6)", "generator.weight (10, 7)"})
        EXPECT_NE(std::find(nd.begin(), nd.end(), s), nd.end()) << s;
}

std::vector<ModelConfig> variants() {
    std::vector<ModelConfig> v;
    v.push_back(tiny_config());
    auto deep = tiny_config();
    deep.decoder.deep_output = true;
    v.push_back(deep);
    auto feed = tiny_config(DecoderKind::luong, ScoreKind::general);
    feed.decoder.input_feeding = true;
    feed.decoder.num_layers = 2;
    v.push_back(feed);
    auto lm = tiny_config(DecoderKind::luong, ScoreKind::concat);
    lm.attention.local = LocalMode::monotonic;
    lm.attention.window = 1;
    v.push_back(lm);
    auto lp = tiny_config(DecoderKind::luong, ScoreKind::general);
    lp.attention.local = LocalMode::predictive;
    lp.attention.window = 1;
    lp.encoder.cell = CellType::lstm;
    lp.decoder.cell = CellType::lstm;
    v.push_back(lp);
    auto dot = tiny_config(DecoderKind::luong, ScoreKind::dot);  // keys are (0)-shaped for dot
    dot.decoder.hidden_size = 6;
    dot.decoder.bridge = BridgeKind::last;
    v.push_back(dot);
    return v;
}

TEST(Seq2Seq, ScoreSumsToMinusLoss) {
    for (const auto& c : variants()) {
        Seq2Seq m(c, 5);
        const Batch b = tiny_batch();
        std::vector<double> s(b.B);
        TrainPass(m).score(b, s);
        const LossStats st = TrainPass(m).eval_loss(b);
        EXPECT_EQ(st.tokens, 6);
        EXPECT_NEAR(s[0] + s[1], -st.loss, 1e-4 * st.loss);
        EXPECT_LT(s[0], 0);
        EXPECT_LT(s[1], 0);
    }
}

TEST(Seq2Seq, PaddedSentenceScoresAsIfAlone) {
    for (const auto& c : variants()) {
        Seq2Seq m(c, 5);
        std::vector<double> both(2), alone(1);
        TrainPass(m).score(tiny_batch(), both);
        TrainPass(m).score(make_batch({{9, 5}}, {{8}}), alone);
        EXPECT_NEAR(both[1], alone[0], 1e-5 * std::abs(alone[0]));
    }
}

// Forced decoding through encode / init_state / step gives score()'s numbers.
TEST(Seq2Seq, StepApiMatchesForcedScore) {
    for (const auto& c : variants()) {
        Seq2Seq m(c, 5);
        DecodeSession m_s(m);
        const Batch b = tiny_batch();
        std::vector<double> want(b.B);
        TrainPass(m).score(b, want);
        EncodedSource enc;
        m_s.encode(b.src, b.src_lengths, b.S, enc);
        DecoderState st;
        m_s.init_state(enc, st);
        Tensor lp({b.B, 10}), att({b.B, b.S});
        std::vector<double> got(b.B, 0.0);
        for (int t = 0; t < b.T; ++t) {
            std::vector<int32_t> prev = {b.tgt_in_at(0, t), b.tgt_in_at(1, t)};
            m_s.step(prev, enc, st, lp, att);
            for (int r = 0; r < b.B; ++r) {
                if (b.tgt_out_at(r, t) != 0) got[r] += lp.at(r, b.tgt_out_at(r, t));
                double sum = 0;
                for (int i = 0; i < b.S; ++i) sum += att.at(r, i);
                EXPECT_LE(sum, 1.0 + 1e-5);
                for (int i = b.src_lengths[r]; i < b.S; ++i)
                    EXPECT_EQ(att.at(r, i), 0.0f);  // padding
            }
        }
        EXPECT_EQ(st.t, b.T);
        for (int r = 0; r < b.B; ++r) EXPECT_NEAR(got[r], want[r], 1e-5 * std::abs(want[r]));
    }
}

// Steps of more than 8 rows run the generator's product on a Wᵀ packed once per batch
// (EncodedSource::generator_t; where nazar's AVX-512 kernel runs): the same log-probabilities as
// the library's product, to rounding, in step() and step_logits(). Not at 8 rows or fewer (the
// small-M kernel reads W), and not for int8 weights (their own packing).
TEST(Seq2Seq, StepsOfManyRowsUseTheGeneratorPackedForTheBatch) {
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 203;  // 6 strips of 32 columns and a partial one
    for (const int rows : {8, 9, 40}) {
        for (const Precision p : {Precision::fp32, Precision::int8}) {
            Seq2Seq m(c, 9);
            DecodeSession m_s(m);
            m.set_precision(p);
            std::vector<int32_t> src;
            std::vector<int> lengths;
            for (int r = 0; r < rows; ++r) {
                for (int t = 0; t < 4; ++t) src.push_back(static_cast<int32_t>(4 + (r + t) % 6));
                lengths.push_back(1 + r % 4);
            }
            EncodedSource enc;
            m_s.encode(src, lengths, 4, enc);
            const bool packed = rows > 8 && p == Precision::fp32 && detail::nn512_available();
            EXPECT_EQ(static_cast<bool>(enc.generator_t), packed) << rows;
            EncodedSource plain = enc;
            plain.generator_t.reset();
            const std::vector<int32_t> prev(static_cast<std::size_t>(rows), 2);
            Tensor lp({rows, 203}), want({rows, 203}), z({rows, 203}), z_want({rows, 203});
            DecoderState st;
            m_s.init_state(enc, st);
            m_s.step(prev, enc, st, lp, {});
            m_s.init_state(plain, st);
            m_s.step(prev, plain, st, want, {});
            EXPECT_LT(max_abs_diff(lp, want), 1e-5) << rows;
            EXPECT_LT(lp.at(0, 5), 0.0f);
            m_s.init_state(enc, st);
            m_s.step_logits(prev, enc, st, z, {});
            m_s.init_state(plain, st);
            m_s.step_logits(prev, plain, st, z_want, {});
            EXPECT_LT(max_abs_diff(z, z_want), 1e-5) << rows;
        }
    }
}

TEST(Seq2Seq, SelectRowsAndStateReorderBeams) {
    for (const auto& c : variants()) {
        Seq2Seq m(c, 5);
        DecodeSession m_s(m);
        const Batch b = tiny_batch();
        EncodedSource enc, wide;
        m_s.encode(b.src, b.src_lengths, b.S, enc);
        const std::vector<int> rows = {1, 0, 1};
        m_s.select_rows(enc, rows, wide);
        DecoderState st, st_wide, tmp;
        m_s.init_state(enc, st);
        m_s.init_state(wide, st_wide);
        Tensor lp({2, 10}), lpw({3, 10});
        m_s.step(std::vector<int32_t>{2, 2}, enc, st, lp, {});
        m_s.step(std::vector<int32_t>{2, 2, 2}, wide, st_wide, lpw, {});
        // reorder the wide state to {row 2, row 1, row 0} = sentences {1, 0, 1}, step again
        m_s.select_state(st_wide, std::vector<int>{2, 1, 0}, tmp);
        EXPECT_EQ(tmp.t, 1);
        m_s.step(std::vector<int32_t>{5, 6, 5}, wide, tmp, lpw, {});
        m_s.step(std::vector<int32_t>{6, 5}, enc, st, lp, {});
        for (int v = 0; v < 10; ++v) {
            EXPECT_NEAR(lpw.at(0, v), lp.at(1, v), 1e-5);
            EXPECT_NEAR(lpw.at(1, v), lp.at(0, v), 1e-5);
            EXPECT_NEAR(lpw.at(2, v), lp.at(1, v), 1e-5);
        }
    }
}

// select_rows shares the encoder states and keys (a row map, no copies): selecting from a
// selection composes the maps, and both give the log-probs of a direct selection exactly.
TEST(Seq2Seq, SelectRowsOfASelectionComposesTheRowMaps) {
    for (const auto& c : variants()) {
        Seq2Seq m(c, 5);
        DecodeSession m_s(m);
        const Batch b = tiny_batch();
        EncodedSource enc, wide, twice, direct;
        m_s.encode(b.src, b.src_lengths, b.S, enc);
        m_s.select_rows(enc, std::vector<int>{1, 0, 1}, wide);
        m_s.select_rows(wide, std::vector<int>{2, 1, 0, 1}, twice);  // sentences {1, 0, 1, 0}
        m_s.select_rows(enc, std::vector<int>{1, 0, 1, 0}, direct);
        EXPECT_EQ(twice.shared, &enc);
        EXPECT_EQ(twice.shared_rows, (std::vector<int>{1, 0, 1, 0}));
        EXPECT_EQ(twice.lengths, direct.lengths);
        DecoderState s1, s2;
        m_s.init_state(twice, s1);
        m_s.init_state(direct, s2);
        Tensor lp1({4, 10}), lp2({4, 10}), a1({4, b.S}), a2({4, b.S});
        for (int32_t y : {2, 5, 6}) {
            m_s.step(std::vector<int32_t>(4, y), twice, s1, lp1, a1);
            m_s.step(std::vector<int32_t>(4, y), direct, s2, lp2, a2);
            EXPECT_EQ(max_abs_diff(lp1, lp2), 0.0f);
            EXPECT_EQ(max_abs_diff(a1, a2), 0.0f);
        }
    }
}

TEST(Seq2Seq, GradientsAccumulateAndDefaultScaleIsMean) {
    Seq2Seq m(tiny_config(DecoderKind::luong, ScoreKind::general), 5);
    const Batch b = tiny_batch();
    ParamList params = m.parameters();
    Rng rng(1);
    zero_grads(params);
    TrainPass(m).train_step(b, {.grad_scale = 1.0f}, rng);
    std::vector<Tensor> once;
    for (const auto& p : params) once.push_back(*p.grad);
    TrainPass(m).train_step(b, {.grad_scale = 1.0f}, rng);
    for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor twice = once[i];
        for (int64_t j = 0; j < twice.numel(); ++j) twice[j] *= 2;
        EXPECT_TRUE(test::close_rel(*params[i].grad, twice, 1e-5)) << params[i].name;
    }
    zero_grads(params);
    const LossStats st = TrainPass(m).train_step(b, {}, rng);  // grad_scale 0: 1 / tokens
    for (std::size_t i = 0; i < params.size(); ++i) {
        Tensor mean = once[i];
        for (int64_t j = 0; j < mean.numel(); ++j) mean[j] /= static_cast<float>(st.tokens);
        EXPECT_TRUE(test::close_rel(*params[i].grad, mean, 1e-5)) << params[i].name;
    }
}

TEST(Seq2Seq, LabelSmoothingLossMatchesEval) {
    Seq2Seq m(tiny_config(), 5);
    const Batch b = tiny_batch();
    Rng rng(1);
    const LossStats tr = TrainPass(m).train_step(b, {.label_smoothing = 0.1f}, rng);
    const LossStats ev = TrainPass(m).eval_loss(b, 0.1f);
    EXPECT_NEAR(tr.loss, ev.loss, 1e-5 * ev.loss);
    EXPECT_GT(ev.loss, TrainPass(m).eval_loss(b).loss * 0.5);
}

TEST(Seq2Seq, TrainingIsDeterministicAndDropoutSamplingUseTheRng) {
    auto c = tiny_config();
    c.encoder.num_layers = 2;
    c.encoder.dropout = 0.3f;
    c.decoder.num_layers = 2;
    c.decoder.dropout = 0.3f;
    Seq2Seq a(c, 9), b2(c, 9);
    const Batch b = tiny_batch();
    Rng ra(4), rb(4);
    const TrainOptions opt{.sampling_prob = 0.5f};
    const LossStats la = TrainPass(a).train_step(b, opt, ra),
                    lb = TrainPass(b2).train_step(b, opt, rb);
    EXPECT_EQ(la.loss, lb.loss);  // bit-identical
    ParamList pa = a.parameters(), pb = b2.parameters();
    for (std::size_t i = 0; i < pa.size(); ++i)
        EXPECT_EQ(max_abs_diff(*pa[i].grad, *pb[i].grad), 0.0) << pa[i].name;
    // train mode with dropout differs from eval mode
    EXPECT_NE(la.loss, TrainPass(a).eval_loss(b).loss);
}

TEST(Seq2Seq, BadInputsAreErrors) {
    Seq2Seq m(tiny_config(), 5);
    Batch b = tiny_batch();
    b.tgt_in[1] = 10;  // outside the vocabulary
    Rng rng(1);
    EXPECT_THROW(TrainPass(m).train_step(b, {}, rng), Error);
    Batch c = tiny_batch();
    c.src_lengths.pop_back();
    EXPECT_THROW(TrainPass(m).eval_loss(c), Error);
    EXPECT_THROW(TrainPass(m).train_step(tiny_batch(), {.sampling_prob = 1.5f}, rng), Error);
}

}  // namespace
}  // namespace test_models_seq2seq
}  // namespace nazar
