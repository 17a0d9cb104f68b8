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

std::string loss_text(double loss) {
    return dtext(loss);
}

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
    j["skipped_in_a_row"] = s.skipped_in_a_row;
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
        NZ_CHECK_INPUT(r.is_array() && r.size() == 4, "rng must hold 4 words, got {} entries",
                       r.is_array() ? r.size() : 1);
        for (std::size_t i = 0; i < 4; ++i) s.rng[i] = std::stoull(r[i].get<std::string>());
        s.best_dev_loss = dparse(j.at("best_dev_loss").get<std::string>());
        s.best_step = j.at("best_step").get<int64_t>();
        s.bad_validations = j.at("bad_validations").get<int64_t>();
        s.validations = j.at("validations").get<int64_t>();
        s.tgt_tokens = j.at("tgt_tokens").get<int64_t>();
        // Older checkpoints lack it (a streak of skips then restarts at 0).
        s.skipped_in_a_row = j.value("skipped_in_a_row", int64_t{0});
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("{}: invalid train.state metadata: {}", source, excerpt(e.what())));
    } catch (const std::logic_error& e) {  // stoull
        throw Error(fmt::format("{}: invalid train.state rng word: {}", source, excerpt(e.what())));
    }
    check_train_state(s, source);
    return s;
}

void check_train_state(const TrainState& s, const std::string& source) {
    auto bad = [&](const std::string& why) {
        throw Error(fmt::format("{}: invalid train.state: {}", source, why));
    };
    const std::pair<const char*, int64_t> counts[] = {{"step", s.step},
                                                      {"batches", s.batches},
                                                      {"skipped", s.skipped},
                                                      {"skipped_in_a_row", s.skipped_in_a_row},
                                                      {"epoch", s.position.epoch},
                                                      {"batch", s.position.batch},
                                                      {"best_step", s.best_step},
                                                      {"bad_validations", s.bad_validations},
                                                      {"validations", s.validations},
                                                      {"tgt_tokens", s.tgt_tokens}};
    for (const auto& [name, v] : counts)
        if (v < 0 || v > kMaxTrainCount) bad(fmt::format("{} = {} is outside [0, 2^53]", name, v));
    // Every consumed batch is an update or a skipped one.
    if (s.step + s.skipped != s.batches)
        bad(fmt::format("step {} + skipped {} != batches {}", s.step, s.skipped, s.batches));
    if (s.skipped_in_a_row > s.skipped)
        bad(fmt::format("skipped_in_a_row {} > skipped {}", s.skipped_in_a_row, s.skipped));
    // Each epoch begins with a consumed batch, and an epoch's position counts consumed batches.
    if (s.position.epoch > s.batches || s.position.batch > s.batches)
        bad(fmt::format("epoch {}, batch {} is impossible after {} batches", s.position.epoch,
                        s.position.batch, s.batches));
    if (s.best_step > s.step) bad(fmt::format("best_step {} > step {}", s.best_step, s.step));
    if (s.validations > s.step || s.bad_validations > s.validations)
        bad(fmt::format("{} validations ({} without improvement) after {} updates", s.validations,
                        s.bad_validations, s.step));
    if (!(s.best_dev_loss >= 0))  // NaN or negative; +inf means "none yet"
        bad(fmt::format("best_dev_loss = {} is not a loss", s.best_dev_loss));
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
                     const LrSchedule& schedule, const TrainState& state, const Ema* ema) {
    check_finite(model.parameters(), path);
    SafeTensors st;
    model_to_safetensors(model, metadata, st);
    if (ema) ema->save_raw(st);
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
    NZ_CHECK_INPUT(
        !c.file.has_meta("nazar.precision"),
        "'{}' is a quantized ({}) model file, for inference only: training resumes from an "
        "fp32 checkpoint",
        path, c.file.meta("nazar.precision"));
    NZ_CHECK_INPUT(
        c.file.has_meta("train.state") && c.file.has_meta("train.config"),
        "'{}' is a model file, not a training checkpoint (no train.state / train.config metadata)",
        path);
    c.config = config_from_json(c.file.meta("train.config"), path);
    c.state = train_state_from_json(c.file.meta("train.state"), path);
    // Parameters and optimizer moments: a NaN moment would make every resumed update a
    // skipped one.
    check_finite_tensors(c.file);
    c.best_loss = c.state.best_dev_loss;
    if (c.file.has_meta(kBestLossKey)) {
        const std::string& text = c.file.meta(kBestLossKey);
        char* end = nullptr;
        c.best_loss = std::strtod(text.c_str(), &end);
        NZ_CHECK_INPUT(!text.empty() && end == text.c_str() + text.size() && c.best_loss >= 0,
                       "{}: metadata {} = '{}' is not a loss", path, kBestLossKey,
                       text.substr(0, 40));
    }
    c.threads =
        c.file.has_meta("train.threads") ? std::atoi(c.file.meta("train.threads").c_str()) : 0;
    return c;
}

}  // namespace nazar
