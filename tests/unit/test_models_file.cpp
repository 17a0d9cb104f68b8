// Model file: save/load round-trip is bit-identical, metadata survives, and every broken-file
// case (missing / misshapen / unexpected tensor, wrong format, vocab size) is a clear error.
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>
#include <cstdio>
#include <string>

namespace nazar {
namespace test_models_file {
namespace {

using test::tiny_batch;
using test::tiny_config;

std::string temp_path(const char* name) {
    return std::string(::testing::TempDir()) + "nazar_model_" + std::to_string(::getpid()) + "_" +
           name;
}

std::string error_of(const SafeTensors& st) {
    return test::error_of([&] { model_from_safetensors(st); });
}

using test::vocab_of_size;

TEST(ModelFile, RoundTripIsBitIdentical) {
    for (bool tied : {false, true}) {
        auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
        c.decoder.input_feeding = true;
        if (tied) {
            c.embedding_size = 5;
            c.tie_target_embeddings = true;
        }
        Seq2Seq m(c, 21);
        const std::string path = temp_path(tied ? "tied.safetensors" : "plain.safetensors");
        const std::map<std::string, std::string> meta = {
            {kSrcVocabKey, vocab_of_size(10).to_json()},
            {kTgtVocabKey, vocab_of_size(10).to_json()},
            {"user.note", "hello"}};
        save_model(path, m, meta);
        LoadedModel r = load_model(path);
        std::remove(path.c_str());
        EXPECT_EQ(to_json_string(r.model->config()), to_json_string(c));
        EXPECT_EQ(r.metadata.at("user.note"), "hello");
        EXPECT_EQ(r.metadata.at(kModelFormatKey), "1");
        ParamList a = m.parameters(), b = r.model->parameters();
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            EXPECT_EQ(a[i].name, b[i].name);
            EXPECT_EQ(max_abs_diff(*a[i].value, *b[i].value), 0.0) << a[i].name;
        }
        std::vector<double> sa(2), sb(2);
        const Batch batch = tiny_batch();
        TrainPass(m).score(batch, sa);
        TrainPass(*r.model).score(batch, sb);
        EXPECT_EQ(sa, sb);  // bit-identical
    }
}

TEST(ModelFile, TiedModelsAlsoStoreGeneratorWeight) {
    auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.embedding_size = 5;
    c.tie_target_embeddings = true;
    Seq2Seq m(c);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    ASSERT_TRUE(st.contains("generator.weight"));  // PyTorch's strict load_state_dict needs the key
    EXPECT_EQ(max_abs_diff(st.get("generator.weight"), st.get("decoder.embedding.weight")), 0.0);
    st.get("generator.weight")[0] += 1.0f;
    EXPECT_NE(error_of(st).find("differs"), std::string::npos);
}

TEST(ModelFile, BrokenFilesGiveClearErrors) {
    Seq2Seq m(tiny_config());
    SafeTensors good;
    model_to_safetensors(m, {}, good);
    good.source = "m.safetensors";
    EXPECT_EQ(error_of(good), "");

    SafeTensors missing = good;
    missing.erase("attention.v.weight");
    std::string e = error_of(missing);
    EXPECT_NE(e.find("attention.v.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("missing"), std::string::npos) << e;

    SafeTensors shape = good;
    shape.set("generator.weight", Tensor({10, 6}));
    e = error_of(shape);
    EXPECT_NE(e.find("generator.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("(10, 6)"), std::string::npos) << e;
    EXPECT_NE(e.find("(10, 5)"), std::string::npos) << e;

    SafeTensors extra = good;
    extra.set("decoder.combine.weight", Tensor({5, 11}));
    EXPECT_NE(error_of(extra).find("unexpected tensor 'decoder.combine.weight'"),
              std::string::npos);
    SafeTensors ckpt = good;  // checkpoints add optimizer state: accepted
    ckpt.set("optim.exp_avg.generator.bias", Tensor({10}));
    EXPECT_EQ(error_of(ckpt), "");

    SafeTensors version = good;
    version.metadata[kModelFormatKey] = "2";
    EXPECT_NE(error_of(version).find("version"), std::string::npos);
    SafeTensors none = good;
    none.metadata.erase(kModelFormatKey);
    EXPECT_NE(error_of(none).find("not a nazar model"), std::string::npos);

    SafeTensors vocab = good;
    vocab.metadata[kTgtVocabKey] = vocab_of_size(12).to_json();
    e = error_of(vocab);
    EXPECT_NE(e.find("12"), std::string::npos) << e;
    EXPECT_NE(e.find("10"), std::string::npos) << e;

    SafeTensors cfg = good;
    cfg.metadata[kModelConfigKey] = R"({"src_vocab_size": 10, "tgt_vocab_size": 10, "bogus": 1})";
    // A bad nazar.config is a corrupt file: nazar::Error (exit 1), not a UsageError (exit 2).
    try {
        (void)model_from_safetensors(cfg);
        ADD_FAILURE() << "a config with an unknown key loaded";
    } catch (const UsageError& e) {
        ADD_FAILURE() << "UsageError: " << e.what();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace test_models_file
}  // namespace nazar
