// The run directory (save_dir) before the first update (docs/training.md, "Files").
//
// prepare_run_dir, in this order:
//   1. refuses a save_dir that exists but is not a directory;
//   2. refuses a directory that holds anything besides our stale temporaries, unless the run
//      resumes (--resume) or replaces the old run (--overwrite): a fresh run would overwrite
//      last.safetensors and leave the old run's best.safetensors beside the new model;
//   3. with --overwrite, removes the old run's model, best, last and averaged files, its periodic
//      checkpoint-<step>.safetensors (keep_checkpoints) and its best-<step>.safetensors
//      (average_best); other files stay;
//   4. removes stale temporaries of this directory: files named exactly
//      {model,best,last,averaged,checkpoint-<step>,best-<step>}.safetensors.tmp.XXXXXX
//      (atomic_write_file's mkstemp
//      names, left by a
//      kill during a write) or .nazar-write-check.XXXXXX (a probe, below), X in [A-Za-z0-9];
//   5. creates the directory and checks it is writable by creating, writing and removing a
//      probe file (an unnamed O_TMPFILE where the file system supports it, so a kill leaves
//      nothing behind).
// So an unwritable save_dir fails before any data is read, not at the first checkpoint.
// Refusals (2, and a save_dir that is a file) are UsageErrors; a directory that cannot be
// created or written is an Error naming it and the reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nazar {

struct RunDirOptions {
    bool resume = false;     // continuing a run: the directory may hold its files
    bool overwrite = false;  // replacing a run: its model/best/last files are removed
};

struct RunDirReport {
    std::vector<std::string> removed;  // file names (not paths) removed, sorted
};

RunDirReport prepare_run_dir(const std::string& dir, const RunDirOptions& options);

// Whether `name` (a file name, no directory) is one of the temporaries step 4 removes.
bool is_stale_temporary(std::string_view name);

}  // namespace nazar
