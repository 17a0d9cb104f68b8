// Gradient accumulation and the data-parallel helpers on one process (docs/distributed.md).
//
// accumulate K with batch B trains the same model as one batch of K·B: the K micro-batches are
// the K row parts of the K·B batch the batcher draws, each scaled by 1 / (target tokens of the
// whole batch), summed, then one clip and one step. The weights are not bit-identical: each
// micro-batch's GEMMs and reductions add the rows' contributions in another order (and another
// padding width), so the gradients differ in the last bits and Adam carries that on. Tolerance:
// |a - b| <= 2e-4 · (1 + |a|) per weight after 30 updates, 100x below the differences the same
// check sees between K·B and a run with batch B alone (checked below: the test can fail).
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/dist/data_parallel.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_accumulate {
namespace {

constexpr double kTolerance = 2e-4;

// Largest |a - b| / (1 + |a|) over every weight.
double max_rel_diff(Trainer& a, Trainer& b) {
    const ParamList pa = a.model().parameters(), pb = b.model().parameters();
    EXPECT_EQ(pa.size(), pb.size());
    double worst = 0;
    for (std::size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
        EXPECT_EQ(pa[i].name, pb[i].name);
        const float *x = pa[i].value->data(), *y = pb[i].value->data();
        for (int64_t k = 0; k < pa[i].value->numel(); ++k)
            worst = std::max(worst, std::abs(static_cast<double>(x[k]) - y[k]) /
                                        (1.0 + std::abs(static_cast<double>(x[k]))));
    }
    return worst;
}

class Accumulate : public ::testing::Test {
protected:
    void SetUp() override {
        set_num_threads(1);
        dir_ = test::fresh_temp_dir("accumulate");
        // no dev set: no validation
        cfg_ = test::tiny_train_config(dir_, {.train_pairs = 200, .dev_pairs = 0, .train_seed = 3});
        cfg_.hidden_size = 12;
        cfg_.clip_norm = 1;  // the global norm is clipped: the equivalence covers it
        cfg_.max_steps = 30;
        cfg_.keep_best = false;
    }
    TrainConfig run(const std::string& name, int batch_size, int accumulate) const {
        TrainConfig c = cfg_;
        c.save_dir = dir_ + "/" + name;
        c.batch_size = batch_size;
        c.accumulate = accumulate;
        return c;
    }
    std::string dir_;
    TrainConfig cfg_;
};

TEST_F(Accumulate, FourMicroBatchesEqualOneBatchFourTimesLarger) {
    Trainer big(run("big", 32, 1)), acc(run("acc", 8, 4)), small(run("small", 8, 1));
    const TrainResult rb = big.run(), ra = acc.run();
    small.run();
    EXPECT_EQ(rb.state.step, 30);
    EXPECT_EQ(ra.state.step, 30);
    EXPECT_EQ(rb.state.tgt_tokens, ra.state.tgt_tokens);  // the same batches, the same tokens
    EXPECT_EQ(rb.state.position, ra.state.position);
    const double same = max_rel_diff(big, acc), other = max_rel_diff(big, small);
    std::printf("max |a-b|/(1+|a|): 4x8 vs 1x32 %.3g; 1x8 vs 1x32 %.3g\n", same, other);
    EXPECT_LE(same, kTolerance);
    EXPECT_GT(other, 100 * kTolerance);  // the check tells different training apart
    EXPECT_NEAR(rb.last_train_loss, ra.last_train_loss, 1e-4 * (1 + rb.last_train_loss));
}

TEST_F(Accumulate, TokenBudgetsAccumulateToo) {
    TrainConfig a = run("tok-big", 32, 1), b = run("tok-acc", 32, 3);
    a.batch_tokens = 3 * 40;
    b.batch_tokens = 40;
    Trainer big(a), acc(b);
    big.run();
    acc.run();
    EXPECT_LE(max_rel_diff(big, acc), kTolerance);
}

// A checkpoint fixes accumulate · ranks (the global batch): another product is refused with the
// setting that would continue; the same product continues.
TEST_F(Accumulate, ResumeNeedsTheSameGlobalBatch) {
    TrainConfig c = run("resume", 8, 2);
    c.max_steps = 4;
    c.checkpoint_interval = 2;
    Trainer(c).run();
    TrainConfig other = c;
    other.accumulate = 1;
    other.max_steps = 6;
    try {
        Trainer t(other, c.save_dir);
        FAIL() << "accumulate 2 -> 1 was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--accumulate 2 on 1 rank(s)"), std::string::npos)
            << e.what();
    }
    TrainConfig same = c;
    same.max_steps = 6;
    Trainer t(same, c.save_dir);
    EXPECT_EQ(t.run().state.step, 6);
}

TEST(DataParallel, ShardRowsCoversEveryRowOnce) {
    for (int rows : {0, 1, 5, 16, 17})
        for (int parts : {1, 2, 3, 8}) {
            int next = 0;
            for (int p = 0; p < parts; ++p) {
                const dist::RowRange r = dist::shard_rows(rows, parts, p);
                EXPECT_EQ(r.begin, next);
                EXPECT_GE(r.size(), rows / parts);
                EXPECT_LE(r.size(), rows / parts + 1);
                next = r.end;
            }
            EXPECT_EQ(next, rows);
        }
}

TEST(DataParallel, BatchRowsEqualsTheBatchOfThoseRows) {
    const std::vector<std::vector<int32_t>> src = {{5, 6, 7, 8}, {5}, {6, 7}, {9, 9, 9}},
                                            tgt = {{5}, {6, 7, 8, 9, 10}, {7}, {8, 8}};
    const Batch all = batch_from_ids(src, tgt);
    const Batch part = dist::batch_rows(all, {1, 3});
    const std::vector<std::vector<int32_t>> src2(src.begin() + 1, src.begin() + 3),
        tgt2(tgt.begin() + 1, tgt.begin() + 3);
    const Batch want = batch_from_ids(src2, tgt2);
    EXPECT_EQ(part.B, 2);
    EXPECT_EQ(part.S, 2);  // trimmed to its own longest source
    EXPECT_EQ(part.T, 6);
    EXPECT_EQ(part.src, want.src);
    EXPECT_EQ(part.tgt_in, want.tgt_in);
    EXPECT_EQ(part.tgt_out, want.tgt_out);
    EXPECT_EQ(part.src_lengths, want.src_lengths);
    EXPECT_EQ(part.tgt_lengths, want.tgt_lengths);
    EXPECT_EQ(part.index, (std::vector<int64_t>{1, 2}));
}

TEST(DataParallel, WeightHashSeesOneBit) {
    Tensor w({3, 5}), g({3, 5});
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = 0.1f * static_cast<float>(i);
    const ParamList p = {{"w", &w, &g}};
    const uint64_t h = dist::weights_hash(p);
    EXPECT_EQ(dist::weights_hash(p), h);
    uint32_t bits;
    std::memcpy(&bits, w.data() + 13, 4);
    bits ^= 1;
    std::memcpy(w.data() + 13, &bits, 4);
    EXPECT_NE(dist::weights_hash(p), h);
    const ParamList renamed = {{"v", &w, &g}};
    EXPECT_NE(dist::weights_hash(renamed), dist::weights_hash(p));
}

// One process: every collective is the identity, and the checks pass.
TEST(DataParallel, SingleProcessGroupIsTheIdentity) {
    auto one = dist::make_single();
    EXPECT_EQ(one->rank(), 0);
    EXPECT_EQ(one->size(), 1);
    std::vector<float> x = {1.5f, -2.0f};
    one->all_reduce_sum(std::span<float>(x), "test");
    EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
    EXPECT_EQ(one->all_gather(42, "test"), std::vector<uint64_t>{42});
    Tensor w({2}), g({2});
    g.data()[0] = 3;
    dist::GradientSum sum(*one);
    sum({{"w", &w, &g}});
    EXPECT_EQ(g.data()[0], 3.0f);
    EXPECT_NO_THROW(dist::check_weights_agree(*one, {{"w", &w, &g}}, "now"));
}

}  // namespace
}  // namespace test_accumulate
}  // namespace nazar
