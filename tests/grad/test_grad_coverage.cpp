// Finite-difference checks of coverage attention (nazar/attention/coverage.h) and the coverage
// loss (nazar/models/attention_terms.h) over T = 4 decoder steps that share one precompute:
// cov_t = Σ_{t'<t} α_t' feeds the score of every later step, so the gradient of step 3's loss
// reaches the queries of steps 0-2 through the coverage alone. Padded sentences in the batch;
// w_c random (a fresh model's w_c is 0, which would hide the coverage terms).
//
// loss = Σ_t Σ c_t ⊙ R_t  (+ λ Σ_t Σ_i min(α_ti, cov_ti) over the real target steps).
// Tolerances as tests/grad/test_grad_attention.cpp (eps = 1e-2, rtol = 1e-2, atol = 1e-3): the
// loss sums T·B·C ≤ 4·3·21 O(1) terms; float32 rounding (≈ 1e-7 · 252) over 2·eps ≈ 1.3e-3 at
// the widest size, so the wide checks use atol = 2e-3. The min() of the coverage loss has a
// kink where α = cov: the loss checks assert every real pair is at least 0.01 apart, further than
// an eps step moves α (|d α| ≲ 0.25 · |d e| ≈ 3e-3 here).
#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/attention.h"
#include "nazar/attention/coverage.h"
#include "nazar/core/params.h"
#include "nazar/models/attention_terms.h"
#include "tests/common/gradcheck.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_grad_coverage {

using namespace nazar;
using nazar::test::check_gradients;
using nazar::test::dot_loss;
using nazar::test::random_tensor;

namespace {

constexpr int kT = 4, kB = 3, kS = 7, kPad = 0;

struct Run {
    double loss = 0;       // Σ c ⊙ R + coverage loss
    double min_gap = 1e9;  // smallest |α − cov| over the loss's real positions
};

// The T steps' forward with the coverage recurrence; the loss terms through AttentionTerms.
Run forward_all(Attention& att, const std::vector<Tensor>& q, const Tensor& h,
                const std::vector<int>& len, const std::vector<Tensor>& R,
                const std::vector<int>& targets, float lambda, AttentionKeys& keys,
                std::vector<DecoderStepCache>& steps, AttentionTerms& terms) {
    const int C = att.cfg.context_size;
    Tensor ctx({kB, C});
    Run r;
    att.precompute(h, keys);
    for (int t = 0; t < kT; ++t) {
        AttentionTerms::begin_step(att, steps, t, kB, kS);
        att.forward(q[t], keys, h, len, t, ctx, steps[t].attention);
        r.loss += dot_loss(ctx, R[t]);
    }
    r.loss += terms.loss_forward(att, steps, targets, kPad, kB, kS, lambda, 1.0f);
    for (int t = 0; t < kT; ++t) {
        Tensor dense({kB, kS});
        dense_weights(steps[t].attention, dense);
        for (int b = 0; b < kB; ++b)
            for (int i = 0; i < len[b] && targets[t * kB + b] != kPad; ++i)
                if (t > 0 &&
                    std::max(dense.at(b, i), steps[t].attention.coverage.at(b, i)) > 0.02f) {
                    r.min_gap = std::min<double>(
                        r.min_gap, std::abs(dense.at(b, i) - steps[t].attention.coverage.at(b, i)));
                }
    }
    return r;
}

// The range of v_a for the loss checks: scores of O(3) whatever A (a fresh v_a gives
// near-uniform α, and α_1 ≈ α_0 = cov_1 then sits on the kink by construction).
float peak(const AttentionConfig& cfg) {
    return 6.0f / std::sqrt(static_cast<float>(cfg.attention_size));
}

// The first seed from `seed` on whose inputs every real (α, cov) pair of the loss is at least
// `gap` apart (the inputs are drawn as run_gradcheck draws them); asserts one exists in 40.
uint64_t seed_off_kinks(AttentionConfig cfg, uint64_t seed, double gap);

void run_gradcheck(AttentionConfig cfg, float lambda, uint64_t seed, float atol = 1e-3f) {
    cfg.coverage = true;
    if (lambda > 0) seed = seed_off_kinks(cfg, seed, 0.01);
    Rng rng(seed);
    Attention att(cfg, rng);
    ASSERT_EQ(att.params.w_c.shape(), (Shape{1, cfg.attention_size}));
    for (int64_t i = 0; i < att.params.w_c.numel(); ++i) EXPECT_EQ(att.params.w_c[i], 0.0f);
    rng.fill_uniform(att.params.w_c, -1.5f, 1.5f);
    // the loss: peaked weights (peak())
    if (lambda > 0) rng.fill_uniform(att.params.v_a, -peak(cfg), peak(cfg));
    const int H = cfg.query_size, C = cfg.context_size;
    const std::vector<int> len{kS, 4, 6};
    std::vector<Tensor> q, R;
    for (int t = 0; t < kT; ++t) {
        q.push_back(random_tensor(rng, {kB, H}));
        R.push_back(random_tensor(rng, {kB, C}));
    }
    Tensor h = random_tensor(rng, {kB, kS, C});
    // (T, B) time-major targets: sentence 1 ends after step 1 (its steps 2, 3 are padding)
    std::vector<int> targets(kT * kB, 5);
    targets[2 * kB + 1] = targets[3 * kB + 1] = kPad;
    AttentionKeys keys;
    std::vector<DecoderStepCache> steps(kT);
    AttentionTerms terms;
    auto loss = [&] {
        return forward_all(att, q, h, len, R, targets, lambda, keys, steps, terms).loss;
    };
    const Run first = forward_all(att, q, h, len, R, targets, lambda, keys, steps, terms);
    if (lambda > 0) {
        ASSERT_GT(first.min_gap, 0.01) << "an α sits on the min() kink";
    }
    ParamList plist;
    collect_params(att.params, att.grad, "attention.", plist);
    zero_grads(plist);
    std::vector<Tensor> d_q;
    for (int t = 0; t < kT; ++t) d_q.emplace_back(Shape{kB, H});
    Tensor d_h({kB, kS, C}), d_keys = Tensor::like(keys.keys);
    for (int t = kT - 1; t >= 0; --t) {  // reverse order, as a decoder's backward runs
        terms.before_step_backward(att, t);
        att.backward(R[t], q[t], keys, h, len, steps[t].attention, d_q[t], d_keys, d_h);
        terms.after_step_backward(att, t);
    }
    att.precompute_backward(h, d_keys, d_h);
    std::vector<test::GradTarget> targets_g{{"enc_out", h, d_h}};
    for (int t = 0; t < kT; ++t) targets_g.push_back({"query" + std::to_string(t), q[t], d_q[t]});
    for (const auto& p : plist) targets_g.push_back({p.name, p.value->view(), p.grad->view()});
    EXPECT_TRUE(check_gradients(loss, targets_g, {.eps = 1e-2, .rtol = 1e-2, .atol = atol}))
        << describe(att.cfg) << " lambda " << lambda;
    // the coverage weights really receive gradient
    double n = 0;
    for (int64_t i = 0; i < att.grad.w_c.numel(); ++i) n += std::abs(att.grad.w_c[i]);
    EXPECT_GT(n, 1e-4) << "no gradient reached w_c";
}

uint64_t seed_off_kinks(AttentionConfig cfg, uint64_t seed, double gap) {
    for (uint64_t s = seed; s < seed + 40; ++s) {
        Rng rng(s);
        Attention att(cfg, rng);
        rng.fill_uniform(att.params.w_c, -1.5f, 1.5f);
        rng.fill_uniform(att.params.v_a, -peak(cfg), peak(cfg));
        const std::vector<int> len{kS, 4, 6};
        std::vector<Tensor> q, R;
        for (int t = 0; t < kT; ++t) {
            q.push_back(random_tensor(rng, {kB, cfg.query_size}));
            R.push_back(random_tensor(rng, {kB, cfg.context_size}));
        }
        const Tensor h = random_tensor(rng, {kB, kS, cfg.context_size});
        std::vector<int> targets(kT * kB, 5);
        targets[2 * kB + 1] = targets[3 * kB + 1] = kPad;
        AttentionKeys keys;
        std::vector<DecoderStepCache> steps(kT);
        AttentionTerms terms;
        if (forward_all(att, q, h, len, R, targets, 1.0f, keys, steps, terms).min_gap > gap)
            return s;
    }
    ADD_FAILURE() << "no seed in [" << seed << ", " << seed + 40 << ") keeps off the kinks";
    return seed;
}

AttentionConfig small(ScoreKind k) {
    return {.score = k, .query_size = 4, .context_size = 5, .attention_size = 3};
}
AttentionConfig wide(ScoreKind k, int A) {
    return {.score = k, .query_size = 13, .context_size = 21, .attention_size = A};
}
AttentionConfig local(AttentionConfig c, LocalMode m, int D) {
    c.local = m;
    c.window = D;
    c.position_size = 3;
    return c;
}

// Both SIMD paths of the fused kernel (see test_grad_attention.cpp).
void lanes(AttentionConfig cfg, float lambda, uint64_t seed) {
    const auto keep = test::keep_additive_avx512();
    {
        attn::set_additive_avx512(false);
        SCOPED_TRACE("8-lane path");
        run_gradcheck(cfg, lambda, seed, 2e-3f);
    }
    if (!attn::set_additive_avx512(true))
        GTEST_SKIP() << "no AVX-512 here: the 16-lane kernels are not used";
    SCOPED_TRACE("16-lane path");
    run_gradcheck(cfg, lambda, seed, 2e-3f);
}

}  // namespace

TEST(CoverageGrad, AdditiveA3) {
    run_gradcheck(small(ScoreKind::additive), 0.0f, 61);
}
TEST(CoverageGrad, ConcatA3) {
    run_gradcheck(small(ScoreKind::concat), 0.0f, 62);
}
TEST(CoverageGrad, LocalMonotonicAdditive) {  // windows clip: cov outside a window is kept
    run_gradcheck(local(small(ScoreKind::additive), LocalMode::monotonic, 1), 0.0f, 63);
}
TEST(CoverageGrad, AdditiveA19) {
    lanes(wide(ScoreKind::additive, 19), 0.0f, 64);
}
TEST(CoverageGrad, AdditiveA40) {
    lanes(wide(ScoreKind::additive, 40), 0.0f, 65);
}
TEST(CoverageGrad, ConcatA40) {
    lanes(wide(ScoreKind::concat, 40), 0.0f, 66);
}
TEST(CoverageLossGrad, AdditiveA3) {
    run_gradcheck(small(ScoreKind::additive), 0.7f, 67);
}
TEST(CoverageLossGrad, AdditiveA19) {
    lanes(wide(ScoreKind::additive, 19), 0.7f, 68);
}
TEST(CoverageLossGrad, AdditiveA40) {
    lanes(wide(ScoreKind::additive, 40), 0.7f, 69);
}

// The coverage loss's value from its definition, and its masking of padded target steps.
TEST(CoverageLoss, ValueFromDefinition) {
    AttentionConfig cfg = small(ScoreKind::additive);
    cfg.coverage = true;
    Rng rng(70);
    Attention att(cfg, rng);
    rng.fill_uniform(att.params.w_c, -1.0f, 1.0f);
    const std::vector<int> len{kS, 4, 6};
    Tensor h = random_tensor(rng, {kB, kS, cfg.context_size}), ctx({kB, cfg.context_size});
    std::vector<int> targets(kT * kB, 5);
    targets[3 * kB + 2] = kPad;
    AttentionKeys keys;
    std::vector<DecoderStepCache> steps(kT);
    att.precompute(h, keys);
    std::vector<Tensor> dense;
    for (int t = 0; t < kT; ++t) {
        AttentionTerms::begin_step(att, steps, t, kB, kS);
        att.forward(random_tensor(rng, {kB, cfg.query_size}), keys, h, len, t, ctx,
                    steps[t].attention);
        dense.emplace_back(Shape{kB, kS});
        dense_weights(steps[t].attention, dense.back());
    }
    double want = 0;
    std::vector<double> cov(kB * kS, 0.0);
    for (int t = 0; t < kT; ++t)
        for (int b = 0; b < kB; ++b)
            for (int i = 0; i < kS; ++i) {
                EXPECT_NEAR(steps[t].attention.coverage.at(b, i), cov[b * kS + i], 1e-6);
                if (targets[t * kB + b] != kPad)
                    want += std::min<double>(dense[t].at(b, i), cov[b * kS + i]);
                cov[b * kS + i] += dense[t].at(b, i);
            }
    AttentionTerms terms;
    EXPECT_NEAR(terms.loss_forward(att, steps, targets, kPad, kB, kS, 0.5f, 1.0f), 0.5 * want,
                1e-5);
    EXPECT_GT(want, 0.1);
}

}  // namespace test_grad_coverage
