// Fuzzes the configuration parsers: the YAML training configuration (train/train_config.h),
// its stored JSON form (checkpoint metadata "train.config"), and the model configuration JSON
// (models/config.h, the model file's "nazar.config"), and a checkpoint's train.state JSON.
//
// Properties: hostile text gives a one-line nazar::Error (UsageError for user mistakes) or a
// configuration; an accepted configuration survives its JSON round trip unchanged.
// Seeds: fuzz/corpus/train_config/ (YAML flat and by section, stored JSON, model JSON).
#include "fuzz/common.h"

#include "nazar/models/config.h"
#include "nazar/train/checkpoint.h"
#include "nazar/train/train_config.h"

using namespace nazar;

namespace {

void check_train_round_trip(const TrainConfig& cfg) {
    const std::string json = config_to_json(cfg);
    const TrainConfig back = config_from_json(json, "round trip");  // must not throw
    if (const auto diff = changed_keys(cfg, back); !diff.empty())
        fuzz::fail("training config key '" + diff.front() + "' changed in a JSON round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string text(fuzz::as_text(data, size));

    TrainConfig cfg = TrainConfig::defaults();
    if (fuzz::expect_error_or_ok([&] { apply_yaml_config(cfg, text, "fuzz.yaml"); })) {
        check_train_round_trip(cfg);
        fuzz::expect_error_or_ok([&] { validate_config(cfg); });
    }

    TrainConfig stored;
    if (fuzz::expect_error_or_ok([&] { stored = config_from_json(text, "fuzz.json"); }))
        check_train_round_trip(stored);

    // A checkpoint's "train.state" metadata.
    fuzz::expect_error_or_ok([&] { (void)train_state_from_json(text, "fuzz.state"); });

    ModelConfig mc;
    if (fuzz::expect_error_or_ok([&] { mc = model_config_from_string(text); })) {
        const std::string json = to_json_string(mc);
        if (to_json_string(model_config_from_string(json)) != json)
            fuzz::fail("model config changed in a JSON round trip: " + json);
        fuzz::expect_error_or_ok([&] { (void)validate(mc); });
    }
    return 0;
}
