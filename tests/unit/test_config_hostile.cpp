// Hostile configurations (docs/reliability.md): values out of range, wrong types and malformed
// YAML given to the training-configuration parser (train/train_config.h) the way `nazar train
// --config run.yaml` and its flags give them, and the decoding options of `nazar translate`
// (decode/beam_search.h). Every one is a one-line nazar::UsageError naming the key; none is
// silently clamped, wrapped or accepted.
#include "nazar/decode/beam_search.h"
#include "nazar/train/train_config.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nazar {
namespace test_config_hostile {
namespace {

// The UsageError message of applying `yaml`, or "" when it is accepted. Other exceptions escape.
std::string yaml_error(const std::string& yaml) {
    TrainConfig cfg = TrainConfig::defaults();
    try {
        apply_yaml_config(cfg, yaml, "run.yaml");
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

std::string flag_error(const std::string& key, const std::string& value) {
    TrainConfig cfg = TrainConfig::defaults();
    try {
        set_config_value(cfg, key, value, "--" + key);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

struct Bad {
    const char* yaml;
    const char* expected;  // substring of the message
};

// Out-of-range and wrongly typed values: each key's range comes from the option table.
TEST(ConfigHostile, OutOfRangeValuesAreOneLineUsageErrors) {
    const std::vector<Bad> table = {
        {"hidden_size: -1", "hidden_size: -1 is out of range"},
        {"hidden_size: 0", "hidden_size: 0 is out of range"},
        {"embedding_size: -256", "embedding_size"},
        {"embedding_size: 1000000", "embedding_size"},
        {"encoder_layers: 0", "encoder_layers"},
        {"decoder_layers: -2", "decoder_layers"},
        {"decoder_hidden_size: -1", "decoder_hidden_size"},
        {"attention_window: 0", "attention_window: 0 is out of range"},
        {"attention_window: -3", "attention_window"},
        {"attention_size: -1", "attention_size"},
        {"position_size: -1", "position_size"},
        {"deep_output_size: -1", "deep_output_size"},
        {"dropout: 1.5", "dropout: 1.5 is out of range"},
        {"dropout: 1", "dropout: 1 is out of range"},  // [0, 1): 1 drops everything
        {"dropout: -0.1", "dropout"},
        {"label_smoothing: 1", "label_smoothing"},
        {"scheduled_sampling: 1.01", "scheduled_sampling"},
        {"momentum: 1", "momentum"},
        {"decay_factor: 1", "decay_factor"},
        {"lr: -0.001", "lr"},
        {"lr: .nan", "lr: expected a number"},
        {"lr: .inf", "lr"},
        {"lr: 1e400", "lr: expected a number"},
        {"clip_norm: -1", "clip_norm"},
        {"batch_size: 0", "batch_size"},
        {"batch_size: -32", "batch_size"},
        {"batch_tokens: -1", "batch_tokens"},
        {"max_length: -1", "max_length"},
        {"valid_interval: 0", "valid_interval"},
        {"log_interval: 0", "log_interval"},
        {"threads: -1", "threads"},
        {"threads: 100000", "threads"},
        {"seed: -1", "seed"},
        {"seed: 99999999999999999999", "seed: expected an integer"},  // beyond int64
        {"max_steps: 4294967296", "max_steps"},                       // beyond int: no wrap to 0
        {"hidden_size: 12x", "hidden_size: expected an integer, got '12x'"},
        {"hidden_size: 1.5", "hidden_size: expected an integer"},
        {"hidden_size: 0x10", "hidden_size: expected an integer"},
        {"hidden_size: ''", "hidden_size: expected an integer"},
        {"hidden_size:", "hidden_size: needs a value"},
        {"hidden_size: [1, 2]", "expected a single value, got a list"},
        {"hidden_size: {a: 1}", "expected a single value, got a mapping"},
        {"bidirectional: maybe", "bidirectional: expected true or false"},
        {"cell: lstn", "did you mean 'lstm'"},
        {"attention: transformer", "attention: 'transformer' is not one of"},
        {"hiden_size: 256", "unknown key 'hiden_size' (did you mean 'hidden_size'?)"},
        {"model: {lr: 0.1}", "key 'lr' belongs in section 'training', not 'model'"},
        {"save_dir: caf\xe9",
         "save_dir: the value is not valid UTF-8"},  // Latin-1: checkpoint JSON needs UTF-8
    };
    for (const Bad& b : table) {
        SCOPED_TRACE(b.yaml);
        std::string e;
        ASSERT_NO_THROW(e = yaml_error(b.yaml)) << "an exception other than UsageError";
        EXPECT_NE(e, "") << "accepted";
        EXPECT_NE(e.find(b.expected), std::string::npos) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
        EXPECT_EQ(e.rfind("run.yaml", 0), 0u) << "does not name the file: " << e;
    }
}

// The same values as flags (`nazar train --key value`) give the same refusals.
TEST(ConfigHostile, FlagsAreCheckedLikeYaml) {
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"hidden_size", "-1"},
                                                          {"attention_window", "0"},
                                                          {"dropout", "1.5"},
                                                          {"batch_size", "0"},
                                                          {"lr", "nan"},
                                                          {"seed", "2147483648"},
                                                          {"threads", "-1"},
                                                          {"max_steps", "1e9"}}) {
        SCOPED_TRACE(key + " = '" + value + "'");
        const std::string e = flag_error(key, value);
        EXPECT_NE(e, "") << "accepted";
        EXPECT_EQ(e.rfind("--" + key, 0), 0u) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
}

// Malformed documents: a one-line UsageError naming the file, never a yaml-cpp exception.
TEST(ConfigHostile, MalformedYamlIsAOneLineUsageError) {
    const std::vector<std::string> docs = {
        "hidden_size: [1, 2",                      // unterminated flow sequence
        "hidden_size: 1\n  lr: 2",                 // bad indentation
        "- 1\n- 2",                                // a list at the top
        "just a scalar",                           // a scalar at the top
        "? [a, b]\n: 1",                           // a key that is a list
        "? {a: 1}\n: 1",                           // a key that is a mapping
        "model:\n  ? [a]\n  : 1",                  // the same inside a section
        "*undefined_alias",                        // an alias to nothing
        "a: &x 1\nhidden_size: *x\nb: 2",          // unknown keys around an alias
        "\t hidden_size: 1",                       // a tab in indentation
        "hidden_size: \"unterminated",             // an unterminated string
        "hidden_size: |\n  12\n  34\n",            // a block scalar holding two lines
        "? |\n  two\n  lines\n: 1",                // a key holding two lines
        "lr: |\n  0.1\n  0.2\n",                   // a number over two lines
        "cell: \"gr\\nu\"",                        // an escaped newline in a choice
        std::string("hidden_size: 1\0lr: 2", 21),  // a NUL byte
        "\xff\xfe h: 1",                           // not UTF-8
        "data: 5",                                 // a section name with a scalar
    };
    for (const std::string& d : docs) {
        SCOPED_TRACE(d);
        TrainConfig cfg = TrainConfig::defaults();
        try {
            apply_yaml_config(cfg, d, "run.yaml");
            ADD_FAILURE() << "accepted";
        } catch (const UsageError& e) {
            const std::string m = e.what();
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(m.rfind("run.yaml", 0), 0u) << m;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a UsageError: " << e.what();
        }
    }
}

// The stored form (checkpoint metadata "train.config") refuses the same values.
TEST(ConfigHostile, StoredJsonConfigIsValidatedToo) {
    for (const std::string& j :
         {std::string(R"({"dropout": "1.5"})"), std::string(R"({"hidden_size": 256})"),
          std::string(R"({"attention_window": "0"})"), std::string("[1, 2]"),
          std::string("{\"lr\": \"0.1\""), std::string(R"({"bogus": "1"})")}) {
        SCOPED_TRACE(j);
        try {
            (void)config_from_json(j, "ckpt.safetensors");
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    }
}

// Decoding options of `nazar translate`: beam 0, n-best above the beam, negative penalties.
TEST(ConfigHostile, BeamOptionsOutOfRange) {
    const std::vector<BeamOptions> bad = {
        {.beam_size = 0},
        {.beam_size = -3},
        {.beam_size = 2, .n_best = 3},
        {.beam_size = 2, .n_best = 0},
        {.length_penalty = -1.0f},
        {.coverage_penalty = -0.5f},
        {.max_length_ratio = -1.0f},
        {.max_length = 0},
    };
    Seq2Seq model(test::tiny_config());
    const std::vector<int32_t> src = {5, 6, 7};
    const std::vector<int> lengths = {3};
    for (const BeamOptions& o : bad) {
        SCOPED_TRACE(testing::Message() << "beam " << o.beam_size << " n_best " << o.n_best
                                        << " alpha " << o.length_penalty << " beta "
                                        << o.coverage_penalty << " max " << o.max_length);
        EXPECT_THROW(validate(o), UsageError);
        EXPECT_THROW(beam_search(model, src, lengths, 3, o), UsageError);
    }
}

}  // namespace
}  // namespace test_config_hostile
}  // namespace nazar
