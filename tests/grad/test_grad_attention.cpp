// Finite-difference checks of every attention variant: w.r.t. the query, the encoder states
// (through the context, the scores and the precomputed keys) and every parameter, over two
// decoder steps that share one precompute (so the += contract of d_keys is exercised), with
// padded sentences in the batch and windows clipped at sentence edges.
//
// Tolerances: inputs and weights are O(1), the loss Σ c ⊙ R sums ~30 O(1) terms. Central
// differences with eps = 1e-2 have truncation error ≈ eps²/6 · |f'''| ≲ 1e-4; float32 rounding
// of the loss (≈ 1e-7 · 30) divided by 2·eps adds ≈ 2e-4. atol = 1e-3 and rtol = 1e-2 sit
// above both with margin while a wrong transpose or a missing term (errors of O(0.1)) fails.
// local-p: the window position round(p_t) is piecewise constant; the test asserts every p_t is
// more than 0.05 away from a rounding boundary, far beyond what an eps perturbation moves it.
#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/attention.h"
#include "nazar/core/params.h"
#include "tests/common/gradcheck.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_grad_attention {

using namespace nazar;
using nazar::test::check_gradients;
using nazar::test::dot_loss;
using nazar::test::random_tensor;

namespace {

void run_gradcheck(AttentionConfig cfg, int t0, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    const int B = 3, S = 7, H = cfg.query_size, C = cfg.context_size;
    const std::vector<int> len{S, 4, 6};  // sentences 1 and 2 are padded
    Tensor q1 = random_tensor(rng, {B, H}), q2 = random_tensor(rng, {B, H});
    Tensor h = random_tensor(rng, {B, S, C});
    Tensor R1 = random_tensor(rng, {B, C}), R2 = random_tensor(rng, {B, C});
    AttentionKeys keys;
    AttentionStepCache c1, c2;
    Tensor ctx({B, C});
    auto loss = [&] {
        att.precompute(h, keys);
        att.forward(q1, keys, h, len, t0, ctx, c1);
        double l = dot_loss(ctx, R1);
        att.forward(q2, keys, h, len, t0 + 1, ctx, c2);
        return l + dot_loss(ctx, R2);
    };
    loss();
    if (cfg.local == LocalMode::predictive) {
        for (const auto* c : {&c1, &c2})
            for (int b = 0; b < B; ++b) {
                const float p = c->position[b], frac = p - std::floor(p);
                ASSERT_GT(std::abs(frac - 0.5f), 0.05f)
                    << "p_t = " << p << " sits on a rounding boundary";
            }
    }
    ParamList plist;
    collect_params(att.params, att.grad, "attention.", plist);
    zero_grads(plist);
    Tensor d_q1({B, H}), d_q2({B, H}), d_h({B, S, C}), d_keys = Tensor::like(keys.keys);
    // steps in reverse order, as a decoder's backward runs; d_keys collects both
    att.backward(R2, q2, keys, h, len, c2, d_q2, d_keys, d_h);
    att.backward(R1, q1, keys, h, len, c1, d_q1, d_keys, d_h);
    att.precompute_backward(h, d_keys, d_h);

    std::vector<test::GradTarget> targets{
        {"query1", q1, d_q1}, {"query2", q2, d_q2}, {"enc_out", h, d_h}};
    for (const auto& p : plist) targets.push_back({p.name, p.value->view(), p.grad->view()});
    EXPECT_TRUE(check_gradients(loss, targets, {.eps = 1e-2, .rtol = 1e-2, .atol = 1e-3}))
        << describe(att.cfg);

    // padding rows of enc_out get no gradient at all
    for (int b = 1; b < B; ++b)
        for (int i = len[b]; i < S; ++i)
            for (int c = 0; c < C; ++c) ASSERT_EQ(d_h.at(b, i, c), 0.0f) << describe(att.cfg);
    // local-p: the position predictor really receives gradient through p_t
    if (cfg.local == LocalMode::predictive) {
        double n = 0;
        for (int64_t i = 0; i < att.grad.W_p.numel(); ++i) n += std::abs(att.grad.W_p[i]);
        EXPECT_GT(n, 1e-4) << "no gradient reached W_p";
    }
}

AttentionConfig base(ScoreKind k) {
    const bool dot = k == ScoreKind::dot;
    return {.score = k, .query_size = dot ? 5 : 4, .context_size = 5, .attention_size = 3};
}
AttentionConfig with(AttentionConfig c, LocalMode m, int D, ScaleMode s = ScaleMode::none) {
    c.local = m;
    c.window = D;
    c.scale = s;
    c.position_size = 3;
    return c;
}

}  // namespace

TEST(AttentionGrad, Additive) {
    run_gradcheck(base(ScoreKind::additive), 0, 21);
}
TEST(AttentionGrad, Concat) {
    run_gradcheck(base(ScoreKind::concat), 0, 22);
}
TEST(AttentionGrad, Dot) {
    run_gradcheck(base(ScoreKind::dot), 0, 23);
}
TEST(AttentionGrad, General) {
    run_gradcheck(base(ScoreKind::general), 0, 24);
}
TEST(AttentionGrad, ScaledDot) {
    run_gradcheck(with(base(ScoreKind::dot), LocalMode::global, 1, ScaleMode::inv_sqrt), 0, 25);
}
TEST(AttentionGrad, LearnedScaleGeneral) {
    run_gradcheck(with(base(ScoreKind::general), LocalMode::global, 1, ScaleMode::learned), 0, 26);
}
// t0 = 4: sentence 1 (length 4) is beyond its end at both steps; D = 1 clips at the edges
TEST(AttentionGrad, LocalMonotonicGeneral) {
    run_gradcheck(with(base(ScoreKind::general), LocalMode::monotonic, 1), 4, 27);
}
TEST(AttentionGrad, LocalMonotonicAdditive) {
    run_gradcheck(with(base(ScoreKind::additive), LocalMode::monotonic, 2), 0, 28);
}
TEST(AttentionGrad, LocalPredictiveGeneral) {
    run_gradcheck(with(base(ScoreKind::general), LocalMode::predictive, 2), 0, 29);
}
TEST(AttentionGrad, LocalPredictiveAdditive) {
    run_gradcheck(with(base(ScoreKind::additive), LocalMode::predictive, 1), 0, 30);
}
TEST(AttentionGrad, LocalPredictiveLearnedScaleDot) {
    run_gradcheck(with(base(ScoreKind::dot), LocalMode::predictive, 2, ScaleMode::learned), 0, 31);
}

// The SIMD kernels at sizes that use them. The fused additive kernels run blocks of 16 lanes
// (AVX-512), then 8 (AVX2), then a scalar tail: A = 19 is 16 + 3 (or 2·8 + 3 on the AVX2 path),
// A = 40 is 2·16 + 8 (or 5·8). H = 13 and C = 21 are not multiples of 8, so the 8-lane dot
// products (vec.h) and axpys run their tails too. Each additive size runs on both paths.
// Tolerances as above: the loss now sums B·C = 63 terms of O(1); their float32 rounding
// (≈ 1e-7 · 63) over 2·eps is ≈ 3e-4, still below atol = 1e-3.
namespace {
AttentionConfig wide(ScoreKind k, int A) {
    const bool dot = k == ScoreKind::dot;
    return {.score = k, .query_size = dot ? 21 : 13, .context_size = 21, .attention_size = A};
}

// Both SIMD paths of the fused kernels: 8 lanes, then 16 where the CPU has AVX-512 (the choice
// is restored afterwards, tests/common/kernel_switches.h).
void gradcheck_lanes(AttentionConfig cfg, uint64_t seed) {
    const auto keep = test::keep_additive_avx512();
    {
        attn::set_additive_avx512(false);
        SCOPED_TRACE("8-lane path");
        run_gradcheck(cfg, 0, seed);
    }
    if (!attn::set_additive_avx512(true))
        GTEST_SKIP() << "no AVX-512 here: the 16-lane kernels are not used";
    SCOPED_TRACE("16-lane path");
    run_gradcheck(cfg, 0, seed);
}
}  // namespace

TEST(AttentionGradWide, AdditiveA19) {
    gradcheck_lanes(wide(ScoreKind::additive, 19), 41);
}
TEST(AttentionGradWide, AdditiveA40) {
    gradcheck_lanes(wide(ScoreKind::additive, 40), 42);
}
TEST(AttentionGradWide, ConcatA40) {
    gradcheck_lanes(wide(ScoreKind::concat, 40), 43);
}
TEST(AttentionGradWide, LocalPredictiveAdditiveA19) {
    gradcheck_lanes(with(wide(ScoreKind::additive, 19), LocalMode::predictive, 2), 44);
}
TEST(AttentionGradWide, LocalMonotonicAdditiveA40) {
    gradcheck_lanes(with(wide(ScoreKind::additive, 40), LocalMode::monotonic, 1), 45);
}
TEST(AttentionGradWide, DotC21) {
    run_gradcheck(wide(ScoreKind::dot, 0), 0, 46);
}
TEST(AttentionGradWide, LearnedScaleGeneralH13C21) {
    run_gradcheck(with(wide(ScoreKind::general, 0), LocalMode::global, 1, ScaleMode::learned), 0,
                  47);
}

}  // namespace test_grad_attention
