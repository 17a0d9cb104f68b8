// `nazar train --config run.yaml [--key value ...] [--resume DIR_OR_FILE]` (docs/design.md §6).
// Every key of the option table (nazar/train/train_config.h) is a flag here: the flags, their
// help and their checks are generated from that one table. This file turns the command line into
// a RunRequest (the YAML file, the flags as overrides in order: the global `nazar --threads`,
// below train's own --threads, then train's flags, then the underscore spellings); the library
// resolves it (nazar/train/run_setup.h: defaults < YAML < flags, --resume rules, files next to
// the checkpoint) and prepares the save directory before any data is read. Every configuration
// error is reported before any data is read, as one line, with exit code 2.
// Under mpirun (docs/distributed.md) every rank runs this; rank 0 alone prepares the directory,
// and an error on any rank prints one line naming the rank and ends the whole job.
#include "cli/command.h"
#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/dist/communicator.h"
#include "nazar/train/run_setup.h"
#include "nazar/train/signal_watcher.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

// Ctrl-C / SIGTERM: finish the current update, write last.safetensors, exit 130. A second
// signal, or one before training starts (while the data is read), kills at once.
//
// The signals are taken by the library's watcher thread (nazar/train/signal_watcher.h: it is
// made before the pool's threads start, so no computing thread takes one). The handler stays
// for a thread started before (it does what the watcher does).
std::atomic<bool> g_interrupt{false};
std::atomic<bool> g_training{false};  // the first signal stops at an update boundary
static_assert(std::atomic<bool>::is_always_lock_free);

// The first signal during training asks for a stop; a second, or one before, kills now.
// Async-signal-safe (atomics, signal, sigprocmask, raise): the handler calls it too.
void take_signal(int sig) {
    if (!g_training.load() || g_interrupt.exchange(true)) end_by_signal(sig);
}

extern "C" void on_signal(int sig) {
    take_signal(sig);
}

std::unique_ptr<SignalWatcher> watch_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return std::make_unique<SignalWatcher>(std::initializer_list<int>{SIGINT, SIGTERM},
                                           take_signal);
}

struct TrainArgs {
    std::string config, resume;
    bool overwrite = false;
    std::map<std::string, std::string> values;  // key -> text, from registered flags
    std::vector<std::pair<const ConfigKey*, CLI::Option*>> options;
};

// Flags CLI11 did not recognise: the underscore spelling of a key (--hidden_size) is accepted,
// anything else is an error with the closest key as a suggestion.
void add_extras(const std::vector<std::string>& extras, std::vector<RunOverride>& out) {
    for (std::size_t i = 0; i < extras.size(); ++i) {
        std::string arg = extras[i], value;
        if (arg.rfind("--", 0) != 0) throw UsageError(fmt::format("unexpected argument '{}'", arg));
        bool has_value = false;
        if (const auto eq = arg.find('='); eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg.resize(eq);
            has_value = true;
        }
        const ConfigKey* k = find_config_key(arg);
        if (!k) {
            const std::string s = suggest_key(arg);
            throw UsageError(fmt::format(
                "unknown option {}{}", arg,
                s.empty() ? std::string()
                          : fmt::format(" (did you mean {}?)", flag_name(*find_config_key(s)))));
        }
        if (!has_value) {
            const bool next_is_value = i + 1 < extras.size() && extras[i + 1].rfind("--", 0) != 0;
            if (next_is_value)
                value = extras[++i];
            else if (k->type == KeyType::boolean)
                value = "true";
            else
                throw UsageError(fmt::format("{} needs a value", flag_name(*k)));
        }
        out.push_back({k->key, value, flag_name(*k)});
    }
}

// The request of this command line: the global `nazar --threads N` is a flag too: it overrides
// the YAML file (train's own --threads, more specific, overrides it in turn); then the flags in
// the table's order, then the extras.
RunRequest run_request(CLI::App& app, const TrainArgs& a) {
    RunRequest req{.config_file = a.config, .resume = a.resume, .overwrite = a.overwrite};
    if (const CLI::App* parent = app.get_parent()) {
        const CLI::Option* global = parent->get_option_no_throw("--threads");
        if (global && global->count() > 0 && !global->results().empty())
            req.overrides.push_back({"threads", global->results().back(), "--threads"});
    }
    for (const auto& [key, opt] : a.options) {
        if (opt->count() == 0) continue;
        // A bare boolean flag (--keep-best) arrives as ""; any other empty value is empty
        // (--dev '' = no validation), never "true". An explicit empty boolean is refused by
        // parse_command_line (cli/options.h).
        const auto& r = opt->results();
        const bool bare = key->type == KeyType::boolean && (r.empty() || r.back().empty());
        const std::string value = bare ? std::string("true") : r.empty() ? std::string() : r.back();
        req.overrides.push_back({key->key, value, flag_name(*key)});
    }
    add_extras(app.remaining(), req.overrides);
    return req;
}

int train_here(CLI::App& app, TrainArgs& a, const dist::Communicator& comm) {
    const ResolvedRun run = resolve_run(run_request(app, a));
    const TrainConfig& cfg = run.config;
    const auto watcher = watch_signals();  // before the pool's threads start: they inherit its mask
    set_num_threads(cfg.threads);          // 0 = all cores
    // Before any data is read: check the configuration; rank 0 refuses an old run's directory,
    // removes stale temporaries, and makes sure the first checkpoint can be written.
    for (const std::string& line : prepare_run(run, {.prepare_dir = comm.rank() == 0}))
        fmt::print(stderr, "{}\n", line);
    TrainerHooks hooks;  // (not a designated initializer: -Wmissing-field-initializers)
    hooks.interrupt = &g_interrupt;
    Trainer trainer(cfg, run.resume, hooks);
    g_training.store(true);
    const TrainResult r = trainer.run();
    if (r.interrupted) return 130;
    return r.state.step > 0 || cfg.max_steps == 0 ? 0 : 1;
}

int run_train(CLI::App& app, TrainArgs& a) {
    dist::Communicator& comm = dist::world();  // a UsageError under mpirun in a build without MPI
    if (!comm.parallel()) return train_here(app, a, comm);
    try {
        return train_here(app, a, comm);
    } catch (const std::exception& e) {
        // The other ranks would wait for this one until dist_timeout: end the job now.
        fmt::print(stderr, "error: rank {} of {}: {}; ending the job\n", comm.rank(), comm.size(),
                   e.what());
        comm.abort(dynamic_cast<const UsageError*>(&e) ? 2 : 1);
    }
    return 1;  // not reached: abort() ends the process
}

void setup_train(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<TrainArgs>();
    app.add_option("--config", a->config,
                   "YAML file of training options (flags below override it)");
    app.add_option("--resume", a->resume,
                   "Continue from a checkpoint file, or DIR/last.safetensors; the result equals an "
                   "uninterrupted run");
    app.add_flag("--overwrite", a->overwrite,
                 "Start a new run in a save_dir that holds an old one, removing its model, best "
                 "and last files (without it such a directory is refused)");
    app.allow_extras();  // unknown flags get a did-you-mean suggestion (apply_extras)
    for (const ConfigKey& k : config_keys()) {
        CLI::Option* o = app.add_option(flag_name(k))->description(describe_key(k));
        const char* type = k.type == KeyType::integer   ? "INT"
                           : k.type == KeyType::real    ? "FLOAT"
                           : k.type == KeyType::boolean ? "BOOL"
                           : k.type == KeyType::file    ? "FILE"
                           : k.type == KeyType::choice  ? "CHOICE"
                                                        : "TEXT";
        o->type_name(type)->group(fmt::format("{} options", k.section));
        if (k.type == KeyType::boolean) o->expected(0, 1);
        a->options.emplace_back(&k, o);
    }
    app.footer(
        "Every option is also a YAML key (the flag without '--', '-' as '_'), flat or under data:, "
        "model:, "
        "training:.\nExample: nazar train --train data.tsv --dev dev.tsv --tokenizer char "
        "--hidden-size 64 "
        "--max-steps 2000");
    run = [&app, a] { return run_train(app, *a); };
}

}  // namespace

NZ_REGISTER_COMMAND(train,
                    "Train a model (every config key is also a flag; --resume continues exactly)",
                    setup_train);

}  // namespace nazar::cli
