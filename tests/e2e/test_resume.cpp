// `train --resume` continues exactly (docs/design.md §5): a run interrupted between checkpoints
// (a simulated kill: the process stops without saving) and resumed from its last checkpoint, or
// a run stopped by max_steps and resumed with a larger one, ends with the same bits as the
// uninterrupted run: every weight, every optimizer moment, and the training state (step, batcher
// position, RNG, early-stopping and schedule state). Dropout, scheduled sampling and a plateau
// schedule are on, so every piece of checkpointed state matters.
#include "nazar/core/fileio.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/threads.h"
#include "nazar/train/average.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace nazar {
namespace test_resume {
namespace {

using test::reversal_task;

class Resume : public ::testing::Test {
protected:
    void SetUp() override {
        set_num_threads(2);  // held fixed across the runs compared
        dir_ = nazar::test::fresh_temp_dir("resume");
        cfg_ = test::tiny_train_config(dir_, {.train_pairs = 150, .dev_pairs = 20});
        cfg_.hidden_size = 12;
        cfg_.encoder_layers = 2;
        cfg_.decoder_layers = 2;
        cfg_.dropout = 0.2;
        cfg_.scheduled_sampling = 0.25;
        // every dropout site and word dropout draw from the checkpointed training Rng
        cfg_.embedding_dropout = 0.1;
        cfg_.encoder_output_dropout = 0.2;
        cfg_.decoder_output_dropout = 0.3;
        cfg_.attention_dropout = 0.1;
        cfg_.word_dropout = 0.1;
        cfg_.schedule = "plateau";
        cfg_.plateau_patience = 0;
        // batches of 16: 10 an epoch, the runs cross epoch boundaries; 40 steps
        cfg_.valid_interval = 10;
        cfg_.valid_sample = 5;
        cfg_.checkpoint_interval = 7;
    }
    void TearDown() override { set_num_threads(1); }

    TrainConfig with_dir(const std::string& name) const {
        TrainConfig c = cfg_;
        c.save_dir = dir_ + "/" + name;
        return c;
    }

    // Every tensor byte for byte, and every metadata entry except the run-control config, the
    // training seconds (wall time, which no two runs share) and an averaged file's input paths.
    static void expect_same_files(const std::string& a, const std::string& b) {
        const SafeTensors x = load_safetensors(a), y = load_safetensors(b);
        ASSERT_EQ(x.names(), y.names());
        for (const auto& name : x.names()) {
            const Tensor &p = x.get(name), &q = y.get(name);
            ASSERT_EQ(p.numel(), q.numel()) << name;
            EXPECT_EQ(std::memcmp(p.data(), q.data(), sizeof(float) * p.numel()), 0)
                << name << " differs";
        }
        for (const auto& [key, value] : x.metadata) {
            if (key != "train.config" && key != kSecondsKey && key != "nazar.averaged_from") {
                EXPECT_EQ(value, y.meta(key)) << key;
            }
        }
    }

    std::string dir_;
    TrainConfig cfg_;
};

TEST_F(Resume, KilledBetweenCheckpointsThenResumedIsBitIdentical) {
    const TrainConfig full = with_dir("full");
    const TrainResult whole = Trainer(full).run();
    ASSERT_EQ(whole.state.step, 40);
    ASSERT_GT(whole.state.validations, 0);

    // Killed after 26 batches: the last checkpoint is the one of step 21 (checkpoint_interval 7;
    // validations at 10 and 20 also wrote it); steps 22-26 are lost and redone after resuming.
    const TrainConfig killed = with_dir("killed");
    TrainerHooks hooks;
    hooks.stop_after = [](int64_t batches) { return batches == 26; };
    Trainer(killed, "", hooks).run();
    ASSERT_FALSE(std::filesystem::exists(killed.save_dir + "/model.safetensors"));
    const Checkpoint ck = load_checkpoint(killed.save_dir + "/last.safetensors");
    ASSERT_EQ(ck.state.step, 21);

    Trainer resumed(make_resume_config(ck.config, killed, {}), killed.save_dir);
    EXPECT_EQ(resumed.state().step, 21);
    const TrainResult rest = resumed.run();
    EXPECT_EQ(rest.state, whole.state);
    expect_same_files(full.save_dir + "/last.safetensors", killed.save_dir + "/last.safetensors");
    expect_same_files(full.save_dir + "/model.safetensors", killed.save_dir + "/model.safetensors");
    expect_same_files(full.save_dir + "/best.safetensors", killed.save_dir + "/best.safetensors");
}

TEST_F(Resume, StoppedByMaxStepsThenResumedIsBitIdentical) {
    const TrainConfig full = with_dir("full2");
    const TrainResult whole = Trainer(full).run();

    TrainConfig first = with_dir("parts");
    first.max_steps = 15;  // between validations: the end-of-run report must not change the state
    Trainer(first).run();
    const Checkpoint ck = load_checkpoint(first.save_dir + "/last.safetensors");
    ASSERT_EQ(ck.state.step, 15);
    TrainConfig more = ck.config;
    more.max_steps = 40;
    const TrainResult rest =
        Trainer(make_resume_config(ck.config, more, {"max_steps"}), first.save_dir).run();
    EXPECT_EQ(rest.state, whole.state);
    expect_same_files(full.save_dir + "/last.safetensors", first.save_dir + "/last.safetensors");
    expect_same_files(full.save_dir + "/model.safetensors", first.save_dir + "/model.safetensors");
}

// The moving average of the weights (ema_decay), periodic checkpoints (keep_checkpoints) and a
// decoded validation metric (valid_metric, valid_beam) are restored exactly too.
TEST_F(Resume, EmaPeriodicCheckpointsAndMetricResumeBitIdentical) {
    cfg_.ema_decay = 0.9;
    cfg_.keep_checkpoints = 3;
    cfg_.average_best = 2;
    cfg_.valid_metric = "chrf";
    cfg_.valid_beam = 2;
    const TrainConfig full = with_dir("ema-full");
    const TrainResult whole = Trainer(full).run();
    const TrainConfig killed = with_dir("ema-killed");
    TrainerHooks hooks;
    hooks.stop_after = [](int64_t batches) { return batches == 26; };
    Trainer(killed, "", hooks).run();
    const Checkpoint ck = load_checkpoint(killed.save_dir + "/last.safetensors");
    ASSERT_EQ(ck.state.step, 21);
    ASSERT_TRUE(ck.file.contains("train.raw.generator.bias"));
    const TrainResult rest =
        Trainer(make_resume_config(ck.config, killed, {}), killed.save_dir).run();
    EXPECT_EQ(rest.state, whole.state);
    for (const char* f :
         {"last.safetensors", "model.safetensors", "best.safetensors", "checkpoint-30.safetensors",
          "checkpoint-35.safetensors", "checkpoint-40.safetensors"})
        expect_same_files(full.save_dir + "/" + f, killed.save_dir + "/" + f);
    EXPECT_FALSE(std::filesystem::exists(killed.save_dir + "/checkpoint-28.safetensors"));
    // average_best: the same best validations kept, and their average
    EXPECT_EQ(rest.averaged_steps, whole.averaged_steps);
    ASSERT_EQ(whole.averaged_steps.size(), 2u);
    for (const int64_t s : whole.averaged_steps)
        expect_same_files(full.save_dir + "/" + ranked_checkpoint_name(s),
                          killed.save_dir + "/" + ranked_checkpoint_name(s));
    expect_same_files(full.save_dir + "/averaged.safetensors",
                      killed.save_dir + "/averaged.safetensors");
}

TEST_F(Resume, RefusesChangedDataOrModel) {
    TrainConfig first = with_dir("refuse");
    first.max_steps = 5;
    Trainer(first).run();
    TrainConfig bigger = first;
    bigger.hidden_size = 20;
    const Checkpoint ck = load_checkpoint(first.save_dir + "/last.safetensors");
    EXPECT_THROW(make_resume_config(ck.config, bigger, changed_keys(ck.config, bigger)),
                 UsageError);
    atomic_write_file(dir_ + "/train.tsv", reversal_task(151, 1));  // one more pair
    EXPECT_THROW(Trainer(first, first.save_dir), Error);
    EXPECT_THROW(Trainer(first, dir_ + "/nowhere"), UsageError);
}

}  // namespace
}  // namespace test_resume
}  // namespace nazar
