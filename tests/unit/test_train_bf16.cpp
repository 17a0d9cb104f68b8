// bf16 mixed-precision training (docs/training.md, "Precision"): the gradients of one step with
// the large products' inputs in bf16 are close to fp32's, a GemmPrecisionScope of fp32 changes
// nothing (bit for bit), the loss falls on the tiny reversal task in bf16 as in fp32, and
// checkpoints move between the precisions (an fp32 run resumed in bf16 and back).
//
// The gradient bound. Rounding a product's inputs to bf16 perturbs each term by at most 2u + u^2
// relative (u = 2^-8, bf16's unit roundoff); the sum's own fp32 error is K 2^-24 <= 2^-16 here
// (K <= 256), negligible. The gradients of a step pass through a chain of such products (forward:
// input projection, recurrence, attention, generator; backward: the same again, transposed), each
// adding its perturbation; the terms have random signs and independent rounding errors, so they
// partly cancel and the norm-wise relative difference of a gradient is of order u, not of the
// worst case 2u per product on its path. The test allows 4u = 1/64 per parameter tensor and
// 2u = 1/128 over the whole gradient vector (measured: 0.8u and, worst tensor, 1.7u), and
// requires a difference above 1e-5 (the products did run on rounded inputs).
#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/fileio.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace nazar {
namespace test_train_bf16 {
namespace {

// Large enough that its products pay for bf16 (bf16_product_pays): 32 sentences of 8-12 tokens,
// E = 64, bi-GRU 64 (C = 128), decoder 128, A = 128, V = 200.
ModelConfig model_config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = c.tgt_vocab_size = 200;
    c.embedding_size = 64;
    c.encoder.hidden_size = 64;
    c.decoder.hidden_size = 128;
    c.attention.attention_size = 128;
    return c;
}

Batch random_batch(uint64_t seed) {
    Rng rng(seed);
    std::vector<std::vector<int32_t>> src(32), tgt(32);
    for (int i = 0; i < 32; ++i) {
        const int n = 8 + static_cast<int>(rng.below(5));
        for (int k = 0; k < n; ++k) src[i].push_back(4 + static_cast<int32_t>(rng.below(196)));
        tgt[i].assign(src[i].rbegin(), src[i].rend());
    }
    return test::make_batch(src, tgt);
}

// The gradients of one training step on `batch` from the model's weights, in precision p
// (no scope at all for `scoped` = false).
std::vector<std::vector<float>> gradients(Seq2Seq& model, const Batch& batch, GemmPrecision p,
                                          bool scoped) {
    ParamList params = model.parameters();
    zero_grads(params);
    Rng rng(5);
    if (scoped) {
        const GemmPrecisionScope scope(p, constant_ranges(params));
        TrainPass(model).train_step(batch, {}, rng);
    } else {
        TrainPass(model).train_step(batch, {}, rng);
    }
    std::vector<std::vector<float>> out;
    for (const ParamRef& r : params)
        out.emplace_back(r.grad->data(), r.grad->data() + r.grad->numel());
    return out;
}

TEST(TrainBf16, OneStepGradientsCloseToFp32) {
    set_num_threads(2);
    Seq2Seq model(model_config(), 3);
    const Batch batch = random_batch(11);
    const auto fp32 = gradients(model, batch, GemmPrecision::fp32, false);
    const auto fp32_scoped = gradients(model, batch, GemmPrecision::fp32, true);
    const int64_t before = bf16_counters().products;
    const auto bf16 = gradients(model, batch, GemmPrecision::bf16, true);
    EXPECT_GT(bf16_counters().products, before + 10) << "the step's products did not run in bf16";
    const ParamList params = model.parameters();
    double d_all = 0, n_all = 0, worst = 0;
    for (std::size_t i = 0; i < fp32.size(); ++i) {
        EXPECT_EQ(std::memcmp(fp32[i].data(), fp32_scoped[i].data(), 4 * fp32[i].size()), 0)
            << params[i].name << ": an fp32 scope changed the gradient";
        double d = 0, n = 0;
        for (std::size_t k = 0; k < fp32[i].size(); ++k) {
            d += std::pow(static_cast<double>(bf16[i][k]) - fp32[i][k], 2);
            n += std::pow(static_cast<double>(fp32[i][k]), 2);
        }
        d_all += d;
        n_all += n;
        if (n == 0) continue;
        const double rel = std::sqrt(d / n);
        worst = std::max(worst, rel);
        EXPECT_LE(rel, 1.0 / 64) << params[i].name;
    }
    const double rel_all = std::sqrt(d_all / n_all);
    EXPECT_LE(rel_all, 1.0 / 128);
    // the bf16 step is not the fp32 step: its products really ran on rounded inputs
    EXPECT_GT(rel_all, 1e-5);
    std::printf("bf16 vs fp32 gradients: whole vector %.2e, worst tensor %.2e relative\n", rel_all,
                worst);
}

// The tiny run of tests/common/tiny_training.h made large enough for bf16 products (E = 64,
// hidden 128, batches of 64 from 400 pairs), validated only at its end on the loss.
TrainConfig reversal_config(const std::string& dir) {
    TrainConfig c = test::tiny_train_config(dir, {.train_pairs = 400, .dev_pairs = 40});
    c.embedding_size = 64;
    c.hidden_size = 128;
    c.batch_size = 64;
    c.lr = 0.003;
    c.valid_interval = 40;
    c.valid_sample = 0;
    return c;
}

// The loss falls in bf16 as in fp32 over the same 40 steps, to nearly the same value.
TEST(TrainBf16, LossFallsOnReversalTask) {
    set_num_threads(2);
    double after[2] = {0, 0};
    for (int bf16 = 0; bf16 < 2; ++bf16) {
        const std::string dir = test::fresh_temp_dir(bf16 ? "bf16-loss-bf16" : "bf16-loss-fp32");
        TrainConfig c = reversal_config(dir);
        c.precision = bf16 ? "bf16-always" : "fp32";
        Trainer t(c);
        const double before = t.validate().loss;
        const int64_t products = bf16_counters().products;
        const TrainResult r = t.run();
        ASSERT_TRUE(r.validated);
        EXPECT_EQ(r.state.step, 40);
        EXPECT_EQ(r.state.skipped, 0);
        EXPECT_LT(r.last_valid.loss, 0.8 * before) << c.precision << ": before " << before;
        EXPECT_EQ(bf16_counters().products > products, bf16 == 1) << c.precision;
        after[bf16] = r.last_valid.loss;
    }
    EXPECT_NEAR(after[1], after[0], 0.05 * after[0]) << "bf16 vs fp32 dev loss after 40 steps";
}

// Checkpoints are fp32 whatever the precision: an fp32 run resumes in bf16 and a bf16 run in fp32.
TEST(TrainBf16, CheckpointsMoveBetweenPrecisions) {
    set_num_threads(2);
    for (const char* first : {"fp32", "bf16-always"}) {
        const std::string dir = test::fresh_temp_dir(std::string("bf16-resume-") + first);
        TrainConfig c = reversal_config(dir);
        c.precision = first;
        c.max_steps = 10;
        c.valid_interval = 10;
        Trainer(c).run();
        c.precision = std::string(first) == "fp32" ? "bf16-always" : "fp32";
        c.max_steps = 20;
        Trainer t(c, c.save_dir + "/last.safetensors");
        const TrainResult r = t.run();
        EXPECT_EQ(r.state.step, 20) << first;
        EXPECT_TRUE(std::isfinite(r.last_valid.loss)) << first;
    }
}

// precision: bf16 runs bf16 products only where they are faster than fp32 on this CPU
// (bf16_verdict: AMX, or AMD's AVX512-BF16), and says so at the start where they are not;
// bf16-always runs them on any CPU.
TEST(TrainBf16, Bf16WhereItPaysAndBf16AlwaysAnywhere) {
    const Bf16Verdict v = bf16_verdict();
    EXPECT_FALSE(v.why.empty());
    const Bf16Kernel k = bf16_auto_kernel();
    EXPECT_EQ(v.pays, k == Bf16Kernel::onednn ||
                          (k == Bf16Kernel::avx512_bf16 && cpu_features().vendor == "AuthenticAMD"))
        << v.why;
    EXPECT_EQ(training_gemm_precision("fp32"), GemmPrecision::fp32);
    EXPECT_EQ(training_gemm_precision("bf16-always"), GemmPrecision::bf16);
    EXPECT_EQ(training_gemm_precision("bf16"), v.pays ? GemmPrecision::bf16 : GemmPrecision::fp32);
    EXPECT_THROW(training_gemm_precision("fp16"), UsageError);

    set_num_threads(1);
    TrainConfig c = reversal_config(test::fresh_temp_dir("bf16-verdict"));
    c.precision = "bf16";
    c.max_steps = 2;
    c.valid_interval = 2;
    testing::internal::CaptureStderr();
    const int64_t products = bf16_counters().products;
    Trainer(c).run();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(bf16_counters().products > products, v.pays);
    EXPECT_EQ(err.find("products stay fp32") != std::string::npos, !v.pays) << err;
}

}  // namespace
}  // namespace test_train_bf16
}  // namespace nazar
