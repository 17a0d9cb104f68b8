// Training checkpoints (checkpoint.h).
#include "nazar/train/checkpoint.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/text_limits.h"
#include "nazar/core/threads.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace nazar {
namespace {

std::string dtext(double x) {  // shortest round-trip; "inf" for the empty best
    return std::isfinite(x) ? fmt::format("{}", x) : (x > 0 ? "inf" : "-inf");
}
double dparse(const std::string& s) {
    return std::strtod(s.c_str(), nullptr);
}

}  // namespace

std::string train_state_to_json(const TrainState& s) {
    nlohmann::ordered_json j;
    j["step"] = s.step;
    j["batches"] = s.batches;
    j["skipped"] = s.skipped;
    j["epoch"] = s.position.epoch;
    j["batch"] = s.position.batch;
    j["rng"] = nlohmann::json::array();
    for (uint64_t w : s.rng)
        j["rng"].push_back(std::to_string(w));  // JSON numbers lose 64-bit words
    j["best_dev_loss"] = dtext(s.best_dev_loss);
    j["best_step"] = s.best_step;
    j["bad_validations"] = s.bad_validations;
    j["validations"] = s.validations;
    j["tgt_tokens"] = s.tgt_tokens;
    return j.dump();
}

TrainState train_state_from_json(const std::string& json, const std::string& source) {
    TrainState s;
    check_nesting(json, source + ": train.state", TextSyntax::json);
    try {
        const nlohmann::json j = nlohmann::json::parse(json);
        s.step = j.at("step").get<int64_t>();
        s.batches = j.at("batches").get<int64_t>();
        s.skipped = j.at("skipped").get<int64_t>();
        s.position = {j.at("epoch").get<int64_t>(), j.at("batch").get<int64_t>()};
        const auto& r = j.at("rng");
        NZ_CHECK(r.is_array() && r.size() == 4, "rng must hold 4 words, got {}", excerpt(r.dump()));
        for (std::size_t i = 0; i < 4; ++i) s.rng[i] = std::stoull(r[i].get<std::string>());
        s.best_dev_loss = dparse(j.at("best_dev_loss").get<std::string>());
        s.best_step = j.at("best_step").get<int64_t>();
        s.bad_validations = j.at("bad_validations").get<int64_t>();
        s.validations = j.at("validations").get<int64_t>();
        s.tgt_tokens = j.at("tgt_tokens").get<int64_t>();
    } catch (const nlohmann::json::exception& e) {
        NZ_FAIL("{}: invalid train.state metadata: {}", source, excerpt(e.what()));
    } catch (const std::logic_error& e) {  // stoull
        NZ_FAIL("{}: invalid train.state rng word: {}", source, excerpt(e.what()));
    }
    return s;
}

void check_finite(const ParamList& params, const std::string& what) {
    for (const auto& p : params) {
        const float* v = p.value->data();
        for (int64_t i = 0; i < p.value->numel(); ++i)
            NZ_CHECK(std::isfinite(v[i]),
                     "{}: parameter '{}' holds a non-finite value ({}) at index {}; not saved",
                     what, p.name, v[i], i);
    }
}

void save_checkpoint(const std::string& path, Seq2Seq& model,
                     const std::map<std::string, std::string>& metadata, const Optimizer& optimizer,
                     const LrSchedule& schedule, const TrainState& state) {
    check_finite(model.parameters(), path);
    SafeTensors st;
    model_to_safetensors(model, metadata, st);
    optimizer.save_state(st);
    schedule.save_state(st);
    st.metadata["train.state"] = train_state_to_json(state);
    st.metadata["train.threads"] = std::to_string(num_threads());
    NZ_CHECK(st.has_meta("train.config"), "save_checkpoint: metadata lacks train.config");
    save_safetensors(path, st);
}

std::string resolve_checkpoint(const std::string& dir_or_file) {
    std::error_code ec;
    const std::string path =
        std::filesystem::is_directory(dir_or_file, ec)
            ? (std::filesystem::path(dir_or_file) / "last.safetensors").string()
            : dir_or_file;
    if (!file_exists(path)) throw UsageError(fmt::format("--resume: no checkpoint at '{}'", path));
    return path;
}

Checkpoint load_checkpoint(const std::string& path) {
    Checkpoint c;
    c.file = load_safetensors(path);
    NZ_CHECK(
        c.file.has_meta("train.state") && c.file.has_meta("train.config"),
        "'{}' is a model file, not a training checkpoint (no train.state / train.config metadata)",
        path);
    c.config = config_from_json(c.file.meta("train.config"), path);
    c.state = train_state_from_json(c.file.meta("train.state"), path);
    c.threads =
        c.file.has_meta("train.threads") ? std::atoi(c.file.meta("train.threads").c_str()) : 0;
    return c;
}

}  // namespace nazar
