// Ensemble decoding (nazar/decode/ensemble.h): an ensemble of one model is that model and an
// ensemble of two identical models is one of them, bit for bit (greedy, beam n-best, scores,
// attention), in the step API, the searches and the Translator; a step's log-probabilities are
// the mean of the members'; members that cannot share a step are refused.
#include "nazar/core/check.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/ensemble.h"
#include "nazar/decode/greedy.h"
#include "nazar/decode/translator.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_decode_ensemble {
namespace {

bool same(ConstTensorView a, ConstTensorView b) {  // bit for bit (empty views: by shape)
    return a.shape() == b.shape() &&
           (a.numel() == 0 ||
            std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.numel())) ==
                0);
}

ModelConfig config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = 12;
    c.tgt_vocab_size = 11;
    return c;
}

struct Sources {
    std::vector<int32_t> ids;
    std::vector<int> lengths;
    int S = 0;
};

Sources sources() {
    const std::vector<std::vector<int32_t>> s = {
        {4, 5, 6, 7, 8}, {9, 10}, {11, 4, 4, 5, 6, 7, 9}, {5}, {}};
    Sources out;
    for (const auto& x : s) out.S = std::max(out.S, static_cast<int>(x.size()));
    for (const auto& x : s) {
        out.lengths.push_back(static_cast<int>(x.size()));
        out.ids.insert(out.ids.end(), x.begin(), x.end());
        out.ids.insert(out.ids.end(), out.S - x.size(), 0);
    }
    return out;
}

void expect_same_greedy(const std::vector<GreedyResult>& a, const std::vector<GreedyResult>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].tokens, b[i].tokens) << i;
        EXPECT_EQ(a[i].score, b[i].score) << i;
        EXPECT_EQ(a[i].finished, b[i].finished) << i;
        EXPECT_TRUE(same(a[i].attention, b[i].attention)) << i;
    }
}

void expect_same_beam(const std::vector<std::vector<Hypothesis>>& a,
                      const std::vector<std::vector<Hypothesis>>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].size(), b[i].size()) << i;
        for (std::size_t k = 0; k < a[i].size(); ++k) {
            EXPECT_EQ(a[i][k].tokens, b[i][k].tokens) << i << "/" << k;
            EXPECT_EQ(a[i][k].log_prob, b[i][k].log_prob) << i << "/" << k;
            EXPECT_EQ(a[i][k].score, b[i][k].score) << i << "/" << k;
            EXPECT_TRUE(same(a[i][k].attention, b[i][k].attention)) << i << "/" << k;
        }
    }
}

const BeamOptions kBeam{.beam_size = 4, .n_best = 3, .coverage_penalty = 0.2f};

TEST(Ensemble, OfOneModelIsThatModel) {
    for (const DecoderKind kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
        ModelConfig c = test::tiny_config(
            kind, kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive);
        c.src_vocab_size = 12;
        c.tgt_vocab_size = 11;
        Seq2Seq m(c, 3);
        Ensemble e({&m});
        const Sources s = sources();
        expect_same_greedy(greedy_decode(m, s.ids, s.lengths, s.S),
                           greedy_decode(e, s.ids, s.lengths, s.S));
        expect_same_beam(beam_search(m, s.ids, s.lengths, s.S, kBeam),
                         beam_search(e, s.ids, s.lengths, s.S, kBeam));
        Ensemble mean({&m}, kMeanAttention);
        expect_same_beam(beam_search(m, s.ids, s.lengths, s.S, kBeam),
                         beam_search(mean, s.ids, s.lengths, s.S, kBeam));
    }
}

TEST(Ensemble, OfTwoIdenticalModelsIsOne) {
    Seq2Seq a(config(), 7), b(config(), 7), alone(config(), 7);
    const Sources s = sources();
    for (const int attention : {0, 1, kMeanAttention}) {
        Ensemble e({&a, &b}, attention);
        expect_same_greedy(greedy_decode(alone, s.ids, s.lengths, s.S),
                           greedy_decode(e, s.ids, s.lengths, s.S));
        expect_same_beam(beam_search(alone, s.ids, s.lengths, s.S, kBeam),
                         beam_search(e, s.ids, s.lengths, s.S, kBeam));
    }
}

// One step of two different models: the ensemble's log-probabilities are the members' mean,
// its attention the chosen member's or the mean.
TEST(Ensemble, StepAveragesTheMembersLogProbabilities) {
    Seq2Seq a(config(), 1), b(config(), 2);
    const Sources s = sources();
    const int N = static_cast<int>(s.lengths.size()), V = config().tgt_vocab_size;
    const std::vector<int32_t> prev(N, config().special_ids.bos);
    Tensor lp_a({N, V}), lp_b({N, V}), at_a({N, s.S}), at_b({N, s.S});
    DecodeSession sa(a), sb(b);
    for (auto [model, lp, at] : {std::tuple{&sa, &lp_a, &at_a}, std::tuple{&sb, &lp_b, &at_b}}) {
        EncodedSource enc;
        DecoderState state;
        model->encode(s.ids, s.lengths, s.S, enc);
        model->init_state(enc, state);
        model->step(prev, enc, state, *lp, *at);
    }
    int64_t differ = 0;
    for (const int attention : {1, kMeanAttention}) {
        Ensemble e({&a, &b}, attention);
        Ensemble::Source enc;
        Ensemble::State state;
        e.encode(s.ids, s.lengths, s.S, enc);
        e.init_state(enc, state);
        Tensor lp({N, V}), at({N, s.S});
        e.step(prev, enc, state, lp, at);
        for (int64_t i = 0; i < lp.numel(); ++i) {
            ASSERT_EQ(lp.data()[i], (lp_a.data()[i] + lp_b.data()[i]) / 2.0f) << i;
            differ += lp_a.data()[i] != lp_b.data()[i];
        }
        for (int64_t i = 0; i < at.numel(); ++i)
            ASSERT_EQ(at.data()[i],
                      attention == 1 ? at_b.data()[i] : (at_a.data()[i] + at_b.data()[i]) / 2.0f)
                << i;
    }
    EXPECT_GT(differ, 0);  // the members really differ
}

// The greedy score of an ensemble is the sum of averaged log-probabilities: the mean of the
// members' own scores of the output (TrainPass::score), up to float rounding.
TEST(Ensemble, GreedyScoreIsTheMeanOfTheMembersScores) {
    Seq2Seq a(config(), 1), b(config(), 2);
    for (Seq2Seq* m : {&a, &b})  // make </s> likely, so that outputs finish
        for (const ParamRef& p : m->parameters())
            if (p.name == "generator.bias") p.value->at(config().special_ids.eos) += 2.0f;
    Ensemble e({&a, &b});
    const Sources s = sources();
    const auto out = greedy_decode(e, s.ids, s.lengths, s.S, {.max_length_ratio = 3.0f});
    int checked = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::vector<int32_t> src(
            s.ids.begin() + static_cast<std::ptrdiff_t>(i) * s.S,
            s.ids.begin() + static_cast<std::ptrdiff_t>(i) * s.S + s.lengths[i]);
        std::vector<int32_t> tgt = out[i].tokens;
        if (!tgt.empty() && tgt.back() == config().special_ids.eos) tgt.pop_back();
        if (!out[i].finished) continue;  // TrainPass::score counts a final </s>
        const std::vector<std::vector<int32_t>> ss = {src}, tt = {tgt};
        const Batch batch = batch_from_ids(ss, tt);
        double sa = 0, sb = 0;
        TrainPass(a).score(batch, std::span<double>(&sa, 1));
        TrainPass(b).score(batch, std::span<double>(&sb, 1));
        EXPECT_NEAR(out[i].score, (sa + sb) / 2, 1e-4) << i;
        ++checked;
    }
    EXPECT_GE(checked, 2);
}

TEST(Ensemble, RefusesMembersThatCannotShareAStep) {
    Seq2Seq a(config(), 1);
    ModelConfig other = config();
    other.tgt_vocab_size = 12;
    Seq2Seq b(other, 1);
    try {
        Ensemble e({&a, &b});
        FAIL() << "no error";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("member 1 has a target vocabulary of 12"),
                  std::string::npos)
            << err.what();
    }
    EXPECT_THROW(Ensemble({&a, &a}, 2), UsageError);
    EXPECT_THROW(Ensemble({&a}, -2), UsageError);
    // Members may differ in everything else.
    ModelConfig luong = test::tiny_config(DecoderKind::luong, ScoreKind::general);
    luong.src_vocab_size = 12;
    luong.tgt_vocab_size = 11;
    Seq2Seq c(luong, 4);
    Ensemble mixed({&a, &c}, kMeanAttention);
    const Sources s = sources();
    EXPECT_EQ(beam_search(mixed, s.ids, s.lengths, s.S, kBeam).size(), s.lengths.size());
}

// The Translator: two paths to the same file translate exactly as one; other vocabularies are
// refused naming the file.
TEST(Ensemble, TranslatorOfTwoIdenticalFilesIsOne) {
    const std::string dir = test::fresh_temp_dir("ensemble");
    const std::vector<std::string> src_words = {"a", "b", "c", "d", "e", "f", "g", "h"};
    const std::vector<std::string> tgt_words = {"w", "x", "y", "z", "v", "u", "t"};
    Seq2Seq m(config(), 5);
    auto meta = [&](const std::vector<std::string>& tgt) {
        return std::map<std::string, std::string>{
            {kSrcVocabKey, Vocab::from_pieces(src_words).to_json()},
            {kTgtVocabKey, Vocab::from_pieces(tgt).to_json()},
            {kSrcTokenizerKey, Tokenizer::word().to_string()},
            {kTgtTokenizerKey, Tokenizer::word().to_string()}};
    };
    save_model(dir + "/m.safetensors", m, meta(tgt_words));
    save_model(dir + "/copy.safetensors", m, meta(tgt_words));
    const std::vector<std::string> input = {"a b c", "h g f e d", "", "b b b b", "c a"};
    TranslationOptions o{.beam_size = 3, .n_best = 2, .alignments = true, .attention = true};
    const auto one = Translator(dir + "/m.safetensors").translate(input, o);
    const std::vector<std::string> two = {dir + "/m.safetensors", dir + "/copy.safetensors"};
    for (const int attention : {0, 1, kMeanAttention}) {
        o.ensemble_attention = attention;
        const auto both = Translator(two, {.replicas = 2}).translate(input, o);
        ASSERT_EQ(both.size(), one.size());
        for (std::size_t i = 0; i < one.size(); ++i) {
            ASSERT_EQ(both[i].hypotheses.size(), one[i].hypotheses.size());
            for (std::size_t k = 0; k < one[i].hypotheses.size(); ++k) {
                const auto &x = one[i].hypotheses[k], &y = both[i].hypotheses[k];
                EXPECT_EQ(x.text, y.text);
                EXPECT_EQ(x.score, y.score);
                EXPECT_EQ(x.log_prob, y.log_prob);
                EXPECT_EQ(x.alignment, y.alignment);
                EXPECT_TRUE(same(x.attention, y.attention));
            }
        }
    }
    o.ensemble_attention = 2;
    EXPECT_THROW(Translator(two).translate(input, o), UsageError);

    std::vector<std::string> other = tgt_words;
    other[2] = "q";
    save_model(dir + "/other.safetensors", m, meta(other));
    try {
        Translator({dir + "/m.safetensors", dir + "/other.safetensors"});
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("other.safetensors' has another target vocabulary"), std::string::npos)
            << msg;
    }
}

}  // namespace
}  // namespace test_decode_ensemble
}  // namespace nazar
