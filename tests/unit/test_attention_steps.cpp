// Attention::forward_steps / backward_steps (all decoder steps at once: per-sentence GEMMs for
// global attention, the local-p predictor over all T·B rows) against T calls of forward() /
// backward(), the per-step oracle: every score kind, scale and locality they accept (local-m,
// local-p with D = 1 and 2, windows clipped at both ends), padded sources (one of length 0),
// T = 1, 3 and 11 (the small-M and the blocked GEMM paths), S = 5 and 9 (local: with D = 1 the
// sentences of length 9 and 8 take the row-by-row path, S_b > 2W = 6, the others the dense one).
// Tolerances: both sides compute the same float32 sums of ≤ max(S, T, C) = 11 products of O(1)
// terms, grouped differently by the GEMM: a few ulps of the values' scale, so 1e-5 absolute on
// O(1) outputs. Padding is exact: weights 0 past S_b, in both paths.
#include "nazar/attention/attention.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace test_attention_steps {

using namespace nazar;
using nazar::test::random_tensor;

namespace {

struct Case {
    ScoreKind score;
    ScaleMode scale;
    int H;
    LocalMode local = LocalMode::global;
    int D = 1;
};

// The caches forward_steps filled against forward()'s, step by step.
void expect_caches_match(const Case& k, const std::vector<int>& len,
                         const std::vector<AttentionStepCache>& cs,
                         const std::vector<AttentionStepCache>& cr) {
    const int T = static_cast<int>(cs.size()), B = static_cast<int>(len.size());
    for (int t = 0; t < T; ++t) {
        EXPECT_LE(max_abs_diff(cs[t].weights, cr[t].weights), 1e-6) << t;
        EXPECT_LE(max_abs_diff(cs[t].probs, cr[t].probs), 1e-6) << t;
        EXPECT_LE(max_abs_diff(cs[t].scores, cr[t].scores), 1e-5) << t;
        EXPECT_EQ(cs[t].start, cr[t].start);
        EXPECT_EQ(cs[t].count, cr[t].count);
        EXPECT_EQ(cs[t].score_evals, cr[t].score_evals);
        if (k.local != LocalMode::global) {
            EXPECT_LE(max_abs_diff(cs[t].position, cr[t].position), 1e-5) << t;
        }
        if (k.local == LocalMode::predictive) {
            EXPECT_LE(max_abs_diff(cs[t].pos_hidden, cr[t].pos_hidden), 1e-6) << t;
            EXPECT_LE(max_abs_diff(cs[t].pos_sigmoid, cr[t].pos_sigmoid), 1e-6) << t;
        }
        const int W = cs[t].weights.dim(1);  // padding and columns past the window: exactly 0
        for (int b = 0; b < B; ++b)
            for (int j = 0; j < W; ++j)
                if (j >= cs[t].count[b] || cs[t].start[b] + j >= len[b]) {
                    EXPECT_EQ(cs[t].weights.at(b, j), 0.0f);
                }
    }
}

void check_case(const Case& k, int T, int S) {
    SCOPED_TRACE(std::string(to_string(k.score)) + " " + to_string(k.scale) + " " +
                 to_string(k.local) + " D = " + std::to_string(k.D) + ", T = " + std::to_string(T) +
                 ", S = " + std::to_string(S));
    const int B = 4, C = 6, H = k.H;
    const std::vector<int> len{S, 2, 0, S - 1};
    Rng rng(7);
    Attention a({.score = k.score,
                 .scale = k.scale,
                 .local = k.local,
                 .window = k.D,
                 .query_size = H,
                 .context_size = C,
                 .position_size = 3},
                rng);
    Attention ref = a;  // same parameters: the oracle
    Tensor enc = random_tensor(rng, {B, S, C});
    Tensor q = random_tensor(rng, {T, B, H});
    Tensor d_ctx = random_tensor(rng, {T, B, C});
    AttentionKeys keys;
    a.precompute(enc, keys);

    // forward
    std::vector<AttentionStepCache> cs(T), cr(T);
    std::vector<AttentionStepCache*> ps;
    for (auto& c : cs) ps.push_back(&c);
    Tensor ctx({T, B, C}), ctx_ref({T, B, C});
    a.forward_steps(q, keys, enc, len, ctx, ps);
    for (int t = 0; t < T; ++t)
        ref.forward(q.select(t), keys, enc, len, t, ctx_ref.select(t), cr[t]);
    EXPECT_LE(max_abs_diff(ctx, ctx_ref), 1e-5);
    expect_caches_match(k, len, cs, cr);

    // backward (accumulating: start from non-zero gradients on both sides)
    const int K = k.score == ScoreKind::dot ? 0 : H;
    Tensor dq = random_tensor(rng, {T, B, H}), dq_ref = dq;
    Tensor dk = K ? random_tensor(rng, {B, S, K}) : Tensor(Shape{0}), dk_ref = dk;
    Tensor de = random_tensor(rng, {B, S, C}), de_ref = de;
    std::vector<const AttentionStepCache*> cps;
    for (auto& c : cs) cps.push_back(&c);
    a.backward_steps(d_ctx, q, keys, enc, len, cps, dq, dk, de);
    for (int t = T - 1; t >= 0; --t)
        ref.backward(d_ctx.select(t), q.select(t), keys, enc, len, cr[t], dq_ref.select(t), dk_ref,
                     de_ref);
    EXPECT_LE(max_abs_diff(dq, dq_ref), 1e-5);
    EXPECT_LE(max_abs_diff(de, de_ref), 1e-5);
    if (K) {
        EXPECT_LE(max_abs_diff(dk, dk_ref), 1e-5);
    }
    if (k.scale == ScaleMode::learned) {
        EXPECT_NEAR(a.grad.scale[0], ref.grad.scale[0], 1e-5);
    }
    if (k.local == LocalMode::predictive) {
        EXPECT_LE(max_abs_diff(a.grad.W_p, ref.grad.W_p), 1e-5);
        EXPECT_LE(max_abs_diff(a.grad.v_p, ref.grad.v_p), 1e-5);
        float any = 0;  // not vacuous: the predictor does get gradient
        for (int64_t i = 0; i < ref.grad.W_p.numel(); ++i)
            any = std::max(any, std::fabs(ref.grad.W_p[i]));
        EXPECT_GT(any, 0.0f);
    }
}

}  // namespace

TEST(AttentionSteps, MatchesPerStepForwardAndBackward) {
    const Case cases[] = {{ScoreKind::general, ScaleMode::none, 5},
                          {ScoreKind::general, ScaleMode::inv_sqrt, 7},
                          {ScoreKind::general, ScaleMode::learned, 3},
                          {ScoreKind::dot, ScaleMode::none, 6},
                          {ScoreKind::dot, ScaleMode::learned, 6},
                          {ScoreKind::general, ScaleMode::none, 5, LocalMode::predictive, 1},
                          {ScoreKind::general, ScaleMode::learned, 4, LocalMode::predictive, 2},
                          {ScoreKind::dot, ScaleMode::inv_sqrt, 6, LocalMode::predictive, 2},
                          {ScoreKind::general, ScaleMode::none, 5, LocalMode::monotonic, 1},
                          {ScoreKind::dot, ScaleMode::learned, 6, LocalMode::monotonic, 2}};
    for (const Case& k : cases)
        for (int T : {1, 3, 11})
            for (int S : {5, 9}) check_case(k, T, S);
}

TEST(AttentionSteps, OnlyDotAndGeneral) {
    Rng rng(1);
    Attention add(
        {.score = ScoreKind::additive, .query_size = 3, .context_size = 4, .attention_size = 2},
        rng);
    Attention lp({.score = ScoreKind::general,
                  .local = LocalMode::predictive,
                  .window = 1,
                  .query_size = 3,
                  .context_size = 4},
                 rng);
    Attention gen({.score = ScoreKind::general, .query_size = 3, .context_size = 4}, rng);
    EXPECT_FALSE(add.can_batch_steps());
    EXPECT_TRUE(lp.can_batch_steps());
    EXPECT_TRUE(gen.can_batch_steps());
    Tensor enc({1, 2, 4}), q({2, 1, 3}), ctx({2, 1, 4});
    AttentionKeys keys;
    add.precompute(enc, keys);
    std::vector<AttentionStepCache> cs(2);
    std::vector<AttentionStepCache*> ps{&cs[0], &cs[1]};
    const std::vector<int> len{2};
    EXPECT_THROW(add.forward_steps(q, keys, enc, len, ctx, ps), nazar::Error);
    gen.precompute(enc, keys);
    Tensor bad_ctx({2, 1, 3});
    EXPECT_THROW(gen.forward_steps(q, keys, enc, len, bad_ctx, ps), nazar::Error);
    const std::vector<int> too_long{3};
    EXPECT_THROW(gen.forward_steps(q, keys, enc, too_long, ctx, ps), nazar::Error);
}

}  // namespace test_attention_steps
