// Coverage attention in the model's step API, decoding and model files: forced decoding through
// encode / init_state / step carries cov_t in the DecoderState and gives score()'s numbers;
// select_state reorders the coverage with the beams; a model file keeps w_c under
// "attention.coverage.weight"; the config JSON of a model without coverage is unchanged.
#include "nazar/models/decode_session.h"
#include "nazar/models/model_file.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

namespace nazar {
namespace test_coverage_models {
namespace {

using test::tiny_batch;
using test::tiny_config;

std::vector<ModelConfig> coverage_variants() {
    std::vector<ModelConfig> v;
    auto bahdanau = tiny_config();
    bahdanau.attention.coverage = true;
    v.push_back(bahdanau);
    auto luong = tiny_config(DecoderKind::luong, ScoreKind::concat);
    luong.attention.coverage = true;
    luong.decoder.input_feeding = true;
    v.push_back(luong);
    auto local = tiny_config();
    local.attention.coverage = true;
    local.attention.local = LocalMode::monotonic;
    local.attention.window = 1;
    v.push_back(local);
    return v;
}

void randomise_w_c(Seq2Seq& m) {
    Rng rng(7);
    rng.fill_uniform(m.attention.params.w_c, -2.0f, 2.0f);
}

TEST(CoverageModels, StepApiMatchesForcedScore) {
    for (const auto& c : coverage_variants()) {
        Seq2Seq m(c, 5);
        DecodeSession m_s(m);
        randomise_w_c(m);
        const Batch b = tiny_batch();
        std::vector<double> want(b.B);
        TrainPass(m).score(b, want);
        EncodedSource enc;
        m_s.encode(b.src, b.src_lengths, b.S, enc);
        DecoderState st;
        m_s.init_state(enc, st);
        ASSERT_EQ(st.coverage.shape(), (Shape{b.B, b.S}));
        Tensor lp({b.B, 10}), att({b.B, b.S}), cov({b.B, b.S});
        std::vector<double> got(b.B, 0.0);
        for (int t = 0; t < b.T; ++t) {
            std::vector<int32_t> prev = {b.tgt_in_at(0, t), b.tgt_in_at(1, t)};
            m_s.step(prev, enc, st, lp, att);
            for (int64_t i = 0; i < cov.numel(); ++i) cov[i] += att[i];
            for (int r = 0; r < b.B; ++r)
                if (b.tgt_out_at(r, t) != 0) got[r] += lp.at(r, b.tgt_out_at(r, t));
            // the state's coverage is the running sum of the weights the steps reported
            for (int64_t i = 0; i < cov.numel(); ++i) EXPECT_NEAR(st.coverage[i], cov[i], 1e-6);
        }
        for (int r = 0; r < b.B; ++r) EXPECT_NEAR(got[r], want[r], 1e-5 * std::abs(want[r]));
        // w_c matters: the same model with w_c = 0 scores differently
        m.attention.params.w_c.zero();
        std::vector<double> plain(b.B);
        TrainPass(m).score(b, plain);
        EXPECT_GT(std::abs(plain[0] - want[0]) + std::abs(plain[1] - want[1]), 1e-4);
    }
}

TEST(CoverageModels, SelectStateReordersCoverage) {
    for (const auto& c : coverage_variants()) {
        Seq2Seq m(c, 5);
        DecodeSession m_s(m);
        randomise_w_c(m);
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
        m_s.step(std::vector<int32_t>{7, 5}, enc, st, lp, {});
        m_s.step(std::vector<int32_t>{5, 7, 4}, wide, st_wide, lpw, {});
        // {row 2, row 1, row 0} = sentences {1, 0, 1}; rows 0 and 2 had different histories
        m_s.select_state(st_wide, std::vector<int>{2, 1, 0}, tmp);
        ASSERT_EQ(tmp.coverage.shape(), (Shape{3, b.S}));
        for (int i = 0; i < b.S; ++i) {
            EXPECT_EQ(tmp.coverage.at(0, i), st_wide.coverage.at(2, i));
            EXPECT_EQ(tmp.coverage.at(2, i), st_wide.coverage.at(0, i));
            EXPECT_NEAR(tmp.coverage.at(1, i), st.coverage.at(0, i), 1e-6);
        }
        m_s.step(std::vector<int32_t>{6, 6, 6}, wide, tmp, lpw, {});
        m_s.step(std::vector<int32_t>{6, 6}, enc, st, lp, {});
        for (int v = 0; v < 10; ++v) EXPECT_NEAR(lpw.at(1, v), lp.at(0, v), 1e-5);
    }
}

TEST(CoverageModels, ModelFileKeepsCoverageWeight) {
    auto c = tiny_config();
    c.attention.coverage = true;
    Seq2Seq m(c, 5);
    randomise_w_c(m);
    const std::string path =
        (std::filesystem::temp_directory_path() / "nazar_coverage_model.safetensors").string();
    save_model(path, m);
    LoadedModel back = load_model(path);
    std::filesystem::remove(path);
    EXPECT_TRUE(back.model->config().attention.coverage);
    const Tensor& w = back.model->attention.params.w_c;
    ASSERT_EQ(w.shape(), (Shape{1, c.attention.attention_size}));
    for (int64_t i = 0; i < w.numel(); ++i) EXPECT_EQ(w[i], m.attention.params.w_c[i]);
    bool named = false;
    for (const auto& [name, shape] : model_param_shapes(c))
        named |= name == "attention.coverage.weight";
    EXPECT_TRUE(named);
}

TEST(CoverageModels, ConfigJsonWithoutCoverageIsUnchanged) {
    const std::string plain = to_json_string(tiny_config());
    EXPECT_EQ(plain.find("coverage"), std::string::npos);
    auto c = tiny_config();
    c.attention.coverage = true;
    EXPECT_TRUE(model_config_from_string(to_json_string(c)).attention.coverage);
    EXPECT_FALSE(model_config_from_string(plain).attention.coverage);
}

TEST(CoverageModels, DotAndGeneralRefuseCoverage) {
    for (ScoreKind k : {ScoreKind::dot, ScoreKind::general}) {
        auto c = tiny_config(DecoderKind::luong, k);
        c.decoder.hidden_size = 6;
        c.attention.coverage = true;
        try {
            Seq2Seq m(c, 1);
            ADD_FAILURE() << "coverage with " << to_string(k) << " was accepted";
        } catch (const UsageError& e) {
            EXPECT_NE(std::string(e.what()).find("coverage needs an additive or concat"),
                      std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
}  // namespace test_coverage_models
}  // namespace nazar
