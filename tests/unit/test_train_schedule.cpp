// Learning-rate schedules (nazar/train/schedule.h): hand-computed values for each schedule,
// ReduceLROnPlateau semantics (threshold, patience, min_lr, maximise), state round trip, errors.
#include "nazar/core/safetensors.h"
#include "nazar/train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace test_train_schedule {

using namespace nazar;

TEST(Schedule, Constant) {
    LrSchedule s = ConstantLr{.lr = 0.5};
    EXPECT_EQ(s.lr(1, 0), 0.5);
    EXPECT_EQ(s.lr(100000, 9), 0.5);
    EXPECT_FALSE(s.on_validation(3.0));
    EXPECT_EQ(s.kind(), "constant");
}

// W = 4: 1/4, 2/4, 3/4, 4/4 of lr; then constant, or lr·√(4/s): s = 16 -> lr/2, s = 100 -> lr/5.
TEST(Schedule, WarmupThenConstantOrInverseSqrt) {
    LrSchedule flat = WarmupLr{.lr = 2.0, .warmup_steps = 4};
    LrSchedule isqrt =
        WarmupLr{.lr = 2.0, .warmup_steps = 4, .decay = WarmupLr::Decay::inverse_sqrt};
    const double warm[] = {0.5, 1.0, 1.5, 2.0};
    for (int s = 1; s <= 4; ++s) {
        EXPECT_DOUBLE_EQ(flat.lr(s, 0), warm[s - 1]);
        EXPECT_DOUBLE_EQ(isqrt.lr(s, 0), warm[s - 1]);
    }
    EXPECT_DOUBLE_EQ(flat.lr(16, 3), 2.0);
    EXPECT_DOUBLE_EQ(isqrt.lr(16, 3), 1.0);
    EXPECT_DOUBLE_EQ(isqrt.lr(100, 3), 0.4);
    EXPECT_DOUBLE_EQ(isqrt.lr(5, 0), 2.0 * std::sqrt(4.0 / 5.0));  // decays right after warm-up
    LrSchedule none =
        WarmupLr{.lr = 1.0, .warmup_steps = 0, .decay = WarmupLr::Decay::inverse_sqrt};
    EXPECT_DOUBLE_EQ(none.lr(1, 0), 1.0);
    EXPECT_DOUBLE_EQ(none.lr(4, 0), 0.5);
}

// Luong et al. 2015: lr 1, 10 epochs, halve every epoch after the 5th. epoch = completed epochs.
TEST(Schedule, StepDecayAsLuong2015) {
    LrSchedule s = StepDecayLr{.lr = 1.0, .start_epoch = 5, .every = 1, .factor = 0.5};
    const double want[] = {1, 1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625, 0.03125};
    for (int e = 0; e < 10; ++e) EXPECT_DOUBLE_EQ(s.lr(1 + 1000 * e, e), want[e]) << "epoch " << e;
    LrSchedule every2 = StepDecayLr{.lr = 1.0, .start_epoch = 2, .every = 2, .factor = 0.5};
    const double want2[] = {1, 1, 0.5, 0.5, 0.25, 0.25, 0.125};
    for (int e = 0; e < 7; ++e) EXPECT_DOUBLE_EQ(every2.lr(1, e), want2[e]) << "epoch " << e;
}

// Minimise, patience 1, factor 0.5, min_lr 0.3:
//   10 best | 9 best | 8.9995 not better (needs < 9·(1 − 1e-4) = 8.9991): bad 1 | 9.5 bad 2 > 1:
//   lr 0.5 | 9 bad 1 | 9 bad 2: lr max(0.25, 0.3) = 0.3 | then at min_lr: no further change.
TEST(Schedule, PlateauReducesAfterPatience) {
    LrSchedule s = PlateauLr{.lr = 1.0, .factor = 0.5, .patience = 1, .min_lr = 0.3};
    EXPECT_FALSE(s.on_validation(10));
    EXPECT_FALSE(s.on_validation(9));
    EXPECT_FALSE(s.on_validation(8.9995));
    EXPECT_EQ(s.lr(10, 1), 1.0);
    EXPECT_TRUE(s.on_validation(9.5));
    EXPECT_EQ(s.lr(10, 1), 0.5);
    EXPECT_FALSE(s.on_validation(9));
    EXPECT_TRUE(s.on_validation(9));
    EXPECT_DOUBLE_EQ(s.lr(10, 1), 0.3);
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(s.on_validation(9));
    EXPECT_DOUBLE_EQ(s.lr(10, 1), 0.3);
    EXPECT_FALSE(s.on_validation(1.0));  // an improvement resets, no change
}

TEST(Schedule, PlateauMaximise) {
    LrSchedule s = PlateauLr{.lr = 1.0, .factor = 0.1, .patience = 0, .maximize = true};
    EXPECT_FALSE(s.on_validation(20.0));  // BLEU 20
    EXPECT_FALSE(s.on_validation(21.0));  // better
    EXPECT_TRUE(s.on_validation(20.5));   // worse, patience 0
    EXPECT_DOUBLE_EQ(s.lr(1, 0), 0.1);
}

// Save mid-run, restore into a fresh schedule: both then react identically.
TEST(Schedule, PlateauStateRoundTrip) {
    const PlateauLr cfg{.lr = 1.0, .factor = 0.5, .patience = 2};
    LrSchedule a = cfg;
    for (double m : {5.0, 4.0, 4.5, 4.2}) a.on_validation(m);  // best 4, bad 2
    SafeTensors st;
    a.save_state(st);
    const SafeTensors loaded = parse_safetensors(serialize_safetensors(st));
    LrSchedule b = cfg;
    b.load_state(loaded);
    EXPECT_TRUE(a.on_validation(4.1));  // third bad -> reduce
    EXPECT_TRUE(b.on_validation(4.1));
    EXPECT_EQ(a.lr(1, 0), b.lr(1, 0));
    EXPECT_EQ(b.lr(1, 0), 0.5);
    EXPECT_FALSE(b.on_validation(3.99));  // best 4 restored exactly: 3.99 < 4·(1 − 1e-4) is better
    const auto& p = std::get<PlateauLr>(b.get());
    EXPECT_EQ(p.best, 3.99);
    EXPECT_EQ(p.bad, 0);
}

TEST(Schedule, Errors) {
    EXPECT_THROW(LrSchedule(ConstantLr{.lr = -1}), Error);
    EXPECT_THROW(LrSchedule(WarmupLr{.warmup_steps = -1}), Error);
    EXPECT_THROW(LrSchedule(StepDecayLr{.every = 0}), Error);
    EXPECT_THROW(LrSchedule(StepDecayLr{.factor = 1.5}), Error);
    EXPECT_THROW(LrSchedule(PlateauLr{.factor = 1.0}), Error);
    EXPECT_THROW(LrSchedule(PlateauLr{.patience = -1}), Error);
    LrSchedule s = ConstantLr{.lr = 1};
    EXPECT_THROW(s.lr(0, 0), Error);  // steps are 1-based
    EXPECT_THROW(s.lr(1, -1), Error);
    LrSchedule p = PlateauLr{};
    EXPECT_THROW(p.on_validation(std::nan("")), Error);
    SafeTensors st;
    s.save_state(st);
    EXPECT_THROW(p.load_state(st), Error);  // kind differs
    SafeTensors bad;
    p.save_state(bad);
    bad.metadata["schedule.bad"] = "x";
    EXPECT_THROW(p.load_state(bad), Error);
}

}  // namespace test_train_schedule
