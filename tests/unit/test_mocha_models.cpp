// MoChA (AttentionConfig::mocha_chunk, nazar/attention/monotonic.h) in the model: decoding is hard
// at the monotonic stop and soft over the chunk ending there (every token's attention a
// distribution over at most w consecutive positions whose right end never moves back, or empty
// once the reader ran off the end); greedy is beam 1; the carried state is α (one-hot), not the
// β reported; forced alignment gives score()'s numbers (soft); streaming gives greedy's output;
// model files keep v_c under "attention.chunk_v.weight" and the config JSON round-trips; a config
// that cannot work is refused.
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/model_file.h"
#include "nazar/models/seq2seq.h"
#include "tests/common/monotonic_decoding.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace nazar {
namespace test_mocha_models {
namespace {

using test::tiny_batch4;
using test::tiny_config;

std::vector<ModelConfig> mocha_variants() {
    auto bahdanau = tiny_config();
    bahdanau.attention.monotonic = true;
    bahdanau.attention.monotonic_bias_init = 0.5f;
    bahdanau.attention.mocha_chunk = 2;
    auto luong = tiny_config(DecoderKind::luong, ScoreKind::concat);
    luong.attention.monotonic = true;
    luong.attention.monotonic_bias_init = 0.0f;
    luong.attention.mocha_chunk = 3;
    luong.decoder.input_feeding = true;
    return {bahdanau, luong};
}

// Each row sums to 1 over at most w consecutive positions, or is all zero; the window's right
// end never decreases, and once a row is zero every later row is.
void expect_chunks_moving_forward(ConstTensorView att, int w, const std::string& what) {
    int last = 0;
    bool ended = false;
    for (int j = 0; j < att.dim(0); ++j) {
        int lo = -1, hi = -1;
        double sum = 0;
        for (int i = 0; i < att.dim(1); ++i) {
            const float a = att.at(j, i);
            EXPECT_GE(a, 0.0f) << what;
            if (a > 0.0f) {
                if (lo < 0) lo = i;
                hi = i;
            }
            sum += a;
        }
        if (hi < 0) {
            ended = true;
            continue;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << what << " row " << j;
        EXPECT_LT(hi - lo, w) << what << " row " << j << ": wider than the chunk";
        EXPECT_FALSE(ended) << what << ": attended again after running off the end";
        EXPECT_GE(hi, last) << what << ": moved back at row " << j;
        last = hi;
    }
}

}  // namespace

TEST(MochaModels, DecodingAttendsToChunksThatMoveForward) {
    const Batch b = tiny_batch4();
    for (const auto& c : mocha_variants()) {
        Seq2Seq m(c, 5);
        const int w = c.attention.mocha_chunk;
        const auto greedy = greedy_decode(m, b.src, b.src_lengths, b.S);
        const auto beam1 = beam_search(m, b.src, b.src_lengths, b.S, {.beam_size = 1});
        const auto beam3 = beam_search(m, b.src, b.src_lengths, b.S, {.beam_size = 3, .n_best = 3});
        for (int r = 0; r < b.B; ++r) {
            expect_chunks_moving_forward(greedy[r].attention, w, "greedy");
            EXPECT_EQ(greedy[r].tokens, beam1[r][0].tokens) << "greedy is beam 1";
            EXPECT_NEAR(greedy[r].score, beam1[r][0].log_prob, 1e-5);
            for (const Hypothesis& h : beam3[r])
                expect_chunks_moving_forward(h.attention, w, "beam");
        }
    }
}

// The state carries α, one-hot at the stop, which is the right end of the β row reported.
TEST(MochaModels, TheStateCarriesTheStopNotTheChunk) {
    const Batch b = tiny_batch4();
    bool spread = false;
    for (const float r : {-0.2f, -0.1f, 0.0f, 0.1f}) {  // the reader stops early or late
        Seq2Seq m(mocha_variants()[0], 5);
        m.attention.params.r[0] = r;
        DecodeSession s(m);
        EncodedSource enc;
        s.encode(b.src, b.src_lengths, b.S, enc);
        DecoderState st, picked;
        s.init_state(enc, st);
        Tensor lp({b.B, 10}), att({b.B, b.S});
        for (int t = 0; t < 4; ++t) {
            s.step(std::vector<int32_t>(b.B, 2 + t), enc, st, lp, att);
            for (int n = 0; n < b.B; ++n) {
                int stop = -1, hi = -1;
                for (int i = 0; i < b.S; ++i) {
                    const float p = st.previous.at(n, i);
                    EXPECT_TRUE(p == 0.0f || p == 1.0f) << p;
                    if (p == 1.0f) stop = i;
                    if (att.at(n, i) > 0.0f) hi = i;
                    spread = spread || (att.at(n, i) > 0.0f && att.at(n, i) < 1.0f);
                }
                EXPECT_EQ(stop, hi) << "r " << r << " step " << t << " row " << n;
            }
        }
        const std::vector<int> rows{3, 0, 0, 2};
        s.select_state(st, rows, picked);
        for (int n = 0; n < 4; ++n)
            for (int i = 0; i < b.S; ++i)
                EXPECT_EQ(picked.previous.at(n, i), st.previous.at(rows[n], i));
    }
    EXPECT_TRUE(spread) << "no step spread its attention over a chunk";
}

TEST(MochaModels, ForcedStepsGiveTheTeacherForcedScores) {
    const Batch b = tiny_batch4();
    for (const auto& c : mocha_variants()) {
        Seq2Seq m(c, 5);
        DecodeSession session(m);
        test::monotonic::expect_forced_is_teacher_forced(m, session, b);
    }
}

// A unidirectional encoder and the zero bridge: the chunk ends at the stop, so it reads nothing
// the stream has not read, and streaming gives greedy decoding's output.
TEST(MochaModels, StreamingGivesGreedysOutput) {
    int early = 0;
    for (auto c : mocha_variants()) {
        c.encoder.bidirectional = false;
        c.decoder.hidden_size = 3;
        c.decoder.bridge = BridgeKind::zero;
        c.decoder.input_feeding = false;
        for (const uint64_t seed : {1, 2, 3}) {
            Seq2Seq m(c, seed);
            DecodeSession session(m);
            test::monotonic::expect_streaming_is_greedy(
                session, "seed " + std::to_string(seed),
                [&](const Hypothesis& got, const GreedyResult& want, int S_b) {
                    for (std::size_t i = 0; i < got.read.size(); ++i) {
                        for (int j = 0; j < S_b; ++j)
                            EXPECT_NEAR(got.attention.at(i, j), want.attention.at(i, j), 1e-6);
                        early += got.read[i] < S_b;
                    }
                });
        }
    }
    EXPECT_GT(early, 5) << "no token was emitted before its source ended";
}

TEST(MochaModels, ModelFileKeepsTheChunkEnergyAndTheConfig) {
    Seq2Seq m(mocha_variants()[0], 5);
    m.attention.params.v_c[1] = -0.75f;
    const auto path = std::filesystem::temp_directory_path() / "nazar_mocha_model.safetensors";
    save_model(path.string(), m);
    const LoadedModel loaded = load_model(path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(loaded.model->config().attention.mocha_chunk, 2);
    EXPECT_EQ(loaded.model->attention.params.v_c[1], -0.75f);
    const std::string json = to_json_string(m.config());
    EXPECT_NE(json.find("\"mocha_chunk\":2"), std::string::npos) << json;
    auto monotonic = mocha_variants()[0];
    monotonic.attention.mocha_chunk = 0;
    EXPECT_EQ(to_json_string(monotonic).find("mocha"), std::string::npos)
        << "a model without it keeps its JSON";
    bool named = false;
    for (const ParamRef& p : m.parameters())
        named = named || (p.name == "attention.chunk_v.weight" && p.value->shape() == Shape{1, 4});
    EXPECT_TRUE(named) << "attention.chunk_v.weight (1, A)";
}

TEST(MochaModels, RefusesWhatCannotWork) {
    auto general = tiny_config(DecoderKind::luong, ScoreKind::general);
    general.attention.monotonic = true;
    general.attention.mocha_chunk = 2;
    EXPECT_THROW(Seq2Seq(general, 1), UsageError);
    auto plain = tiny_config();
    plain.attention.mocha_chunk = 2;
    EXPECT_THROW(Seq2Seq(plain, 1), UsageError);
}

}  // namespace test_mocha_models
}  // namespace nazar
