// Budgeted training (schedule.h BudgetLr, trainer.h budget_progress): the linear and cosine
// schedules by hand, and the trainer driving them from a fake clock (TrainerHooks::clock) so that
// the lr reaches min_lr exactly when max_minutes runs out, continues across a --resume from the
// training time the checkpoint holds, and follows whichever budget (steps, epochs, minutes) ends
// first.
#include "nazar/core/check.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/threads.h"
#include "nazar/train/schedule.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

namespace nazar {
namespace test_train_budget {
namespace {

using test::fresh_temp_dir;
using test::tiny_train_config;

double cosine(double peak, double floor, double p) {
    return floor + (peak - floor) * 0.5 * (1 + std::cos(M_PI * std::min(p, 1.0)));
}

// lr(p) at p = 0, 1/4, 1/2, 1 and past the end, by hand.
TEST(BudgetSchedule, LinearAndCosineByHand) {
    LrSchedule lin = BudgetLr{.lr = 2.0, .min_lr = 0.0, .shape = BudgetLr::Shape::linear};
    LrSchedule cos = BudgetLr{.lr = 2.0, .min_lr = 0.5, .shape = BudgetLr::Shape::cosine};
    EXPECT_DOUBLE_EQ(lin.lr(1, 0, 0.0), 2.0);
    EXPECT_DOUBLE_EQ(lin.lr(7, 0, 0.25), 1.5);
    EXPECT_DOUBLE_EQ(lin.lr(9, 3, 0.5), 1.0);
    EXPECT_DOUBLE_EQ(lin.lr(9, 3, 1.0), 0.0);
    EXPECT_DOUBLE_EQ(lin.lr(9, 3, 7.0), 0.0);  // past the budget: the final lr, not negative
    EXPECT_DOUBLE_EQ(cos.lr(1, 0, 0.0), 2.0);
    EXPECT_DOUBLE_EQ(cos.lr(5, 0, 0.5), 1.25);  // the midpoint of lr and min_lr
    EXPECT_DOUBLE_EQ(cos.lr(5, 0, 0.25), 0.5 + 1.5 * (1 + std::sqrt(0.5)) / 2);
    EXPECT_DOUBLE_EQ(cos.lr(5, 0, 1.0), 0.5);
    EXPECT_EQ(lin.kind(), "linear");
    EXPECT_EQ(cos.kind(), "cosine");
    EXPECT_TRUE(cos.follows_budget());
    EXPECT_FALSE(LrSchedule(ConstantLr{}).follows_budget());
    EXPECT_FALSE(cos.on_validation(1.0));  // no reaction to validations
    EXPECT_NE(cos.describe().find("cosine decay to 0.5"), std::string::npos) << cos.describe();
}

// W = 4 warm-up steps multiply the decayed value by s / W.
TEST(BudgetSchedule, WarmupThenDecay) {
    LrSchedule s = BudgetLr{.lr = 4.0, .warmup_steps = 4, .shape = BudgetLr::Shape::linear};
    EXPECT_DOUBLE_EQ(s.lr(1, 0, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(s.lr(2, 0, 0.5), 1.0);  // 4 · (1 − 0.5) · 2/4
    EXPECT_DOUBLE_EQ(s.lr(4, 0, 0.5), 2.0);
    EXPECT_DOUBLE_EQ(s.lr(40, 0, 0.75), 1.0);
}

TEST(BudgetSchedule, Errors) {
    EXPECT_THROW(LrSchedule(BudgetLr{.lr = 1.0, .min_lr = 2.0}), UsageError);
    EXPECT_THROW(LrSchedule(BudgetLr{.lr = 1.0, .warmup_steps = -1}), UsageError);
    LrSchedule s = BudgetLr{};
    EXPECT_THROW(s.lr(1, 0, -0.5), Error);
    EXPECT_THROW(s.lr(1, 0, std::nan("")), Error);
    EXPECT_THROW(s.lr(0, 0, 0.5), Error);  // steps are 1-based
    SafeTensors st;
    s.save_state(st);
    EXPECT_EQ(st.metadata.at("schedule.kind"), "cosine");
    LrSchedule lin = BudgetLr{.shape = BudgetLr::Shape::linear};
    EXPECT_THROW(lin.load_state(st), Error);  // a cosine run resumed as linear
    TrainConfig c = tiny_train_config(fresh_temp_dir("budget-errors"));
    c.schedule = "cosine";
    c.lr = 0.001;
    c.min_lr = 0.01;
    try {
        validate_config(c);
        FAIL() << "no error";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("min_lr 0.01 > lr 0.001"), std::string::npos)
            << e.what();
    }
}

// The lr of every update, from the metrics records (log_interval 1), and the fake clock: each
// batch takes `dt` seconds of "training".
struct Recorder {
    std::vector<double> lr, seconds;
    double now = 0;
    TrainerHooks hooks(double dt) {
        TrainerHooks h;
        h.clock = [this] { return now; };
        h.stop_after = [this, dt](int64_t) {
            now += dt;
            return false;
        };
        h.on_record = [this](const nlohmann::json& r) {
            if (r.at("type") == "train") lr.push_back(r.at("lr").get<double>());
        };
        return h;
    }
};

TrainConfig budget_config(const std::string& dir) {
    TrainConfig c = tiny_train_config(dir);
    c.schedule = "cosine";
    c.warmup_steps = 0;
    c.lr = 0.01;
    c.min_lr = 0.001;
    c.max_steps = 0;
    c.max_epochs = 0;
    c.max_minutes = 1;  // 60 fake seconds
    c.valid_interval = 1000;
    c.log_interval = 1;
    return c;
}

// The fake clock moves 0.75 s per batch: the updates see 0, 0.75, ..., and the run stops at the
// first boundary past 60 s. Every update's lr is the cosine at (its start time) / 60 s, and the
// last one is within one batch of min_lr; the schedule follows the clock, not the steps.
TEST(BudgetTraining, LrReachesMinLrAtMaxMinutes) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("budget-minutes");
    const TrainConfig c = budget_config(dir);
    Recorder rec;
    Trainer t(c, "", rec.hooks(0.75));
    const TrainResult r = t.run();
    ASSERT_EQ(r.state.step, 80);  // 80 · 0.75 = 60: the 80th batch ends the budget
    ASSERT_EQ(rec.lr.size(), 80U);
    for (std::size_t k = 0; k < rec.lr.size(); ++k)
        EXPECT_NEAR(rec.lr[k], cosine(c.lr, c.min_lr, 0.75 * static_cast<double>(k) / 60), 1e-12)
            << "update " << k + 1;
    // the last update starts at 59.25 s: (lr − min_lr)(1 + cos(π 0.9875)) / 2 above min_lr
    EXPECT_NEAR(rec.lr.back(), c.min_lr, 4e-4 * c.lr);
    EXPECT_GT(rec.lr.front(), 0.99 * c.lr);
    // The checkpoint holds the training seconds (80 batches of 0.75 s).
    const Checkpoint ck = load_checkpoint(c.save_dir + "/last.safetensors");
    EXPECT_DOUBLE_EQ(std::stod(ck.file.meta(kSecondsKey)), 60.0);
}

// Interrupted after 20 batches (15 s), resumed with a clock that starts anywhere: the schedule
// goes on from 15 s of its 60, so the resumed run's lrs are the uninterrupted run's, and the
// budget ends at the same total time.
TEST(BudgetTraining, ResumeContinuesTheDecay) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("budget-resume");
    const TrainConfig c = budget_config(dir);
    std::vector<double> whole;
    {
        Recorder rec;
        Trainer t(c, "", rec.hooks(0.75));
        t.run();
        whole = rec.lr;
    }
    TrainConfig c2 = c;
    c2.save_dir = dir + "/split";
    std::atomic<bool> stop{false};
    Recorder first;
    TrainerHooks h = first.hooks(0.75);
    h.after_backward = [&](int64_t batch, const ParamList&) { stop = stop || batch == 19; };
    h.interrupt = &stop;
    {
        Trainer t(c2, "", h);
        const TrainResult r = t.run();
        ASSERT_TRUE(r.interrupted);
        ASSERT_EQ(r.state.step, 20);
    }
    Recorder second;
    second.now = 1000;  // another process, another clock origin
    Trainer resumed(c2, c2.save_dir, second.hooks(0.75));
    const TrainResult r = resumed.run();
    EXPECT_EQ(r.state.step, 80);  // the same total of 60 s
    ASSERT_EQ(whole.size(), 80U);
    ASSERT_EQ(second.lr.size(), 60U);  // updates 21-80
    for (std::size_t k = 0; k < second.lr.size(); ++k)
        EXPECT_NEAR(second.lr[k], whole[20 + k], 1e-12) << "update " << k + 21;
}

// max_steps 30 ends before max_minutes: the decay follows the steps (p = s / 30 at update s);
// and with max_epochs the fraction of epochs done.
TEST(BudgetTraining, WhicheverBudgetEndsFirst) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("budget-steps");
    TrainConfig c = budget_config(dir);
    c.schedule = "linear";
    c.min_lr = 0;
    c.max_steps = 30;
    Recorder rec;
    Trainer t(c, "", rec.hooks(0.01));  // 0.3 s of the 60
    t.run();
    ASSERT_EQ(rec.lr.size(), 30U);
    for (std::size_t k = 0; k < rec.lr.size(); ++k)
        EXPECT_NEAR(rec.lr[k], c.lr * (1 - static_cast<double>(k + 1) / 30), 1e-12);
    EXPECT_EQ(rec.lr.back(), 0.0);

    // 200 pairs in batches of 16 = 13 batches an epoch; 2 epochs: p = batches done / 26.
    TrainConfig e = budget_config(fresh_temp_dir("budget-epochs"));
    e.schedule = "linear";
    e.min_lr = 0;
    e.max_epochs = 2;
    Recorder erec;
    Trainer te(e, "", erec.hooks(0.01));
    const TrainResult re = te.run();
    ASSERT_EQ(re.state.step, 26);
    for (std::size_t k = 0; k < erec.lr.size(); ++k)
        EXPECT_NEAR(erec.lr[k], e.lr * (1 - static_cast<double>(k + 1) / 26), 1e-12);
}

}  // namespace
}  // namespace test_train_budget
}  // namespace nazar
