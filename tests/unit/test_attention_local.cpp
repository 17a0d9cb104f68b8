// Local attention (docs/spec.md §5): window placement and clipping, local-m beyond the sentence,
// the local-p Gaussian, padding, and per-step work that does not grow with S.
#include "nazar/attention/attention.h"
#include "nazar/attention/local.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <limits>
#include <vector>

namespace test_attention_local {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
struct StepResult {
    AttentionStepCache cache;
    Tensor context;
};
StepResult run_step(const Attention& att, ConstTensorView q, ConstTensorView h,
                    const std::vector<int>& len, int t) {
    StepResult r;
    AttentionKeys keys;
    att.precompute(h, keys);
    r.context = Tensor({q.dim(0), h.dim(2)});
    att.forward(q, keys, h, len, t, r.context, r.cache);
    return r;
}
}  // namespace

TEST(LocalWindow, ClippedAtSentenceEdges) {
    // D = 2, S_b = 6: centre 0 -> [0, 2]; centre 3 -> [1, 5]; centre 5 -> [3, 5]
    EXPECT_EQ(attn::window_around(0, 6, 2).start, 0);
    EXPECT_EQ(attn::window_around(0, 6, 2).count, 3);
    EXPECT_EQ(attn::window_around(3, 6, 2).start, 1);
    EXPECT_EQ(attn::window_around(3, 6, 2).count, 5);
    EXPECT_EQ(attn::window_around(5, 6, 2).start, 3);
    EXPECT_EQ(attn::window_around(5, 6, 2).count, 3);
    EXPECT_EQ(attn::window_around(0, 1, 2).count, 1);  // a one-token sentence
    EXPECT_EQ(attn::window_around(0, 0, 2).count, 0);  // an empty sentence
}

TEST(LocalWindow, MonotonicBeyondTheSentenceStaysOnTheLastToken) {
    float p = -1;
    const attn::Window w = attn::monotonic_window(40, 7, 3, p);  // t = 40 > S_b − 1 = 6
    EXPECT_FLOAT_EQ(p, 6);
    EXPECT_EQ(w.start, 3);
    EXPECT_EQ(w.count, 4);
}

TEST(LocalWindow, PredictiveRoundsHalfUpAndClampsTheCentre) {
    EXPECT_EQ(attn::predictive_window(2.49f, 10, 1).start, 1);    // centre 2
    EXPECT_EQ(attn::predictive_window(2.5f, 10, 1).start, 2);     // centre 3
    const attn::Window w = attn::predictive_window(9.9f, 10, 1);  // round -> 10, clamp -> 9
    EXPECT_EQ(w.start, 8);
    EXPECT_EQ(w.count, 2);
}

// p_t is NaN when the predictor's weights are (a bad update the trainer will skip) and can be
// huge in float; the centre is clamped before any float -> int conversion (UBSan checks it).
TEST(LocalWindow, PredictiveCentreOfNanOrHugePositionsIsClamped) {
    const float nan = std::numeric_limits<float>::quiet_NaN(),
                inf = std::numeric_limits<float>::infinity();
    for (const float p : {nan, -inf, -1e30f, -0.7f}) {
        const attn::Window w = attn::predictive_window(p, 10, 1);  // centre 0
        EXPECT_EQ(w.start, 0) << p;
        EXPECT_EQ(w.count, 2) << p;
    }
    for (const float p : {inf, 1e30f, 3e9f}) {
        const attn::Window w = attn::predictive_window(p, 10, 1);  // centre 9
        EXPECT_EQ(w.start, 8) << p;
        EXPECT_EQ(w.count, 2) << p;
    }
}

TEST(LocalAttention, MonotonicWeightsAreTheWindowSoftmax) {
    Rng rng(11);
    const int S = 9, D = 2;
    Attention att({.score = ScoreKind::general,
                   .local = LocalMode::monotonic,
                   .window = D,
                   .query_size = 3,
                   .context_size = 4},
                  rng);
    Attention glob({.score = ScoreKind::general, .query_size = 3, .context_size = 4}, rng);
    glob.params = att.params;
    Tensor q = random_tensor(rng, {2, 3}), h = random_tensor(rng, {2, S, 4});
    const std::vector<int> len{S, 5};
    const int t = 6;  // sentence 0: window [4, 8]; sentence 1: centre min(6, 4) = 4 -> [2, 4]
    StepResult r = run_step(att, q, h, len, t);
    EXPECT_EQ(r.cache.weights.shape(), Shape({2, 2 * D + 1}));
    EXPECT_EQ(r.cache.start[0], 4);
    EXPECT_EQ(r.cache.count[0], 5);
    EXPECT_EQ(r.cache.start[1], 2);
    EXPECT_EQ(r.cache.count[1], 3);
    EXPECT_EQ(r.cache.score_evals, 8);
    // = global attention with the scores outside the window removed
    StepResult g = run_step(glob, q, h, len, t);
    for (int b = 0; b < 2; ++b) {
        const int st = r.cache.start[b], n = r.cache.count[b];
        float sum = 0;
        for (int j = 0; j < n; ++j) sum += g.cache.weights.at(b, st + j);
        for (int j = 0; j < n; ++j)
            EXPECT_NEAR(r.cache.weights.at(b, j), g.cache.weights.at(b, st + j) / sum, 1e-6);
        for (int j = n; j < 2 * D + 1; ++j) EXPECT_EQ(r.cache.weights.at(b, j), 0.0f);
    }
    // dense_weights places the window in its (B, S) row
    Tensor dense({2, S});
    dense_weights(r.cache, dense);
    EXPECT_EQ(dense.at(1, 1), 0.0f);
    EXPECT_EQ(dense.at(1, 2), r.cache.weights.at(1, 0));
    EXPECT_EQ(dense.at(1, 4), r.cache.weights.at(1, 2));
    EXPECT_EQ(dense.at(1, 5), 0.0f);
    EXPECT_EQ(dense.at(0, 8), r.cache.weights.at(0, 4));
}

TEST(LocalAttention, PredictiveWeightsAreWindowSoftmaxTimesGaussian) {
    Rng rng(12);
    const int S = 12, D = 3, H = 4, C = 4;
    Attention att({.score = ScoreKind::dot,
                   .local = LocalMode::predictive,
                   .window = D,
                   .query_size = H,
                   .context_size = C,
                   .position_size = 5},
                  rng);
    Tensor q = random_tensor(rng, {2, H}), h = random_tensor(rng, {2, S, C});
    const std::vector<int> len{S, 7};
    StepResult r = run_step(att, q, h, len, 0);
    const float sigma = D / 2.0f;
    for (int b = 0; b < 2; ++b) {
        // p_t = S_b · sigmoid(v_p · tanh(W_p q)), recomputed here in double
        double u = 0;
        for (int i = 0; i < 5; ++i) {
            double pre = 0;
            for (int k = 0; k < H; ++k) pre += att.params.W_p.at(i, k) * q.at(b, k);
            u += att.params.v_p[i] * std::tanh(pre);
        }
        const double p = len[b] / (1 + std::exp(-u));
        EXPECT_NEAR(r.cache.position[b], p, 1e-5);
        const int c = std::min(static_cast<int>(std::floor(p + 0.5)), len[b] - 1);
        const int lo = std::max(0, c - D), hi = std::min(len[b] - 1, c + D);
        ASSERT_EQ(r.cache.start[b], lo);
        ASSERT_EQ(r.cache.count[b], hi - lo + 1);
        std::vector<double> e;
        double mx = -1e30, sum = 0, ctx0 = 0;
        for (int i = lo; i <= hi; ++i) {
            double s = 0;
            for (int k = 0; k < C; ++k) s += q.at(b, k) * h.at(b, i, k);
            e.push_back(s);
            mx = std::max(mx, s);
        }
        for (double s : e) sum += std::exp(s - mx);
        for (int i = lo; i <= hi; ++i) {
            const double a =
                std::exp(e[i - lo] - mx) / sum * std::exp(-(i - p) * (i - p) / (2 * sigma * sigma));
            EXPECT_NEAR(r.cache.weights.at(b, i - lo), a, 2e-6) << b << " " << i;
            ctx0 += a * h.at(b, i, 0);
        }
        EXPECT_NEAR(r.context.at(b, 0), ctx0, 5e-6);
    }
}

// Per-step work is O(D): the number of score evaluations is the same at S = 50 and S = 800.
TEST(LocalAttention, ScoreEvaluationsDoNotGrowWithS) {
    for (LocalMode mode : {LocalMode::monotonic, LocalMode::predictive}) {
        std::vector<int64_t> evals;
        for (int S : {50, 800}) {
            Rng rng(13);
            Attention att({.score = ScoreKind::additive,
                           .local = mode,
                           .window = 4,
                           .query_size = 6,
                           .context_size = 6,
                           .attention_size = 5},
                          rng);
            Tensor q = random_tensor(rng, {3, 6}), h = random_tensor(rng, {3, S, 6});
            const std::vector<int> len(3, S);
            StepResult r = run_step(att, q, h, len, 20);
            evals.push_back(r.cache.score_evals);
            EXPECT_LE(r.cache.score_evals, 3 * 9) << to_string(mode) << " S=" << S;
            EXPECT_EQ(r.cache.weights.dim(1), 9);
        }
        EXPECT_EQ(evals[0], evals[1]) << to_string(mode);
    }
    // global attention, by contrast, scores every real position
    Rng rng(14);
    Attention glob(
        {.score = ScoreKind::additive, .query_size = 6, .context_size = 6, .attention_size = 5},
        rng);
    Tensor q = random_tensor(rng, {3, 6}), h = random_tensor(rng, {3, 800, 6});
    EXPECT_EQ(run_step(glob, q, h, std::vector<int>(3, 800), 0).cache.score_evals, 2400);
}

TEST(LocalAttention, PaddedSentenceMatchesItselfAlone) {
    for (LocalMode mode : {LocalMode::monotonic, LocalMode::predictive}) {
        Rng rng(15);
        Attention att({.score = ScoreKind::concat,
                       .local = mode,
                       .window = 2,
                       .query_size = 4,
                       .context_size = 3,
                       .attention_size = 3},
                      rng);
        const int S = 10, len0 = 4;
        Tensor q = random_tensor(rng, {2, 4}), h = random_tensor(rng, {2, S, 3});
        for (int i = len0; i < S; ++i)
            for (int c = 0; c < 3; ++c) h.at(0, i, c) = 30.0f;
        StepResult r = run_step(att, q, h, {len0, S}, 7);
        Tensor q1({1, 4}), h1({1, len0, 3});
        q1.copy_from(q.slice(0, 1));
        for (int i = 0; i < len0; ++i)
            for (int c = 0; c < 3; ++c) h1.at(0, i, c) = h.at(0, i, c);
        StepResult r1 = run_step(att, q1, h1, {len0}, 7);
        EXPECT_EQ(r.cache.start[0], r1.cache.start[0]);
        EXPECT_EQ(r.cache.count[0], r1.cache.count[0]);
        for (int j = 0; j < 5; ++j)
            EXPECT_NEAR(r.cache.weights.at(0, j), r1.cache.weights.at(0, j), 1e-6);
        EXPECT_TRUE(close_abs(r.context.slice(0, 1), r1.context, 1e-6));
        Tensor dense({2, S});
        dense_weights(r.cache, dense);
        for (int i = len0; i < S; ++i)
            EXPECT_EQ(dense.at(0, i), 0.0f) << to_string(mode);  // padding: exactly 0
    }
}

TEST(LocalAttention, EmptySentenceGivesZeroContext) {
    Rng rng(16);
    Attention att({.score = ScoreKind::general,
                   .local = LocalMode::predictive,
                   .window = 2,
                   .query_size = 3,
                   .context_size = 3},
                  rng);
    Tensor q = random_tensor(rng, {2, 3}), h = random_tensor(rng, {2, 4, 3});
    StepResult r = run_step(att, q, h, {0, 4}, 0);
    EXPECT_EQ(r.cache.count[0], 0);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(r.context.at(0, c), 0.0f);
}

}  // namespace test_attention_local
