// The training configuration's choice keys parsed once into enums (train/choices.h): every name
// the table lists parses, an unknown one is a one-line UsageError naming the key wherever the
// config came from (code, not only YAML/flags), and the trainer no longer turns an unknown cell
// into GRU or an unknown optimizer into Adam.
#include "nazar/train/choices.h"
#include "nazar/train/train_config.h"
#include "nazar/train/trainer.h"

#include <gtest/gtest.h>

#include <string>

namespace nazar {
namespace test_train_choices {
namespace {

// The UsageError message of parse_choices(cfg), or "" when it is accepted.
std::string choice_error(const TrainConfig& cfg) {
    try {
        parse_choices(cfg);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

TEST(TrainChoices, DefaultsParse) {
    const TrainChoices c = parse_choices(TrainConfig::defaults());
    EXPECT_EQ(c.tokenizer, TokenizerKind::word);
    EXPECT_EQ(c.cell, CellType::gru);
    EXPECT_EQ(c.optimizer, OptimKind::adam);
    EXPECT_EQ(c.schedule, ScheduleKind::constant);
}

// The table (train_config.cpp) and the parsers agree: each listed name is accepted.
TEST(TrainChoices, EveryListedNameParses) {
    int keys = 0;
    for (const ConfigKey& k : config_keys()) {
        if (k.type != KeyType::choice) continue;
        ++keys;
        for (std::string_view name : k.choices) {
            TrainConfig cfg = TrainConfig::defaults();
            set_config_value(cfg, k.key, name, "test");
            EXPECT_EQ(choice_error(cfg), "") << k.key << " = " << name;
        }
    }
    EXPECT_EQ(
        keys,
        14);  // tokenizer ... valid_metric, precision: a new choice key needs a TrainChoices field
}

// A value written by code bypasses the YAML/flag reader: parse_choices still rejects it, naming
// the key and the choices, on one line.
TEST(TrainChoices, UnknownValueOfEveryKeyIsAOneLineError) {
    for (const ConfigKey& k : config_keys()) {
        if (k.type != KeyType::choice) continue;
        TrainConfig cfg = TrainConfig::defaults();
        cfg.*std::get<std::string TrainConfig::*>(k.field) = "bogus";
        const std::string e = choice_error(cfg);
        EXPECT_EQ(e.rfind(std::string(k.key) + ": 'bogus' is not one of ", 0), 0u)
            << k.key << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos);
    }
}

TEST(TrainChoices, SpecificMessagesWithSuggestion) {
    TrainConfig cfg = TrainConfig::defaults();
    cfg.cell = "lstn";
    EXPECT_EQ(choice_error(cfg), "cell: 'lstn' is not one of gru, lstm (did you mean 'lstm'?)");
    cfg = TrainConfig::defaults();
    cfg.optimizer = "adagrad";
    EXPECT_EQ(choice_error(cfg).rfind("optimizer: 'adagrad' is not one of adam, adamw, sgd", 0),
              0u);
}

// What the trainer used to do silently: cell "transformer" -> GRU, optimizer "rmsprop" -> Adam.
TEST(TrainChoices, NoSilentFallbackInTheTrainer) {
    TrainConfig cfg = TrainConfig::defaults();
    cfg.cell = "lstm";
    EXPECT_EQ(model_config_from(cfg, 9, 9).encoder.cell, CellType::lstm);
    EXPECT_EQ(model_config_from(cfg, 9, 9).decoder.cell, CellType::lstm);
    cfg.cell = "transformer";
    EXPECT_THROW(model_config_from(cfg, 9, 9), UsageError);
    EXPECT_THROW(validate_config(cfg), UsageError);
    cfg = TrainConfig::defaults();
    cfg.optimizer = "rmsprop";
    EXPECT_THROW(validate_config(cfg), UsageError);
    EXPECT_THROW(Trainer{cfg}, UsageError);
}

}  // namespace
}  // namespace test_train_choices
}  // namespace nazar
