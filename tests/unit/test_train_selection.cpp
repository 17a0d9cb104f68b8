// Validation that can be trusted (validation.cpp): the whole dev set by default, every
// target of a source accepted (a lexicon's several pronunciations), the standard error beside
// exact match, best.safetensors the checkpoint with the best whole-dev score, and the final
// report scoring best.safetensors and the final model on every dev source whatever
// valid_sample was.
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace nazar {
namespace test_train_selection {
namespace {

using test::fresh_temp_dir;
using test::reversal_task;
using test::tiny_train_config;

struct Valids {
    std::vector<int64_t> step;
    std::vector<double> exact;
    TrainerHooks hooks() {
        TrainerHooks h;
        h.on_record = [this](const nlohmann::json& r) {
            if (r.at("type") != "valid") return;
            step.push_back(r.at("step").get<int64_t>());
            exact.push_back(r.at("exact").get<double>());
        };
        return h;
    }
};

// The default (valid_sample -1) decodes every distinct dev source; the dev set's second line for
// a source adds a reference instead of a second, necessarily wrong, sentence. Each source of
// the clean dev set also appears with a target the model never outputs: the exact match is the
// same as on the clean set (it would halve if each pair were scored on its own).
TEST(Validation, EveryTargetOfASourceIsAccepted) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("selection-refs");
    TrainConfig c = tiny_train_config(dir);
    c.valid_sample = TrainConfig::defaults().valid_sample;
    EXPECT_EQ(c.valid_sample, -1);
    c.max_steps = 200;
    c.valid_interval = 1000;
    const std::string clean = reversal_task(30, 2);
    std::string doubled;
    std::istringstream lines(clean);
    for (std::string line; std::getline(lines, line);)
        doubled += line.substr(0, line.find('\t')) + "\ta a a a a a a a a\n" + line + "\n";
    atomic_write_file(dir + "/dev2.tsv", doubled);
    Trainer t(c);
    t.run();
    const ValidationResult one = t.validate();
    EXPECT_EQ(one.sources, 30);
    EXPECT_EQ(one.sampled, 30);
    EXPECT_GT(one.exact, 50.0) << "the tiny model should have learnt most reversals";
    EXPECT_NEAR(one.exact_se, std::sqrt(one.exact * (100 - one.exact) / 30), 1e-9);

    TrainConfig c2 = c;
    c2.dev = dir + "/dev2.tsv";
    c2.max_steps = 200;
    c2.save_dir = dir + "/model2";
    Trainer t2(c2);  // same seed and data: the same model
    t2.run();
    const ValidationResult two = t2.validate();
    EXPECT_EQ(two.sources, 30);
    EXPECT_EQ(two.sampled, 30);
    EXPECT_EQ(two.exact, one.exact);
    EXPECT_NE(two.loss, one.loss);  // the loss still goes over every pair

    c2.valid_sample = 7;  // an evenly spaced sample of the distinct sources
    c2.save_dir = dir + "/model3";
    Trainer t3(c2);
    const ValidationResult seven = t3.validate();
    EXPECT_EQ(seven.sampled, 7);
    EXPECT_EQ(seven.sources, 30);
}

// best.safetensors is the validation with the highest whole-dev exact match (the first on ties),
// and the final report's figures are those of the files: best.safetensors scored again from
// the file equals the validation that chose it.
TEST(Validation, BestIsTheBestWholeDevCheckpoint) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("selection-best");
    TrainConfig c = tiny_train_config(dir);
    c.valid_sample = -1;
    c.valid_metric = "exact";
    c.lr = 0.02;
    c.max_steps = 90;
    c.valid_interval = 10;
    Valids v;
    Trainer t(c, "", v.hooks());
    const TrainResult r = t.run();
    ASSERT_EQ(v.exact.size(), 9U);
    std::size_t best = 0;
    for (std::size_t k = 1; k < v.exact.size(); ++k)
        if (v.exact[k] > v.exact[best]) best = k;
    EXPECT_EQ(r.final_best_step, v.step[best]);
    EXPECT_EQ(r.final_best.exact, v.exact[best]);
    EXPECT_EQ(r.final_best.sampled, 30);
    EXPECT_EQ(r.final_model.exact, v.exact.back());
    const ValidationResult again = t.validate_file(c.save_dir + "/best.safetensors");
    EXPECT_EQ(again.exact, v.exact[best]);
    EXPECT_DOUBLE_EQ(again.loss, r.final_best.loss);
}

// Chosen on a sample of 4 of the 30 sources, best.safetensors is scored again on all 30 in the
// final report (the sample's maximum is optimistic), and so is the final model.
TEST(Validation, FinalReportScoresTheFilesOnTheWholeDevSet) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("selection-final");
    TrainConfig c = tiny_train_config(dir);
    c.valid_sample = 4;
    c.valid_metric = "exact";
    c.max_steps = 60;
    c.valid_interval = 20;
    Valids v;
    Trainer t(c, "", v.hooks());
    const TrainResult r = t.run();
    for (double e : v.exact)  // 4 sentences: multiples of 25%
        EXPECT_DOUBLE_EQ(std::fmod(e, 25.0), 0.0) << e;
    EXPECT_EQ(r.final_best.sampled, 30);
    EXPECT_EQ(r.final_model.sampled, 30);
    EXPECT_EQ(r.final_best.sources, 30);
    EXPECT_EQ(r.final_best.exact, t.validate_file(c.save_dir + "/best.safetensors").exact);
    EXPECT_EQ(r.final_model.exact, t.validate_file(c.save_dir + "/model.safetensors").exact);
    EXPECT_GE(r.final_best_step, 20);
    EXPECT_LE(r.final_best_step, 60);
}

}  // namespace
}  // namespace test_train_selection
}  // namespace nazar
