// nazar.train (docs/python.md "Train"): the CLI's trainer with the CLI's configuration rules.
//
//   configuration  the library resolves the run as for `nazar train` (nazar/train/run_setup.h):
//                  defaults (or, with `resume`, the checkpoint's stored configuration) < the
//                  YAML file or the dict (passed as JSON text, which YAML reads) < keyword
//                  overrides; on resume only resumable keys may change and files go next to the
//                  checkpoint; then the configuration is checked and save_dir prepared.
//   progress       TrainerHooks::on_record hands each metrics-log record (train window,
//                  validation) to the Python callback, with the GIL held only for that call; a
//                  callback returning False stops the run like an interrupt (checkpoint written).
//   Ctrl-C         Python's SIGINT handler stays installed. For the run SIGINT is blocked in
//                  the training thread and in nazar's workers, the library's signal watcher
//                  takes it, and the stop_after hook (after each update) hands it to Python's
//                  handlers (TrainInterrupt, interrupt.cpp: why no signal may land in a
//                  computing thread, and why Python's handler still runs). When they raise
//                  KeyboardInterrupt, the trainer's interrupt flag is set as the CLI's signal
//                  watcher sets it: the update in flight finishes, last.safetensors is
//                  written, and KeyboardInterrupt is raised with the resume hint;
//                  resume=save_dir continues bit for bit. Ctrl-C while the data is read gives
//                  KeyboardInterrupt as soon as it is read, before any update.
//   GIL            released for the whole run, so other Python threads keep running.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/train/run_setup.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include <atomic>
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

// The library resolves the run (nazar/train/run_setup.h) as for `nazar train`; errors name the
// keys as Python spells them ("hidden_size: ...", "unknown option 'x'", "resume").
RunRequest run_request(const std::string& yaml_text, const std::string& yaml_source,
                       const std::string& config_path,
                       const std::vector<std::pair<std::string, std::string>>& overrides,
                       const std::string& resume, bool overwrite) {
    RunRequest req{.config_file = config_path,
                   .config_text = yaml_text,
                   .config_source = yaml_source,
                   .resume = resume,
                   .overwrite = overwrite,
                   .resume_name = "resume",
                   .overwrite_name = "overwrite"};
    for (const auto& [key, value] : overrides) req.overrides.push_back({key, value, ""});
    return req;
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
    if (!r.averaged_steps.empty()) {  // average_best
        pb::dict avg;
        avg["path"] = (std::filesystem::path(cfg.save_dir) / "averaged.safetensors").string();
        avg["steps"] = r.averaged_steps;
        avg["valid"] = validation_dict(r.final_averaged);
        d["averaged"] = avg;
    } else {
        d["averaged"] = pb::none();
    }
    d["config"] = config_dict(cfg);
    return d;
}

pb::dict train(const std::string& yaml_text, const std::string& yaml_source,
               const std::string& config_path,
               const std::vector<std::pair<std::string, std::string>>& overrides,
               const std::string& resume, bool overwrite, pb::object callback) {
    ResolvedRun run;
    std::unique_ptr<Trainer> trainer;
    std::atomic<bool> stop{false};
    // Before set_num_threads below: workers it starts inherit the blocked SIGINT. Checked at
    // every update (a step is long next to a check; the stop comes at the next update).
    TrainInterrupt ctrl_c;
    {
        pb::gil_scoped_release nogil;
        run = resolve_run(
            run_request(yaml_text, yaml_source, config_path, overrides, resume, overwrite));
        if (run.config.threads > 0) set_num_threads(run.config.threads);
        // As `nazar train`: check the configuration, refuse an old run's directory (unless
        // resume or overwrite), remove stale temporaries, make sure a checkpoint can be written.
        for (const std::string& line : prepare_run(run)) std::fprintf(stderr, "%s\n", line.c_str());
    }
    const TrainConfig& cfg = run.config;
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
                const bool is_ctrl_c = e.matches(PyExc_KeyboardInterrupt);
                (is_ctrl_c ? interrupt : callback_error) =
                    std::make_unique<pb::error_already_set>(std::move(e));
                stop.store(true);
            }
        };
    hooks.stop_after = [&](int64_t) {  // after each update, before the interrupt flag is read
        if (interrupt) return false;
        try {
            ctrl_c.check();
        } catch (pb::error_already_set& e) {
            interrupt = std::make_unique<pb::error_already_set>(std::move(e));
            stop.store(true);
        }
        return false;
    };
    TrainResult r;
    {
        pb::gil_scoped_release nogil;
        trainer = std::make_unique<Trainer>(cfg, run.resume, hooks);
        ctrl_c.check();  // Ctrl-C while the data was read: KeyboardInterrupt before any update
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
    return config_dict(
        resolve_run(run_request(yaml_text, yaml_source, config_path, overrides, resume, false))
            .config);
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
