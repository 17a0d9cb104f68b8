// Resolving a training run (nazar/train/run_setup.h), the set-up `nazar train` and
// `nazar.train()` share: precedence of checkpoint, YAML file, YAML text and overrides; what may
// change on resume; the save directory next to the checkpoint; resume and overwrite; the run
// directory's refusals and report.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/train/run_setup.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace nazar {
namespace test_train_run_setup {
namespace {

using test::fresh_temp_dir;
using test::tiny_train_config;
using test::usage_message;

// A request that trains the tiny task of tests/common/tiny_training.h, given as overrides (the
// command line's flags).
RunRequest tiny_request(const TrainConfig& c) {
    RunRequest req;
    for (const char* key : {"train", "dev", "embedding_size", "hidden_size", "batch_size", "lr",
                            "max_steps", "valid_interval", "valid_sample", "save_dir", "progress"})
        req.overrides.push_back(
            {key, get_config_value(c, *find_config_key(key)), flag_name(*find_config_key(key))});
    return req;
}

// A finished 4-update run of the tiny task in `dir`/model: its last.safetensors is a checkpoint
// whose stored configuration says hidden_size 16, max_steps 4, lr 0.01.
std::string tiny_checkpoint(const std::string& dir) {
    set_num_threads(1);
    TrainConfig c = tiny_train_config(dir);
    c.max_steps = 4;
    c.valid_interval = 1000;
    Trainer(c).run();
    return c.save_dir;
}

TEST(RunSetup, FreshRunFileThenTextThenOverridesInOrder) {
    const std::string dir = fresh_temp_dir("run-setup-precedence");
    atomic_write_file(dir + "/run.yaml",
                      "model:\n  hidden_size: 32\n  embedding_size: 12\n"
                      "training:\n  lr: 0.5\n  max_steps: 7\n");
    RunRequest req{.config_file = dir + "/run.yaml",
                   .config_text = R"({"lr": 0.25, "batch_size": 5})",
                   .config_source = "config"};
    req.overrides = {{"batch_size", "6", "--batch-size"},
                     {"max-steps", "9", "--max-steps"},  // '-' for '_'
                     {"max_steps", "11", "--max-steps"}};
    const TrainConfig c = resolve_run(req).config;
    EXPECT_EQ(c.hidden_size, 32);                     // file
    EXPECT_EQ(c.embedding_size, 12);                  // file
    EXPECT_DOUBLE_EQ(c.lr, 0.25);                     // text over file
    EXPECT_EQ(c.batch_size, 6);                       // override over text
    EXPECT_EQ(c.max_steps, 11);                       // the last override wins
    EXPECT_EQ(c.cell, TrainConfig::defaults().cell);  // untouched keys keep their defaults
}

TEST(RunSetup, OverrideErrorsNameTheKeyAsTheFrontEndSpellsIt) {
    RunRequest flags;
    flags.overrides = {{"hiden_size", "3", "--hiden-size"}};
    EXPECT_EQ(usage_message([&] { resolve_run(flags); }),
              "unknown option --hiden-size (did you mean --hidden-size?)");
    RunRequest python;
    python.overrides = {{"hiden_size", "3", ""}};
    EXPECT_EQ(usage_message([&] { resolve_run(python); }),
              "unknown option 'hiden_size' (did you mean 'hidden_size'?)");
    python.overrides = {{"hidden_size", "0", ""}};
    EXPECT_NE(usage_message([&] { resolve_run(python); }).find("hidden_size: "), std::string::npos);
    flags.overrides = {{"hidden_size", "0", "--hidden-size"}};
    EXPECT_NE(usage_message([&] { resolve_run(flags); }).find("--hidden-size: "),
              std::string::npos);
}

TEST(RunSetup, ResumeStartsFromTheCheckpointThenFileThenOverrides) {
    const std::string dir = fresh_temp_dir("run-setup-resume");
    const std::string run_dir = tiny_checkpoint(dir);
    atomic_write_file(dir + "/more.yaml", "max_steps: 8\nlr: 0.005\n");
    RunRequest req{.config_file = dir + "/more.yaml", .resume = run_dir};
    req.overrides = {{"lr", "0.002", "--lr"}};
    const ResolvedRun run = resolve_run(req);
    EXPECT_EQ(run.config.hidden_size, 16);   // the checkpoint's, not the default 128
    EXPECT_EQ(run.config.max_steps, 8);      // the file over the checkpoint
    EXPECT_DOUBLE_EQ(run.config.lr, 0.002);  // the override over the file
    EXPECT_EQ(run.resume, run_dir);
    EXPECT_TRUE(run.dir.resume);
    EXPECT_FALSE(run.dir.overwrite);
    // A model key may not change, whether the file or an override changes it; an override back
    // to the stored value undoes the file's change.
    atomic_write_file(dir + "/bigger.yaml", "hidden_size: 32\n");
    RunRequest bigger{.config_file = dir + "/bigger.yaml", .resume = run_dir};
    const std::string msg = usage_message([&] { resolve_run(bigger); });
    EXPECT_NE(msg.find("hidden_size cannot change when resuming (checkpoint: '16', requested: "
                       "'32')"),
              std::string::npos)
        << msg;
    bigger.overrides = {{"hidden_size", "16", "--hidden-size"}};
    EXPECT_EQ(resolve_run(bigger).config.hidden_size, 16);
}

TEST(RunSetup, ResumedFilesGoNextToTheCheckpointUnlessSaveDirIsSet) {
    const std::string dir = fresh_temp_dir("run-setup-save-dir");
    const std::string run_dir = tiny_checkpoint(dir);
    // Moved: the stored save_dir names the old place.
    const std::string moved = dir + "/moved";
    std::filesystem::rename(run_dir, moved);
    EXPECT_EQ(resolve_run({.resume = moved}).config.save_dir, moved);
    EXPECT_EQ(resolve_run({.resume = moved + "/last.safetensors"}).config.save_dir, moved);
    RunRequest elsewhere{.resume = moved};
    elsewhere.overrides = {{"save_dir", dir + "/other", "--save-dir"}};
    EXPECT_EQ(resolve_run(elsewhere).config.save_dir, dir + "/other");
    atomic_write_file(dir + "/save.yaml", "save_dir: " + dir + "/from-yaml\n");
    EXPECT_EQ(resolve_run({.config_file = dir + "/save.yaml", .resume = moved}).config.save_dir,
              dir + "/from-yaml");
    // A checkpoint file named without a directory: the current directory.
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(moved);
    std::string here;
    EXPECT_NO_THROW(here = resolve_run({.resume = "last.safetensors"}).config.save_dir);
    std::filesystem::current_path(cwd);
    EXPECT_EQ(here, ".");
}

TEST(RunSetup, ResumeAndOverwriteExcludeEachOtherNamedAsTheFrontEndNamesThem) {
    const std::string dir = fresh_temp_dir("run-setup-overwrite");
    const std::string run_dir = tiny_checkpoint(dir);
    EXPECT_EQ(usage_message([&] { resolve_run({.resume = run_dir, .overwrite = true}); }),
              "--overwrite and --resume exclude each other: --resume continues the run in its "
              "directory, --overwrite starts a new one there");
    EXPECT_EQ(usage_message([&] {
                  resolve_run({.resume = run_dir,
                               .overwrite = true,
                               .resume_name = "resume",
                               .overwrite_name = "overwrite"});
              }),
              "overwrite and resume exclude each other: resume continues the run in its "
              "directory, overwrite starts a new one there");
    // A checkpoint that is not there: the error names the path.
    const std::string missing = dir + "/nowhere";
    try {
        resolve_run({.resume = missing});
        ADD_FAILURE() << "no error for a missing checkpoint";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
}

TEST(RunSetup, PrepareRefusesAnOldRunUnlessResumedOrOverwritten) {
    const std::string dir = fresh_temp_dir("run-setup-prepare");
    const std::string run_dir = tiny_checkpoint(dir);
    RunRequest fresh = tiny_request(tiny_train_config(dir));
    const ResolvedRun again = resolve_run(fresh);
    ASSERT_EQ(again.config.save_dir, run_dir);
    const std::string msg = usage_message([&] { prepare_run(again); });
    EXPECT_NE(msg.find("save_dir '" + run_dir + "' is not empty"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--resume " + run_dir), std::string::npos) << msg;
    // Ranks > 0 check the configuration only: the directory is rank 0's.
    EXPECT_TRUE(prepare_run(again, {.prepare_dir = false}).empty());
    // Resumed: nothing removed, nothing said.
    EXPECT_TRUE(prepare_run(resolve_run({.resume = run_dir})).empty());
    EXPECT_TRUE(file_exists(run_dir + "/model.safetensors"));
    // Overwritten: the old run's files go, and the one line says which.
    fresh.overwrite = true;
    const std::vector<std::string> lines = prepare_run(resolve_run(fresh));
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "removed from " + run_dir +
                            ": best.safetensors, last.safetensors, model.safetensors");
    EXPECT_FALSE(file_exists(run_dir + "/last.safetensors"));
    // check_config runs before the directory is touched: a missing training file is refused
    // and leaves a new directory uncreated.
    RunRequest bad = tiny_request(tiny_train_config(dir));
    bad.overrides.push_back({"train", dir + "/missing.tsv", "--train"});
    bad.overrides.push_back({"save_dir", dir + "/never", "--save-dir"});
    EXPECT_NE(usage_message([&] { prepare_run(resolve_run(bad)); }).find("missing.tsv"),
              std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir + "/never"));
}

}  // namespace
}  // namespace test_train_run_setup
}  // namespace nazar
