// Setting up a training run: the one implementation behind `nazar train` (cli/cmd_train.cpp)
// and `nazar.train()` / `nazar.resolve_config()` (python/src/train.cpp). A front end turns its
// arguments into a RunRequest; the library decides everything else.
//
// resolve_run (reads the checkpoint's metadata and the YAML file, no training data):
//   configuration  TrainConfig::defaults(), or with `resume` the checkpoint's stored configuration
//                  < the YAML file (`config_file`) < the YAML text (`config_text`: Python's dict,
//                  as JSON) < `overrides`, in their order (the command line's flags, Python's
//                  keyword arguments); an unknown override key is a UsageError with the closest
//                  key as a suggestion.
//   resume         only resumable keys may differ from the checkpoint's (make_resume_config: a
//                  UsageError naming the key and both values); the files go next to the
//                  checkpoint (its directory, "." for a bare file name) unless the YAML or an
//                  override sets save_dir: the stored save_dir may be relative to another
//                  directory, or the run may have been moved.
//   overwrite      excludes resume (a UsageError naming both options): resume continues the run
//                  in its directory, overwrite starts a new one there.
// prepare_run (after it, still before any data is read): check_config (the configuration's
// cross-key and model checks, model warnings on stderr), then the run directory
// (run_dir.h: an old run's directory needs resume or overwrite, stale temporaries are removed,
// it must be writable). It returns the lines a front end prints on stderr.
//
// Errors are one line: UsageError for a mistake of the request (exit 2 on the command line,
// ValueError in Python), Error for a file that cannot be read or written.
#pragma once

#include "nazar/train/run_dir.h"
#include "nazar/train/train_config.h"

#include <string>
#include <vector>

namespace nazar {

struct RunOverride {
    std::string key{};    // a configuration key ('-' accepted for '_')
    std::string value{};  // its value as text, as on the command line
    // How errors name it: "--hidden-size" (a flag: "--hidden-size: ..." and an unknown key is
    // "unknown option --x (did you mean --y?)"), or "" ("hidden_size: ..." and "unknown option
    // 'x' (did you mean 'y'?)").
    std::string label{};
};

struct RunRequest {
    std::string config_file{};                   // YAML file; "" = none
    std::string config_text{}, config_source{};  // YAML text and its name in errors; "" = none
    std::vector<RunOverride> overrides{};        // applied in order, after the file and the text
    std::string resume{};                        // checkpoint file or run directory; "" = fresh
    bool overwrite = false;                      // replace the old run in save_dir
    // How errors name the resume and overwrite options.
    std::string resume_name = "--resume", overwrite_name = "--overwrite";
};

struct ResolvedRun {
    TrainConfig config{};
    std::string resume{};  // as requested ("" = fresh start): Trainer's `resume`
    RunDirOptions dir{};   // what prepare_run_dir may do with save_dir
};

ResolvedRun resolve_run(const RunRequest& request);

struct PrepareOptions {
    bool prepare_dir = true;  // false: only check_config (the ranks > 0 of a parallel run)
};
// check_config, then prepare_run_dir(config.save_dir); returns the lines to show the user
// ("removed from DIR: a, b" when stale or replaced files were removed), without line breaks.
std::vector<std::string> prepare_run(const ResolvedRun& run, const PrepareOptions& options = {});

}  // namespace nazar
