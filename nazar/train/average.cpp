// Checkpoint averaging and a run's periodic checkpoints (average.h).
#include "nazar/train/average.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

namespace nazar {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCheckpointPrefix = "checkpoint-";
constexpr std::string_view kRankedPrefix = "best-";
constexpr std::string_view kCheckpointSuffix = ".safetensors";

std::string step_file_name(std::string_view prefix, int64_t step) {
    return fmt::format("{}{}{}", prefix, step, kCheckpointSuffix);
}

// The step of `name` = prefix<step>.safetensors (decimal, no leading zeros), or -1.
int64_t step_file_step(std::string_view name, std::string_view prefix) {
    if (name.size() <= prefix.size() + kCheckpointSuffix.size() ||
        name.substr(0, prefix.size()) != prefix ||
        name.substr(name.size() - kCheckpointSuffix.size()) != kCheckpointSuffix)
        return -1;
    const std::string_view digits =
        name.substr(prefix.size(), name.size() - prefix.size() - kCheckpointSuffix.size());
    if (digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    int64_t step = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), step);
    return step_file_name(prefix, step) == name ? step : -1;  // no leading zeros
}

// (step, path) of every prefix<step>.safetensors in `dir`, by increasing step.
std::vector<std::pair<int64_t, std::string>> list_step_files(const std::string& dir,
                                                             std::string_view prefix) {
    std::vector<std::pair<int64_t, std::string>> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const int64_t step = step_file_step(it->path().filename().string(), prefix);
        if (step >= 0) out.emplace_back(step, it->path().string());
    }
    if (ec) throw Error(fmt::format("cannot list run directory '{}': {}", dir, ec.message()));
    std::sort(out.begin(), out.end());
    return out;
}

void remove_file(const std::string& path, std::vector<std::string>& removed) {
    std::error_code ec;
    if (fs::remove(path, ec))
        removed.push_back(fs::path(path).filename().string());
    else if (ec)
        throw Error(fmt::format("cannot remove '{}': {}", path, ec.message()));
}

// `nazar average --last K --run DIR` / `--best K`: K >= 1 and DIR a directory (UsageError).
void check_run_choice(const std::string& dir, int k, const char* flag) {
    if (k < 1) throw UsageError(fmt::format("{} must be >= 1, got {}", flag, k));
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw UsageError(fmt::format("--run: '{}' is not a directory", dir));
}

// UsageError when the run holds fewer than k files of the kind: how many, and the training key
// that keeps them.
void check_enough(const std::string& dir, int k, std::size_t have, const char* flag,
                  const char* what, const char* detail, const char* key) {
    if (have >= static_cast<std::size_t>(k)) return;
    throw UsageError(
        fmt::format("{} {}: '{}' holds {} {}{}{}; train with {}: {} (or more) to "
                    "keep them",
                    flag, k, dir, have, what, have == 1 ? "" : "s", detail, key, k));
}

bool ranked_before(const RankedCheckpoint& a, const RankedCheckpoint& b) {
    return a.criterion != b.criterion ? a.criterion < b.criterion : a.step < b.step;
}

// The metadata keys that must agree (when either file has them).
constexpr const char* kSharedKeys[] = {kSrcVocabKey, kTgtVocabKey, kSrcTokenizerKey,
                                       kTgtTokenizerKey};

// Why `b` (config of `other`) cannot be averaged with `a` (config of `first`): the first tensor
// whose shape differs, then the first differing configuration field; "" when they are equal.
std::string config_difference(const ModelConfig& a, const ModelConfig& b) {
    const std::string ja = to_json_string(a), jb = to_json_string(b);
    if (ja == jb) return "";
    std::string why;
    const auto sa = model_param_shapes(a), sb = model_param_shapes(b);
    for (std::size_t i = 0; i < std::max(sa.size(), sb.size()); ++i) {
        if (i < sa.size() && i < sb.size() && sa[i] == sb[i]) continue;
        if (i >= sb.size())
            why = fmt::format("it lacks tensor '{}'; ", sa[i].first);
        else if (i >= sa.size() || sa[i].first != sb[i].first)
            why = fmt::format("it has tensor '{}' where the first has '{}'; ", sb[i].first,
                              i < sa.size() ? sa[i].first : std::string("none"));
        else
            why = fmt::format("tensor '{}' has shape {} there but {} in the first; ", sb[i].first,
                              sb[i].second.str(), sa[i].second.str());
        break;
    }
    const nlohmann::json patch =
        nlohmann::json::diff(nlohmann::json::parse(ja), nlohmann::json::parse(jb));
    const nlohmann::json pa = nlohmann::json::parse(ja), pb = nlohmann::json::parse(jb);
    for (std::size_t i = 0; i < std::min<std::size_t>(3, patch.size()); ++i) {
        const std::string path = patch[i].value("path", std::string("?"));
        const nlohmann::json::json_pointer ptr(path);
        why += fmt::format("{}{} ({} vs {})", i ? ", " : "nazar.config differs at ", path,
                           pa.contains(ptr) ? excerpt(pa.at(ptr).dump()) : "absent",
                           pb.contains(ptr) ? excerpt(pb.at(ptr).dump()) : "absent");
    }
    if (patch.size() > 3) why += fmt::format(" and {} more", patch.size() - 3);
    return why;
}

}  // namespace

AverageReport average_models(std::span<const std::string> inputs, const std::string& output) {
    if (inputs.empty()) throw UsageError("average: no model files given");
    LoadedModel first = load_model(inputs[0]);
    const ParamList params = first.model->parameters();
    std::vector<std::vector<double>> sum(params.size());
    auto add = [&](const ParamList& ps) {
        for (std::size_t i = 0; i < ps.size(); ++i) {
            const float* v = ps[i].value->data();
            auto& s = sum[i];
            s.resize(static_cast<std::size_t>(ps[i].value->numel()), 0.0);
            for (std::size_t j = 0; j < s.size(); ++j) s[j] += static_cast<double>(v[j]);
        }
    };
    add(params);
    for (std::size_t f = 1; f < inputs.size(); ++f) {
        const LoadedModel m = load_model(inputs[f]);
        const std::string why = config_difference(first.model->config(), m.model->config());
        if (!why.empty())
            throw Error(fmt::format("average: '{}' cannot be averaged with '{}': {}", inputs[f],
                                    inputs[0], why));
        for (const char* key : kSharedKeys) {
            const auto a = first.metadata.find(key);
            const auto b = m.metadata.find(key);
            const bool ha = a != first.metadata.end(), hb = b != m.metadata.end();
            if (ha != hb || (ha && a->second != b->second))
                throw Error(fmt::format(
                    "average: '{}' cannot be averaged with '{}': metadata '{}' differs ({}) "
                    "(models must share vocabularies and tokenizers)",
                    inputs[f], inputs[0], key,
                    ha && hb ? "different values" : (ha ? "absent in it" : "absent in the first")));
        }
        add(m.model->parameters());
    }
    const double n = static_cast<double>(inputs.size());
    AverageReport report{.files = static_cast<int>(inputs.size())};
    for (std::size_t i = 0; i < params.size(); ++i) {
        float* v = params[i].value->data();
        for (std::size_t j = 0; j < sum[i].size(); ++j) v[j] = static_cast<float>(sum[i][j] / n);
        report.parameters += params[i].value->numel();
    }
    std::map<std::string, std::string> meta;
    for (const auto& [k, v] : first.metadata) {
        const bool state =
            k.rfind("optim.", 0) == 0 || k.rfind("schedule.", 0) == 0 ||
            (k.rfind("train.", 0) == 0 && k != "train.config" && k != "train.corpus_pairs");
        if (!state) meta[k] = v;
    }
    meta["nazar.averaged_from"] =
        nlohmann::json(std::vector<std::string>(inputs.begin(), inputs.end())).dump();
    save_model(output, *first.model, meta);
    return report;
}

std::string periodic_checkpoint_name(int64_t step) {
    return step_file_name(kCheckpointPrefix, step);
}

int64_t periodic_checkpoint_step(std::string_view name) {
    return step_file_step(name, kCheckpointPrefix);
}

std::vector<std::pair<int64_t, std::string>> list_periodic_checkpoints(const std::string& dir) {
    return list_step_files(dir, kCheckpointPrefix);
}

std::vector<std::string> last_checkpoints(const std::string& dir, int k) {
    check_run_choice(dir, k, "--last");
    const auto all = list_periodic_checkpoints(dir);
    check_enough(dir, k, all.size(), "--last", "periodic checkpoint",
                 " (checkpoint-<step>.safetensors)", "keep_checkpoints");
    std::vector<std::string> out;
    for (std::size_t i = all.size() - static_cast<std::size_t>(k); i < all.size(); ++i)
        out.push_back(all[i].second);
    return out;
}

std::vector<std::string> prune_periodic_checkpoints(const std::string& dir, int keep,
                                                    int64_t step) {
    std::vector<std::string> removed;
    const auto all = list_periodic_checkpoints(dir);
    int64_t kept = 0;
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        if (it->first <= step && kept < keep) {
            ++kept;
            continue;
        }
        remove_file(it->second, removed);
    }
    std::sort(removed.begin(), removed.end());
    return removed;
}

std::string ranked_checkpoint_name(int64_t step) {
    return step_file_name(kRankedPrefix, step);
}

int64_t ranked_checkpoint_step(std::string_view name) {
    return step_file_step(name, kRankedPrefix);
}

std::vector<RankedCheckpoint> list_ranked_checkpoints(const std::string& dir) {
    std::vector<RankedCheckpoint> out;
    for (auto& [step, path] : list_step_files(dir, kRankedPrefix)) {
        const SafeTensors file = load_safetensors(path);
        const auto it = file.metadata.find(kValidCriterionKey);
        if (it == file.metadata.end())
            throw Error(
                fmt::format("'{}' has no {} (metadata): it was not written by a run with "
                            "average_best; rename or remove it",
                            path, kValidCriterionKey));
        double c = 0;
        const char* end = it->second.data() + it->second.size();
        const auto [p, err] = std::from_chars(it->second.data(), end, c);
        if (err != std::errc() || p != end || !std::isfinite(c))
            throw Error(fmt::format("'{}': {} is '{}', not a finite number", path,
                                    kValidCriterionKey, excerpt(it->second)));
        out.push_back({step, c, path});
    }
    std::sort(out.begin(), out.end(), ranked_before);
    return out;
}

bool enters_best(const std::vector<RankedCheckpoint>& kept, double criterion, int k) {
    if (k < 1) return false;
    if (static_cast<int>(kept.size()) < k) return true;
    return criterion < kept[static_cast<std::size_t>(k) - 1].criterion;
}

std::vector<RankedCheckpoint> prune_ranked_checkpoints(const std::string& dir, int k,
                                                       int64_t step) {
    std::vector<RankedCheckpoint> kept;
    std::vector<std::string> removed;
    for (auto& r : list_ranked_checkpoints(dir)) {
        if (r.step <= step && static_cast<int>(kept.size()) < k)
            kept.push_back(std::move(r));
        else
            remove_file(r.path, removed);
    }
    return kept;
}

std::vector<std::string> best_checkpoints(const std::string& dir, int k) {
    check_run_choice(dir, k, "--best");
    const auto all = list_ranked_checkpoints(dir);
    check_enough(dir, k, all.size(), "--best", "best-<step>.safetensors file", "", "average_best");
    std::vector<std::string> out;
    for (int i = 0; i < k; ++i) out.push_back(all[static_cast<std::size_t>(i)].path);
    return out;
}

}  // namespace nazar
