// ModelConfig: JSON round-trip, derived sizes, and every validation error / warning path.
#include "nazar/models/config.h"
#include "nazar/models/seq2seq.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace nazar {
namespace test_models_config {
namespace {

using test::tiny_config;

std::string usage_message(const ModelConfig& c) {
    try {
        validate(c);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

TEST(ModelConfig, JsonRoundTripIsExact) {
    ModelConfig c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.encoder.cell = CellType::lstm;
    c.encoder.num_layers = 2;
    c.encoder.dropout = 0.25f;
    c.decoder.cell = CellType::lstm;
    c.decoder.num_layers = 3;
    c.decoder.dropout = 0.5f;
    c.decoder.bridge = BridgeKind::last;
    c.decoder.input_feeding = true;
    c.attention.scale = ScaleMode::learned;
    c.attention.local = LocalMode::predictive;
    c.attention.window = 7;
    c.attention.position_size = 9;
    c.special_ids = {.pad = 1, .unk = 0, .bos = 3, .eos = 2};
    const std::string s = to_json_string(c);
    const ModelConfig r = model_config_from_string(s);
    EXPECT_EQ(to_json_string(r), s);
    EXPECT_EQ(r.decoder.num_layers, 3);
    EXPECT_EQ(r.decoder.bridge, BridgeKind::last);
    EXPECT_EQ(r.attention.local, LocalMode::predictive);
    EXPECT_EQ(r.attention.window, 7);
    EXPECT_FLOAT_EQ(r.encoder.dropout, 0.25f);
    EXPECT_EQ(r.special_ids, c.special_ids);
}

// layer_norm: written only when on (a model without it keeps its JSON byte for byte), read
// back exactly, booleans only; with either cell.
TEST(ModelConfig, LayerNorm) {
    ModelConfig c = tiny_config();
    const std::string plain = to_json_string(c);
    EXPECT_EQ(plain.find("layer_norm"), std::string::npos) << plain;
    c.decoder.layer_norm = true;
    const std::string dec_only = to_json_string(c);
    const ModelConfig r = model_config_from_string(dec_only);
    EXPECT_TRUE(r.decoder.layer_norm);
    EXPECT_FALSE(r.encoder.layer_norm);
    EXPECT_EQ(to_json_string(r), dec_only);
    c.encoder.layer_norm = true;
    EXPECT_TRUE(model_config_from_string(to_json_string(c)).encoder.layer_norm);
    EXPECT_EQ(usage_message(c), "");
    for (const char* bad :
         {R"({"encoder": {"layer_norm": 1}})", R"({"decoder": {"layer_norm": "yes"}})",
          R"({"decoder": {"layer_norm": null}})", R"({"layer_norm": true})"})
        EXPECT_THROW(model_config_from_string(bad), UsageError) << bad;
    c.encoder.cell = c.decoder.cell = CellType::lstm;
    EXPECT_EQ(usage_message(c), "");
}

// encoder residual: written only when on, read back exactly, refused with one encoder layer
// (there is no layer whose input has its width) and in the decoder (not a decoder key).
TEST(ModelConfig, EncoderResidual) {
    ModelConfig c = tiny_config();
    EXPECT_EQ(to_json_string(c).find("residual"), std::string::npos);
    c.encoder.residual = true;
    EXPECT_NE(usage_message(c).find("at least 2 encoder layers"), std::string::npos)
        << usage_message(c);
    c.encoder.num_layers = 3;
    EXPECT_EQ(usage_message(c), "");
    const std::string on = to_json_string(c);
    const ModelConfig r = model_config_from_string(on);
    EXPECT_TRUE(r.encoder.residual);
    EXPECT_EQ(to_json_string(r), on);
    for (const char* bad :
         {R"({"encoder": {"residual": 1}})", R"({"decoder": {"residual": true}})"})
        EXPECT_THROW(model_config_from_string(bad), UsageError) << bad;
}

// encoder transition_depth: written only when > 1, read back exactly, refused out of [1, 8], with
// LSTM cells, and in the decoder (not a decoder key).
TEST(ModelConfig, EncoderTransitionDepth) {
    ModelConfig c = tiny_config();
    EXPECT_EQ(to_json_string(c).find("transition_depth"), std::string::npos);
    c.encoder.transition_depth = 3;
    EXPECT_EQ(usage_message(c), "");
    const std::string on = to_json_string(c);
    const ModelConfig r = model_config_from_string(on);
    EXPECT_EQ(r.encoder.transition_depth, 3);
    EXPECT_EQ(to_json_string(r), on);
    for (const int bad : {0, 9, -1}) {
        c.encoder.transition_depth = bad;
        EXPECT_NE(usage_message(c).find("must be in [1, 8]"), std::string::npos) << bad;
    }
    c.encoder.transition_depth = 2;
    c.encoder.cell = CellType::lstm;
    EXPECT_NE(usage_message(c).find("needs GRU cells"), std::string::npos) << usage_message(c);
    for (const char* bad :
         {R"({"encoder": {"transition_depth": true}})", R"({"decoder": {"transition_depth": 2}})"})
        EXPECT_THROW(model_config_from_string(bad), UsageError) << bad;
}

TEST(ModelConfig, MissingKeysTakeDefaultsUnknownKeysAreErrors) {
    const ModelConfig d =
        model_config_from_string(R"({"src_vocab_size": 20, "tgt_vocab_size": 30})");
    EXPECT_EQ(d.embedding_size, 256);
    EXPECT_EQ(d.decoder.kind, DecoderKind::bahdanau);
    EXPECT_EQ(effective_bridge(d), BridgeKind::backward_first);
    EXPECT_EQ(effective_timing(d), AttentionTiming::before);
    EXPECT_THROW(model_config_from_string(R"({"decoder": {"hiden_size": 3}})"), UsageError);
    EXPECT_THROW(model_config_from_string(R"({"encoder": {"cell": "rnn"}})"), UsageError);
    EXPECT_THROW(model_config_from_string(R"({"embedding_size": "big"})"), UsageError);
    EXPECT_THROW(model_config_from_string("{not json"), UsageError);
    // integer keys take integers only: no silent truncation of 1.5, no wrap-around of 2^40
    EXPECT_THROW(model_config_from_string(R"({"embedding_size": 1.5})"), UsageError);
    EXPECT_THROW(model_config_from_string(R"({"decoder": {"hidden_size": 1099511627776}})"),
                 UsageError);
    EXPECT_THROW(model_config_from_string(R"({"attention": {"window": -3000000000}})"), UsageError);
    try {
        model_config_from_string(R"({"attention": {"windw": 3}})");
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("attention.windw"), std::string::npos) << e.what();
    }
}

TEST(ModelConfig, DerivedSizes) {
    ModelConfig c = tiny_config();
    EXPECT_EQ(encoder_output_size(c), 6);
    EXPECT_EQ(generator_input_size(c), 5);
    c.decoder.deep_output = true;
    EXPECT_EQ(generator_input_size(c), 5);  // 0 = H
    c.decoder.deep_output_size = 7;
    EXPECT_EQ(generator_input_size(c), 7);
    const AttentionConfig a = attention_config(c);
    EXPECT_EQ(a.query_size, 5);
    EXPECT_EQ(a.context_size, 6);
    EXPECT_EQ(a.attention_size, 4);
    EXPECT_EQ(a.position_size, 5);
    c.encoder.bidirectional = false;
    EXPECT_EQ(effective_bridge(c), BridgeKind::mean);
}

TEST(ModelConfig, DotSizeMismatchNamesBothSizesAndSuggestsGeneral) {
    const ModelConfig c = tiny_config(DecoderKind::luong, ScoreKind::dot);  // H = 5, C = 6
    const std::string m = usage_message(c);
    EXPECT_NE(m.find("5 vs 6"), std::string::npos) << m;
    EXPECT_NE(m.find("general"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_THROW(Seq2Seq model(c), UsageError);  // the model refuses to be built
}

TEST(ModelConfig, TieNeedsMatchingSizes) {
    ModelConfig c = tiny_config();
    c.tie_target_embeddings = true;  // d_out = 5, E = 4
    const std::string m = usage_message(c);
    EXPECT_NE(m.find("(5"), std::string::npos) << m;
    EXPECT_NE(m.find("(4)"), std::string::npos) << m;
    c.embedding_size = 5;
    EXPECT_NO_THROW(validate(c));
}

TEST(ModelConfig, UnusualTimingNeedsExplicitKeyAndWarns) {
    ModelConfig a = tiny_config(DecoderKind::luong, ScoreKind::additive);
    EXPECT_NE(usage_message(a).find("attention_timing: after"), std::string::npos)
        << usage_message(a);
    a.decoder.attention_timing = AttentionTiming::after;
    auto w = validate(a);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("mistake 2"), std::string::npos) << w[0];

    ModelConfig b = tiny_config(DecoderKind::bahdanau, ScoreKind::general);
    EXPECT_THROW(validate(b), UsageError);
    b.decoder.attention_timing = AttentionTiming::before;
    EXPECT_EQ(validate(b).size(), 1u);

    // the natural pairs give no warning; concat with luong is Luong's own score
    EXPECT_TRUE(validate(tiny_config()).empty());
    EXPECT_TRUE(validate(tiny_config(DecoderKind::luong, ScoreKind::general)).empty());
    EXPECT_TRUE(validate(tiny_config(DecoderKind::luong, ScoreKind::concat)).empty());

    ModelConfig c = tiny_config();
    c.decoder.attention_timing = AttentionTiming::after;  // bahdanau needs c_t before its step
    EXPECT_THROW(validate(c), UsageError);
}

TEST(ModelConfig, OtherErrors) {
    auto bad = [](auto edit) {
        ModelConfig c = tiny_config();
        edit(c);
        return usage_message(c);
    };
    EXPECT_NE(bad([](ModelConfig& c) { c.tgt_vocab_size = 4; }), "");
    EXPECT_NE(bad([](ModelConfig& c) { c.decoder.hidden_size = 0; }), "");
    EXPECT_NE(bad([](ModelConfig& c) { c.encoder.dropout = 1.0f; }), "");
    EXPECT_NE(bad([](ModelConfig& c) {
                  c.encoder.bidirectional = false;
                  c.decoder.bridge = BridgeKind::backward_first;
              }),
              "");
    EXPECT_NE(bad([](ModelConfig& c) { c.decoder.input_feeding = true; }), "");
    EXPECT_NE(bad([](ModelConfig& c) { c.special_ids.eos = 10; }), "");
    EXPECT_NE(bad([](ModelConfig& c) {
                  c.attention.local = LocalMode::monotonic;
                  c.attention.window = 0;
              }),
              "");
    EXPECT_NE(bad([](ModelConfig& c) {
                  c.decoder.kind = DecoderKind::luong;
                  c.attention.score = ScoreKind::general;
                  c.decoder.deep_output = true;
              }),
              "");
    EXPECT_EQ(bad([](ModelConfig&) {}), "");
}

}  // namespace
}  // namespace test_models_config
}  // namespace nazar
