#include "nazar/train/run_setup.h"

#include "nazar/core/check.h"
#include "nazar/train/checkpoint.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace nazar {
namespace {

void apply_override(TrainConfig& cfg, const RunOverride& o) {
    const ConfigKey* k = find_config_key(o.key);
    if (!k) {
        const std::string s = suggest_key(o.key);
        const bool flag = !o.label.empty();
        std::string hint;
        if (!s.empty())
            hint = flag ? fmt::format(" (did you mean {}?)", flag_name(*find_config_key(s)))
                        : fmt::format(" (did you mean '{}'?)", s);
        throw UsageError(flag ? fmt::format("unknown option {}{}", o.label, hint)
                              : fmt::format("unknown option '{}'{}", o.key, hint));
    }
    set_config_value(cfg, k->key, o.value, o.label);  // "" -> "hidden_size: 0 is out of range"
}

}  // namespace

TrainConfig make_resume_config(const TrainConfig& stored, const TrainConfig& requested,
                               const std::vector<std::string>& set_keys) {
    TrainConfig out = stored;
    for (const auto& key : set_keys) {
        const ConfigKey* k = find_config_key(key);
        NZ_CHECK(k != nullptr, "make_resume_config: unknown key '{}'", key);
        const std::string before = get_config_value(stored, *k),
                          after = get_config_value(requested, *k);
        if (before == after) continue;
        if (!k->resumable)
            throw UsageError(fmt::format(
                "--resume: {} cannot change when resuming (checkpoint: '{}', requested: "
                "'{}'); start a new run instead",
                k->key, before, after));
        set_config_value(out, k->key, after, "--resume");
    }
    return out;
}

ResolvedRun resolve_run(const RunRequest& request) {
    ResolvedRun run;
    run.resume = request.resume;
    run.dir = {.resume = !request.resume.empty(), .overwrite = request.overwrite};
    std::optional<Checkpoint> ck;
    std::string checkpoint_file;
    TrainConfig cfg = TrainConfig::defaults();
    if (!request.resume.empty()) {
        checkpoint_file = resolve_checkpoint(request.resume);
        ck.emplace(load_checkpoint(checkpoint_file));
        cfg = ck->config;
    }
    if (!request.config_file.empty()) apply_yaml_file(cfg, request.config_file);
    if (!request.config_text.empty())
        apply_yaml_config(cfg, request.config_text, request.config_source);
    for (const RunOverride& o : request.overrides) apply_override(cfg, o);
    if (ck) {
        const std::vector<std::string> changed = changed_keys(ck->config, cfg);
        cfg = make_resume_config(ck->config, cfg, changed);
        if (std::find(changed.begin(), changed.end(), "save_dir") == changed.end())
            cfg.save_dir = std::filesystem::path(checkpoint_file).parent_path().string();
        if (cfg.save_dir.empty()) cfg.save_dir.assign(1, '.');  // (not = ".": gcc 12 -Wrestrict)
    }
    if (request.overwrite && !request.resume.empty())
        throw UsageError(fmt::format(
            "{0} and {1} exclude each other: {1} continues the run in its directory, {0} starts "
            "a new one there",
            request.overwrite_name, request.resume_name));
    run.config = std::move(cfg);
    return run;
}

std::vector<std::string> prepare_run(const ResolvedRun& run, const PrepareOptions& options) {
    check_config(run.config);
    std::vector<std::string> lines;
    if (!options.prepare_dir) return lines;
    const RunDirReport prepared = prepare_run_dir(run.config.save_dir, run.dir);
    if (!prepared.removed.empty())
        lines.push_back(fmt::format("removed from {}: {}", run.config.save_dir,
                                    fmt::join(prepared.removed, ", ")));
    return lines;
}

}  // namespace nazar
