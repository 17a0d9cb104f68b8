// Composition check (STYLE.md, Tests §3): the batched, precomputed-keys, fused and windowed
// implementation against attn::naive (double, one score at a time straight from SPEC §3-5),
// forward and backward, for every variant, with padded and empty sentences and decoder steps
// beyond a sentence; the backward both per step (backward + precompute_backward) and, for
// dot/general, all steps at once (backward_steps).
#include "nazar/attention/attention.h"
#include "nazar/attention/naive.h"
#include "tests/common/test_util.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
constexpr int kB = 5, kS = 23;
const std::vector<int> kLengths{kS, 1, 0, 17, 9};  // padded, length 1 and empty sentences

void expect_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
    const int B = kB, S = kS, H = cfg.query_size, C = cfg.context_size;
    const std::vector<int>& len = kLengths;
    Tensor q = random_tensor(rng, {B, H}, -2, 2), h = random_tensor(rng, {B, S, C}, -2, 2);
    AttentionKeys keys;
    att.precompute(h, keys);
    for (int t : {0, 3, 12, 40}) {
        AttentionStepCache cache;
        Tensor ctx({B, C}), dense({B, S}), ctx_ref({B, C}), dense_ref({B, S});
        att.forward(q, keys, h, len, t, ctx, cache);
        dense_weights(cache, dense);
        attn::naive::attention_forward(att, q, h, len, t, dense_ref, ctx_ref);
        // float32 scores over A or H ≤ 24 terms of O(1) products, then exp: ~1e-6 relative
        EXPECT_TRUE(close_abs(dense, dense_ref, 2e-6)) << describe(att.cfg) << " t=" << t;
        EXPECT_TRUE(close_abs(ctx, ctx_ref, 5e-6)) << describe(att.cfg) << " t=" << t;
    }
}
// |got − ref| ≤ tol · max(1, max|ref|) elementwise: relative for large gradients, absolute for
// small ones (the scalar d scale is a sum of O(1) terms that may cancel to near 0).
::testing::AssertionResult close_grad(TensorView got, TensorView ref, double tol) {
    double mx = 1.0;
    for (int64_t i = 0; i < ref.numel(); ++i) mx = std::max(mx, std::fabs(double(ref[i])));
    return close_abs(got, ref, tol * mx);
}

// Every gradient of `got` (an Attention's grad) against the oracle's.
void expect_grads_close(AttentionParams& got, AttentionParams& ref, double tol,
                        const std::string& what) {
    std::vector<std::pair<std::string, Tensor*>> a, b;
    got.visit([&](const std::string& n, Tensor& t) { a.emplace_back(n, &t); });
    ref.visit([&](const std::string& n, Tensor& t) { b.emplace_back(n, &t); });
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].second->numel() > 0) {
            EXPECT_TRUE(close_grad(*a[i].second, *b[i].second, tol)) << what << " " << a[i].first;
        }
}

// Tolerance of the backward checks: the float32 path sums ≤ 24 products per score and ≤ 23
// positions per softmax of O(1) values (|q|, |h| ≤ 2); measured: at most 4.3e-6 of
// max(1, max|gradient|); 5e-5 keeps a margin while a wrong term or transpose (≥ 1e-2) fails.
constexpr double kGradTol = 5e-5;

// Per step: forward, backward and precompute_backward against naive::attention_backward.
void expect_backward_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
    const int B = kB, S = kS, H = cfg.query_size, C = cfg.context_size;
    const std::vector<int>& len = kLengths;
    Tensor q = random_tensor(rng, {B, H}, -2, 2), h = random_tensor(rng, {B, S, C}, -2, 2);
    const Tensor d_ctx = random_tensor(rng, {B, C});
    AttentionKeys keys;
    att.precompute(h, keys);
    for (int t : {0, 3, 12, 40}) {
        const std::string what = describe(att.cfg) + " t=" + std::to_string(t);
        AttentionStepCache cache;
        Tensor ctx({B, C}), d_q({B, H}), d_h({B, S, C}), d_keys = Tensor::like(keys.keys);
        Tensor d_q_ref({B, H}), d_h_ref({B, S, C});
        att.grad.visit([](const std::string&, Tensor& g) { g.zero(); });
        AttentionParams ref = att.grad;
        att.forward(q, keys, h, len, t, ctx, cache);
        att.backward(d_ctx, q, keys, h, len, cache, d_q, d_keys, d_h);
        att.precompute_backward(h, d_keys, d_h);
        attn::naive::attention_backward(att, q, h, len, t, d_ctx, d_q_ref, d_h_ref, ref);
        EXPECT_TRUE(close_grad(d_q, d_q_ref, kGradTol)) << what << " d_query";
        EXPECT_TRUE(close_grad(d_h, d_h_ref, kGradTol)) << what << " d_enc_out";
        expect_grads_close(att.grad, ref, kGradTol, what);
    }
}

// All T steps at once (dot/general): backward_steps against the oracle's per-step gradients,
// summed over the steps for enc_out and the parameters.
void expect_steps_backward_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
    const int T = 4, B = kB, S = kS, H = cfg.query_size, C = cfg.context_size;
    const std::vector<int>& len = kLengths;
    Tensor q = random_tensor(rng, {T, B, H}, -2, 2), h = random_tensor(rng, {B, S, C}, -2, 2);
    const Tensor d_ctx = random_tensor(rng, {T, B, C});
    AttentionKeys keys;
    att.precompute(h, keys);
    std::vector<AttentionStepCache> caches(T);
    std::vector<AttentionStepCache*> out;
    std::vector<const AttentionStepCache*> in;
    for (auto& c : caches) {
        out.push_back(&c);
        in.push_back(&c);
    }
    Tensor ctx({T, B, C}), d_q({T, B, H}), d_h({B, S, C}), d_keys = Tensor::like(keys.keys);
    att.forward_steps(q, keys, h, len, ctx, out);
    att.backward_steps(d_ctx, q, keys, h, len, in, d_q, d_keys, d_h);
    att.precompute_backward(h, d_keys, d_h);

    Tensor d_q_ref({T, B, H}), d_h_ref({B, S, C}), d_h_t({B, S, C});
    AttentionParams ref = att.grad, ref_t = att.grad;
    ref.visit([](const std::string&, Tensor& g) { g.zero(); });
    for (int t = 0; t < T; ++t) {
        attn::naive::attention_backward(att, q.select(t), h, len, t, d_ctx.select(t),
                                        d_q_ref.select(t), d_h_t, ref_t);
        for (int64_t i = 0; i < d_h_t.numel(); ++i) d_h_ref[i] += d_h_t[i];
        std::vector<Tensor*> sum, step;
        ref.visit([&](const std::string&, Tensor& g) { sum.push_back(&g); });
        ref_t.visit([&](const std::string&, Tensor& g) { step.push_back(&g); });
        for (size_t k = 0; k < sum.size(); ++k)
            for (int64_t i = 0; i < sum[k]->numel(); ++i) (*sum[k])[i] += (*step[k])[i];
    }
    const std::string what = describe(att.cfg) + " (all steps)";
    EXPECT_TRUE(close_grad(d_q, d_q_ref, kGradTol)) << what << " d_queries";
    EXPECT_TRUE(close_grad(d_h, d_h_ref, kGradTol)) << what << " d_enc_out";
    expect_grads_close(att.grad, ref, kGradTol, what);
}

AttentionConfig cfg(ScoreKind k, ScaleMode s = ScaleMode::none, LocalMode m = LocalMode::global,
                    int D = 3) {
    return {.score = k,
            .scale = s,
            .local = m,
            .window = D,
            .query_size = k == ScoreKind::dot ? 12 : 10,
            .context_size = 12,
            .attention_size = 20,
            .position_size = 6};
}
}  // namespace

TEST(AttentionOracle, Additive) {
    expect_matches_oracle(cfg(ScoreKind::additive), 1);
}
TEST(AttentionOracle, Concat) {
    expect_matches_oracle(cfg(ScoreKind::concat), 2);
}
TEST(AttentionOracle, Dot) {
    expect_matches_oracle(cfg(ScoreKind::dot), 3);
}
TEST(AttentionOracle, General) {
    expect_matches_oracle(cfg(ScoreKind::general), 4);
}
TEST(AttentionOracle, ScaledDot) {
    expect_matches_oracle(cfg(ScoreKind::dot, ScaleMode::inv_sqrt), 5);
}
TEST(AttentionOracle, LearnedScaleGeneral) {
    expect_matches_oracle(cfg(ScoreKind::general, ScaleMode::learned), 6);
}
TEST(AttentionOracle, LocalMonotonic) {
    expect_matches_oracle(cfg(ScoreKind::general, ScaleMode::none, LocalMode::monotonic), 7);
    expect_matches_oracle(cfg(ScoreKind::additive, ScaleMode::none, LocalMode::monotonic, 1), 8);
}
TEST(AttentionOracle, LocalPredictive) {
    expect_matches_oracle(cfg(ScoreKind::general, ScaleMode::none, LocalMode::predictive), 9);
    expect_matches_oracle(cfg(ScoreKind::concat, ScaleMode::none, LocalMode::predictive, 5), 10);
    expect_matches_oracle(cfg(ScoreKind::dot, ScaleMode::learned, LocalMode::predictive, 2), 11);
}

TEST(AttentionOracleBackward, EveryScoreGlobal) {
    expect_backward_matches_oracle(cfg(ScoreKind::additive), 1);
    expect_backward_matches_oracle(cfg(ScoreKind::concat), 2);
    expect_backward_matches_oracle(cfg(ScoreKind::dot), 3);
    expect_backward_matches_oracle(cfg(ScoreKind::general), 4);
    expect_backward_matches_oracle(cfg(ScoreKind::dot, ScaleMode::inv_sqrt), 5);
    expect_backward_matches_oracle(cfg(ScoreKind::general, ScaleMode::learned), 6);
}
TEST(AttentionOracleBackward, LocalMonotonic) {
    expect_backward_matches_oracle(cfg(ScoreKind::general, ScaleMode::none, LocalMode::monotonic),
                                   7);
    expect_backward_matches_oracle(
        cfg(ScoreKind::additive, ScaleMode::none, LocalMode::monotonic, 1), 8);
    expect_backward_matches_oracle(cfg(ScoreKind::dot, ScaleMode::learned, LocalMode::monotonic, 2),
                                   12);
}
TEST(AttentionOracleBackward, LocalPredictive) {
    expect_backward_matches_oracle(cfg(ScoreKind::general, ScaleMode::none, LocalMode::predictive),
                                   9);
    expect_backward_matches_oracle(
        cfg(ScoreKind::concat, ScaleMode::none, LocalMode::predictive, 5), 10);
    expect_backward_matches_oracle(
        cfg(ScoreKind::dot, ScaleMode::learned, LocalMode::predictive, 2), 11);
    expect_backward_matches_oracle(
        cfg(ScoreKind::additive, ScaleMode::none, LocalMode::predictive, 3), 13);
}
TEST(AttentionOracleBackward, AllStepsAtOnce) {
    expect_steps_backward_matches_oracle(cfg(ScoreKind::dot), 3);
    expect_steps_backward_matches_oracle(cfg(ScoreKind::general, ScaleMode::learned), 6);
    expect_steps_backward_matches_oracle(
        cfg(ScoreKind::general, ScaleMode::inv_sqrt, LocalMode::monotonic, 1), 7);
    expect_steps_backward_matches_oracle(
        cfg(ScoreKind::general, ScaleMode::none, LocalMode::predictive), 9);
    expect_steps_backward_matches_oracle(
        cfg(ScoreKind::dot, ScaleMode::learned, LocalMode::predictive, 2), 11);
}
