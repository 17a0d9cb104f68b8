// nazar.train (docs/python.md "Train"): the CLI's trainer with the CLI's configuration rules.
//
//   configuration  defaults (or, with `resume`, the checkpoint's stored configuration) < the YAML
//                  file or the dict (passed as JSON text, which YAML reads) < keyword overrides;
//                  on resume only resumable keys may change and files go next to the
//                  checkpoint, exactly as cli/cmd_train.cpp does it with the same library calls.
//   progress       TrainerHooks::on_record hands each metrics-log record (train window,
//                  validation) to the Python callback, with the GIL held only for that call; a
//                  callback returning False stops the run like an interrupt (checkpoint written).
//   Ctrl-C         Python's SIGINT handler stays installed. For the run SIGINT is blocked in
//                  the training thread and in nazar's workers, and the stop_after hook (after
//                  each update) lets a pending one in and runs Python's handlers
//                  (InterruptPoll, interrupt.cpp: why no signal may land in a computing
//                  thread, and why not a handler of our own). When they raise
//                  KeyboardInterrupt, the trainer's interrupt flag is set as the CLI's signal
//                  watcher sets it: the update in flight finishes, last.safetensors is
//                  written, and KeyboardInterrupt is raised with the resume hint;
//                  resume=save_dir continues bit for bit. Ctrl-C while the data is read gives
//                  KeyboardInterrupt as soon as it is read, before any update.
//   GIL            released for the whole run, so other Python threads keep running.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/train/run_dir.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nazar::py {
namespace {

pb::object to_python(const nlohmann::json& j) {
    switch (j.type()) {
        case nlohmann::json::value_t::boolean:
            return pb::bool_(j.get<bool>());
        case nlohmann::json::value_t::number_integer:
            return pb::int_(j.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned:
            return pb::int_(j.get<uint64_t>());
        case nlohmann::json::value_t::number_float:
            return pb::float_(j.get<double>());
        case nlohmann::json::value_t::string:
            return pb::str(j.get<std::string>());
        case nlohmann::json::value_t::object: {
            pb::dict d;
            for (const auto& [k, v] : j.items()) d[pb::str(k)] = to_python(v);
            return d;
        }
        case nlohmann::json::value_t::array: {
            pb::list l;
            for (const auto& v : j) l.append(to_python(v));
            return l;
        }
        default:
            return pb::none();
    }
}

pb::dict validation_dict(const ValidationResult& v) {
    pb::dict d;
    d["loss"] = v.loss;
    d["perplexity"] = v.perplexity;
    d["tokens"] = v.tokens;
    d["accuracy"] = v.accuracy;
    d["exact"] = v.exact;
    d["exact_se"] = v.exact_se;
    d["bleu"] = v.bleu;
    d["chrf"] = v.chrf;
    d["sampled"] = v.sampled;
    d["sources"] = v.sources;
    d["examples"] = v.examples;
    return d;
}

// Every key with its value typed as the table declares it (int, float, bool, str).
pb::dict config_dict(const TrainConfig& cfg) {
    pb::dict d;
    for (const ConfigKey& k : config_keys()) {
        const std::string v = get_config_value(cfg, k);
        switch (k.type) {
            case KeyType::integer:
                d[k.key] = pb::int_(std::stoll(v));
                break;
            case KeyType::real:
                d[k.key] = pb::float_(std::stod(v));
                break;
            case KeyType::boolean:
                d[k.key] = pb::bool_(v == "true");
                break;
            default:
                d[k.key] = pb::str(v);
                break;
        }
    }
    return d;
}

TrainConfig make_config(const std::string& yaml_text, const std::string& yaml_source,
                        const std::string& config_path,
                        const std::vector<std::pair<std::string, std::string>>& overrides,
                        const std::string& resume) {
    std::unique_ptr<Checkpoint> ck;
    TrainConfig cfg = TrainConfig::defaults();
    if (!resume.empty()) {
        ck = std::make_unique<Checkpoint>(load_checkpoint(resolve_checkpoint(resume)));
        cfg = ck->config;
    }
    if (!config_path.empty()) apply_yaml_file(cfg, config_path);
    if (!yaml_text.empty()) apply_yaml_config(cfg, yaml_text, yaml_source);
    for (const auto& [key, value] : overrides) {
        const ConfigKey* k = find_config_key(key);
        if (!k) {
            const std::string s = suggest_key(key);
            throw UsageError(
                fmt::format("unknown option '{}'{}", key,
                            s.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", s)));
        }
        set_config_value(cfg, k->key, value, "");  // "hidden_size: 0 is out of range [1, 65536]"
    }
    if (ck) {
        const std::vector<std::string> changed = changed_keys(ck->config, cfg);
        cfg = make_resume_config(ck->config, cfg, changed);
        if (std::find(changed.begin(), changed.end(), "save_dir") == changed.end())
            cfg.save_dir = std::filesystem::path(resolve_checkpoint(resume)).parent_path().string();
        if (cfg.save_dir.empty()) cfg.save_dir = ".";
    }
    return cfg;
}

// The run's result as a dict; an interrupt (KeyboardInterrupt from Ctrl-C, or what a Python
// signal handler raised) is raised after the checkpoint.
pb::dict result_dict(const TrainResult& r, const TrainConfig& cfg,
                     std::unique_ptr<pb::error_already_set>& interrupt) {
    if (interrupt) {
        if (!r.interrupted || !interrupt->matches(PyExc_KeyboardInterrupt)) throw *interrupt;
        const std::string msg = fmt::format(
            "training interrupted at step {}: checkpoint written to {}/last.safetensors; continue "
            "with nazar.train(resume='{}')",
            r.state.step, cfg.save_dir, cfg.save_dir);
        PyErr_SetString(PyExc_KeyboardInterrupt, msg.c_str());
        throw pb::error_already_set();
    }
    pb::dict d;
    d["model_path"] = r.model_path;
    d["save_dir"] = cfg.save_dir;
    d["step"] = r.state.step;
    d["skipped"] = r.state.skipped;
    d["target_tokens"] = r.state.tgt_tokens;
    d["interrupted"] = r.interrupted;
    d["early_stopped"] = r.early_stopped;
    d["last_train_loss"] = r.last_train_loss;
    d["last_valid"] = r.validated ? pb::object(validation_dict(r.last_valid)) : pb::none();
    d["config"] = config_dict(cfg);
    return d;
}

pb::dict train(const std::string& yaml_text, const std::string& yaml_source,
               const std::string& config_path,
               const std::vector<std::pair<std::string, std::string>>& overrides,
               const std::string& resume, bool overwrite, pb::object callback) {
    TrainConfig cfg;
    std::unique_ptr<Trainer> trainer;
    std::atomic<bool> stop{false};
    // Before set_num_threads below: workers it starts inherit the blocked SIGINT. Polled at
    // every update (a step is long next to a poll; the stop comes at the next update).
    InterruptPoll poll(std::chrono::milliseconds(0));
    {
        pb::gil_scoped_release nogil;
        cfg = make_config(yaml_text, yaml_source, config_path, overrides, resume);
        if (cfg.threads > 0) set_num_threads(cfg.threads);
        check_config(cfg);  // before any data is read
        if (overwrite && !resume.empty())
            throw UsageError(
                "overwrite and resume exclude each other: resume continues the run in its "
                "directory, overwrite starts a new one there");
        // As `nazar train`: refuse an old run's directory (unless resume or overwrite), remove
        // stale temporaries, and make sure the first checkpoint can be written.
        const RunDirReport prepared =
            prepare_run_dir(cfg.save_dir, {.resume = !resume.empty(), .overwrite = overwrite});
        for (const auto& n : prepared.removed)
            std::fprintf(stderr, "removed from %s: %s\n", cfg.save_dir.c_str(), n.c_str());
    }
    std::unique_ptr<pb::error_already_set> callback_error, interrupt;
    TrainerHooks hooks;
    hooks.interrupt = &stop;
    if (!callback.is_none())
        hooks.on_record = [&](const nlohmann::json& record) {
            if (stop.load()) return;
            pb::gil_scoped_acquire gil;
            try {
                const pb::object r = callback(to_python(record));
                if (!r.is_none() && !r.cast<bool>()) stop.store(true);
            } catch (pb::error_already_set& e) {
                // Ctrl-C seen by Python while the callback ran is an interrupt like any other.
                const bool ctrl_c = e.matches(PyExc_KeyboardInterrupt);
                (ctrl_c ? interrupt : callback_error) =
                    std::make_unique<pb::error_already_set>(std::move(e));
                stop.store(true);
            }
        };
    hooks.stop_after = [&](int64_t) {  // after each update, before the interrupt flag is read
        if (interrupt) return false;
        try {
            poll.check();
        } catch (pb::error_already_set& e) {
            interrupt = std::make_unique<pb::error_already_set>(std::move(e));
            stop.store(true);
        }
        return false;
    };
    TrainResult r;
    {
        pb::gil_scoped_release nogil;
        trainer = std::make_unique<Trainer>(cfg, resume, hooks);
        poll.check();  // Ctrl-C while the data was read: KeyboardInterrupt before any update
        r = trainer->run();
    }
    if (callback_error) throw *callback_error;
    return result_dict(r, cfg, interrupt);
}

// The configuration a run would use, as a dict (every key), without reading any data.
pb::dict resolve_config(const std::string& yaml_text, const std::string& yaml_source,
                        const std::string& config_path,
                        const std::vector<std::pair<std::string, std::string>>& overrides,
                        const std::string& resume) {
    const TrainConfig cfg = make_config(yaml_text, yaml_source, config_path, overrides, resume);
    return config_dict(cfg);
}

}  // namespace

void init_train(pb::module_& m) {
    m.def("train", &train, pb::arg("yaml_text"), pb::arg("yaml_source"), pb::arg("config_path"),
          pb::arg("overrides"), pb::arg("resume"), pb::arg("overwrite"), pb::arg("callback"));
    m.def("resolve_config", &resolve_config, pb::arg("yaml_text"), pb::arg("yaml_source"),
          pb::arg("config_path"), pb::arg("overrides"), pb::arg("resume"));
    m.def("config_keys", [] {
        pb::list l;
        for (const ConfigKey& k : config_keys())
            l.append(pb::make_tuple(k.key, k.section, k.def, describe_key(k), k.resumable));
        return l;
    });
}

}  // namespace nazar::py
