// The training configuration table (nazar/train/train_config.h): defaults, YAML (flat and by
// section), one-line UsageErrors for every kind of mistake, JSON round trip for checkpoints.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/train/train_config.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace nazar {
namespace test_train_config {
namespace {

using test::usage_message;

TEST(TrainConfig, TableIsConsistent) {
    std::set<std::string> keys;
    for (const auto& k : config_keys()) {
        EXPECT_TRUE(keys.insert(k.key).second) << "duplicate key " << k.key;
        EXPECT_TRUE(std::string_view(k.section) == "data" ||
                    std::string_view(k.section) == "model" ||
                    std::string_view(k.section) == "training")
            << k.key;
        EXPECT_GT(std::string_view(k.help).size(), 5u) << k.key;
        EXPECT_EQ(find_config_key(flag_name(k)), &k) << flag_name(k);
        // Every default is accepted by its own parser, and printed back the same way.
        TrainConfig c;
        EXPECT_NO_THROW(set_config_value(c, k.key, k.def, "test")) << k.key;
        if (k.type != KeyType::real) {
            EXPECT_EQ(get_config_value(c, k), k.def) << k.key;
        }
    }
    EXPECT_EQ(flag_name(*find_config_key("hidden_size")), "--hidden-size");
}

TEST(TrainConfig, Defaults) {
    const TrainConfig c = TrainConfig::defaults();
    EXPECT_EQ(c.tokenizer, "word");
    EXPECT_EQ(c.cell, "gru");
    EXPECT_EQ(c.hidden_size, 128);
    EXPECT_TRUE(c.bidirectional);
    EXPECT_DOUBLE_EQ(c.lr, 0.001);
    EXPECT_EQ(c.optimizer, "adam");
    EXPECT_EQ(c.batch_size, 32);
    EXPECT_EQ(c.save_dir, "model");
}

TEST(TrainConfig, ParsesEveryType) {
    TrainConfig c = TrainConfig::defaults();
    set_config_value(c, "hidden-size", "256", "--hidden-size");
    set_config_value(c, "--dropout", "0.25", "--dropout");
    set_config_value(c, "bidirectional", "no", "x");
    set_config_value(c, "cell", "lstm", "x");
    set_config_value(c, "save_dir", "out/run1", "x");
    EXPECT_EQ(c.hidden_size, 256);
    EXPECT_DOUBLE_EQ(c.dropout, 0.25);
    EXPECT_FALSE(c.bidirectional);
    EXPECT_EQ(c.cell, "lstm");
    EXPECT_EQ(c.save_dir, "out/run1");
}

TEST(TrainConfig, ErrorsAreOneLineWithTheValues) {
    TrainConfig c = TrainConfig::defaults();
    const struct {
        const char *key, *value, *expected;
    } cases[] = {
        {"hiden_size", "12", "--x: unknown key 'hiden_size' (did you mean 'hidden_size'?)"},
        {"learning_rat", "1", "--x: unknown key 'learning_rat'"},
        {"hidden_size", "12x", "--x: hidden_size: expected an integer, got '12x'"},
        {"hidden_size", "", "--x: hidden_size: expected an integer, got ''"},
        {"lr", "fast", "--x: lr: expected a number, got 'fast'"},
        {"lr", "nan", "--x: lr: expected a number, got 'nan'"},
        {"bidirectional", "maybe", "--x: bidirectional: expected true or false, got 'maybe'"},
        {"dropout", "1", "--x: dropout: 1 is out of range [0, 1)"},
        {"hidden_size", "0", "--x: hidden_size: 0 is out of range [1, 65536]"},
        {"label_smoothing", "-0.1", "--x: label_smoothing: -0.1 is out of range [0, 1)"},
        {"cell", "lstn", "--x: cell: 'lstn' is not one of gru, lstm (did you mean 'lstm'?)"},
        {"optimizer", "rmsprop", "--x: optimizer: 'rmsprop' is not one of adam, adamw, sgd"},
    };
    for (const auto& tc : cases) {
        const std::string msg =
            usage_message([&] { set_config_value(c, tc.key, tc.value, "--x"); });
        EXPECT_EQ(msg.substr(0, std::string_view(tc.expected).size()), tc.expected)
            << tc.key << "=" << tc.value;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_EQ(usage_message([&] { set_config_value(c, "learning_rat", "1", "--x"); }),
              "--x: unknown key 'learning_rat'");  // too far from every key for a suggestion
}

TEST(TrainConfig, EditDistance) {
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("lr", "lr"), 0u);
    EXPECT_EQ(suggest_key("--max-step"), "max_steps");
    EXPECT_EQ(suggest_key("zzzzzzzz"), "");
}

TEST(TrainConfig, YamlFlatAndSections) {
    TrainConfig c = TrainConfig::defaults();
    apply_yaml_config(c,
                      "tokenizer: char\n"
                      "model:\n  hidden_size: 32\n  cell: lstm\n  bidirectional: false\n"
                      "training:\n  lr: 0.5\n  optimizer: sgd\n",
                      "run.yaml");
    EXPECT_EQ(c.tokenizer, "char");
    EXPECT_EQ(c.hidden_size, 32);
    EXPECT_EQ(c.cell, "lstm");
    EXPECT_FALSE(c.bidirectional);
    EXPECT_DOUBLE_EQ(c.lr, 0.5);
    EXPECT_EQ(c.optimizer, "sgd");
    apply_yaml_config(c, "", "empty.yaml");  // an empty file changes nothing
    EXPECT_EQ(c.hidden_size, 32);
}

TEST(TrainConfig, YamlErrors) {
    TrainConfig c = TrainConfig::defaults();
    const struct {
        const char *yaml, *expected;
    } cases[] = {
        {"hidden_sise: 3\n", "run.yaml: unknown key 'hidden_sise' (did you mean 'hidden_size'?)"},
        {"hidden_size: [1, 2]\n", "run.yaml: hidden_size: expected a single value, got a list"},
        {"hidden_size:\n", "run.yaml: hidden_size: needs a value"},
        {"model:\n  lr: 0.1\n", "run.yaml: key 'lr' belongs in section 'training', not 'model'"},
        {"- a\n- b\n", "run.yaml: expected a mapping of keys to values at the top level"},
        {"a: [1,\n", "run.yaml: invalid YAML at line"},
        {"dropout: 2\n", "run.yaml: dropout: 2 is out of range [0, 1)"},
    };
    for (const auto& tc : cases) {
        const std::string msg = usage_message([&] { apply_yaml_config(c, tc.yaml, "run.yaml"); });
        EXPECT_EQ(msg.substr(0, std::string_view(tc.expected).size()), tc.expected) << tc.yaml;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_EQ(usage_message([&] { apply_yaml_file(c, "/nonexistent/run.yaml"); }),
              "--config: file '/nonexistent/run.yaml' does not exist");
}

TEST(TrainConfig, ValidateCrossKeyChecks) {
    const std::string dir = ::testing::TempDir() + "nazar_train_config";
    std::filesystem::create_directories(dir);
    const std::string tsv = dir + "/train.tsv";
    atomic_write_file(tsv, "a b\tc d\n");
    TrainConfig ok = TrainConfig::defaults();
    ok.train = tsv;
    EXPECT_NO_THROW(validate_config(ok));

    auto msg = [](TrainConfig c) { return usage_message([&] { validate_config(c); }); };
    TrainConfig c = ok;
    c.train = "";
    EXPECT_EQ(msg(c), "no training data: set train (a TSV) or train_src and train_tgt");
    c = ok;
    c.train = dir + "/trian.tsv";
    EXPECT_EQ(msg(c), "train: file '" + dir + "/trian.tsv' does not exist");
    c = ok;
    c.dev = dir + "/dev.tsv";
    EXPECT_EQ(msg(c), "dev: file '" + dir + "/dev.tsv' does not exist");
    c = ok;
    c.train_src = tsv;
    EXPECT_EQ(msg(c), "set either train or train_src/train_tgt, not both");
    c = ok;
    c.attention = "dot";  // d_h = 2 x 128 = 256, d_s = 100
    c.decoder_hidden_size = 100;
    EXPECT_EQ(
        msg(c),
        "attention 'dot' needs d_s == d_h, got d_s = 100 (decoder_hidden_size) and d_h = 256 "
        "(hidden_size 128 x 2, bidirectional); use attention: general, or make the sizes equal");
    c.decoder_hidden_size = 0;  // d_s defaults to d_h
    EXPECT_EQ(msg(c), "");
    c = ok;
    c.max_steps = 0;
    c.max_epochs = 0;
    EXPECT_EQ(msg(c), "max_steps, max_epochs and max_minutes are all 0: training would never stop");
    c.max_minutes = 30;  // a time budget alone is a stopping rule
    EXPECT_EQ(msg(c), "");
    c = ok;
    c.attention_scale = "sqrt";
    EXPECT_EQ(msg(c), "attention_scale 'sqrt' applies to dot/general scores only, not 'additive'");
}

TEST(TrainConfig, JsonRoundTripAndChangedKeys) {
    TrainConfig c = TrainConfig::defaults();
    c.hidden_size = 77;
    c.lr = 0.1 + 0.2;  // not exactly representable: the text must round-trip bit for bit
    c.metrics_log = "m.jsonl";
    const TrainConfig back = config_from_json(config_to_json(c), "ckpt");
    EXPECT_EQ(back.hidden_size, 77);
    EXPECT_EQ(back.lr, c.lr);
    EXPECT_EQ(back.metrics_log, "m.jsonl");
    EXPECT_TRUE(changed_keys(c, back).empty());
    EXPECT_EQ(changed_keys(c, TrainConfig::defaults()),
              (std::vector<std::string>{"hidden_size", "lr", "metrics_log"}));
    EXPECT_FALSE(find_config_key("hidden_size")->resumable);
    EXPECT_TRUE(find_config_key("max_steps")->resumable);
}

TEST(TrainConfig, HelpTextNamesTypeRangeAndDefault) {
    EXPECT_EQ(describe_key(*find_config_key("dropout")),
              "Dropout between stacked RNN layers (encoder and decoder) [0, 1) (default: 0)");
    EXPECT_EQ(describe_key(*find_config_key("cell")),
              "Recurrent cell of encoder and decoder {gru, lstm} (default: gru)");
}

}  // namespace
}  // namespace test_train_config
}  // namespace nazar
