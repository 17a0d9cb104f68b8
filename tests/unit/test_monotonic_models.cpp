// Monotonic attention (nazar/attention/monotonic.h) in the model: decoding is hard and only moves
// forward (greedy and beam search, every token's attention one-hot or empty, positions never
// decreasing), greedy is beam 1, the state reorders with the beams; forced alignment and the
// step API with set_hard_monotonic(false) give score()'s numbers (the expected alignment);
// model files keep r under "attention.monotonic_bias" and the config JSON round-trips; a
// config that cannot work is refused.
#include "nazar/decode/alignment.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/model_file.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/monotonic_decoding.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

namespace nazar {
namespace test_monotonic_models {
namespace {

using test::tiny_batch4;
using test::tiny_config;

std::vector<ModelConfig> monotonic_variants() {
    auto bahdanau = tiny_config();
    bahdanau.attention.monotonic = true;
    bahdanau.attention.monotonic_bias_init = 0.5f;
    auto luong = tiny_config(DecoderKind::luong, ScoreKind::general);
    luong.attention.monotonic = true;
    luong.attention.monotonic_bias_init = 0.0f;
    luong.decoder.input_feeding = true;
    return {bahdanau, luong};
}

// Each row one-hot or zero; the attended positions never decrease, and once a row is zero (the
// step ran off the end) every later row is.
void expect_hard_and_forward(ConstTensorView att, const std::string& what) {
    int last = 0;
    bool ended = false;
    for (int j = 0; j < att.dim(0); ++j) {
        int at = -1, ones = 0;
        for (int i = 0; i < att.dim(1); ++i) {
            const float a = att.at(j, i);
            EXPECT_TRUE(a == 0.0f || a == 1.0f) << what << " row " << j << ": " << a;
            if (a == 1.0f) {
                at = i;
                ++ones;
            }
        }
        EXPECT_LE(ones, 1) << what;
        if (at < 0) {
            ended = true;
            continue;
        }
        EXPECT_FALSE(ended) << what << ": attended again after running off the end";
        EXPECT_GE(at, last) << what << ": moved back at row " << j;
        last = at;
    }
}

TEST(MonotonicModels, DecodingIsHardAndMovesForward) {
    const Batch b = tiny_batch4();
    for (const auto& c : monotonic_variants()) {
        Seq2Seq m(c, 5);
        const auto greedy = greedy_decode(m, b.src, b.src_lengths, b.S);
        const auto beam1 = beam_search(m, b.src, b.src_lengths, b.S, {.beam_size = 1});
        const auto beam3 = beam_search(m, b.src, b.src_lengths, b.S, {.beam_size = 3, .n_best = 3});
        for (int r = 0; r < b.B; ++r) {
            expect_hard_and_forward(greedy[r].attention, "greedy");
            EXPECT_EQ(greedy[r].tokens, beam1[r][0].tokens) << "greedy is beam 1";
            EXPECT_NEAR(greedy[r].score, beam1[r][0].log_prob, 1e-5);
            for (const Hypothesis& h : beam3[r]) expect_hard_and_forward(h.attention, "beam");
        }
    }
}

// The step API with the expected alignment, token by token, is TrainPass::score; so is forced
// alignment (which steps that way), and its rows are the expected alignments (not one-hot).
TEST(MonotonicModels, ForcedStepsGiveTheTeacherForcedScores) {
    const Batch b = tiny_batch4();
    for (const auto& c : monotonic_variants()) {
        Seq2Seq m(c, 5);
        DecodeSession session(m);
        const auto forced = test::monotonic::expect_forced_is_teacher_forced(m, session, b);
        bool soft = false;
        for (int r = 0; r < b.B; ++r) {
            for (int64_t i = 0; i < forced[r].attention.numel(); ++i) {
                const float a = forced[r].attention[i];
                soft = soft || (a > 0.0f && a < 1.0f);
            }
        }
        EXPECT_TRUE(soft) << "forced alignment decoded hard";
        // the session decodes hard again after forced alignment
        const auto greedy = greedy_decode(session, b.src, b.src_lengths, b.S);
        for (int r = 0; r < b.B; ++r) expect_hard_and_forward(greedy[r].attention, "after");
    }
}

TEST(MonotonicModels, SelectStateReordersThePreviousWeights) {
    Seq2Seq m(monotonic_variants()[0], 5);
    DecodeSession s(m);
    const Batch b = tiny_batch4();
    EncodedSource enc;
    s.encode(b.src, b.src_lengths, b.S, enc);
    DecoderState st, picked;
    s.init_state(enc, st);
    ASSERT_EQ(st.previous.shape(), (Shape{b.B, b.S}));
    Tensor lp({b.B, 10}), att({b.B, b.S});
    s.step(std::vector<int32_t>(b.B, 2), enc, st, lp, att);
    EXPECT_TRUE(test::close_abs(st.previous, att, 0.0)) << "the state holds the step's weights";
    const std::vector<int> rows{3, 0, 0, 2};
    s.select_state(st, rows, picked);
    for (int n = 0; n < 4; ++n)
        for (int i = 0; i < b.S; ++i)
            EXPECT_EQ(picked.previous.at(n, i), st.previous.at(rows[n], i));
}

TEST(MonotonicModels, ModelFileKeepsTheBiasAndTheConfig) {
    Seq2Seq m(monotonic_variants()[0], 5);
    m.attention.params.r[0] = -0.75f;
    const auto path = std::filesystem::temp_directory_path() / "nazar_monotonic_model.safetensors";
    save_model(path.string(), m);
    const LoadedModel loaded = load_model(path.string());
    std::filesystem::remove(path);
    EXPECT_TRUE(loaded.model->config().attention.monotonic);
    EXPECT_EQ(loaded.model->config().attention.monotonic_bias_init, 0.5f);
    EXPECT_EQ(loaded.model->attention.params.r[0], -0.75f);
    const std::string json = to_json_string(m.config());
    EXPECT_NE(json.find("\"monotonic\":true"), std::string::npos) << json;
    EXPECT_EQ(to_json_string(tiny_config()).find("monotonic"), std::string::npos)
        << "a model without it keeps its JSON";
}

TEST(MonotonicModels, RefusesWhatCannotWork) {
    auto local = monotonic_variants()[0];
    local.attention.local = LocalMode::predictive;
    EXPECT_THROW(Seq2Seq(local, 1), UsageError);
    auto cov = monotonic_variants()[0];
    cov.attention.coverage = true;
    EXPECT_THROW(Seq2Seq(cov, 1), UsageError);
    auto copy = monotonic_variants()[0];
    copy.copy_attention = true;
    EXPECT_THROW(Seq2Seq(copy, 1), UsageError);
}

}  // namespace
}  // namespace test_monotonic_models
}  // namespace nazar
