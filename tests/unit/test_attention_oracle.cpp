// Composition check (docs/design.md §8.3): the batched, precomputed-keys, fused and windowed
// implementation against attn::naive (double, one score at a time straight from docs/spec.md §3-5),
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

namespace test_attention_oracle {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
constexpr int kB = 5, kS = 23;
const std::vector<int> kLengths{kS, 1, 0, 17, 9};  // padded, length 1 and empty sentences

// An Attention with random parameters, queries of the given shape, encoder states (B, S, C)
// and an upstream gradient of the contexts (rows of the queries × C), all drawn from one seed;
// the learned scale, where there is one, set to 0.7; the keys precomputed.
struct Problem {
    Problem(AttentionConfig cfg, uint64_t seed, Shape query_shape)
        : rng(seed),
          att(cfg, rng),
          q(random_tensor(rng, query_shape, -2, 2)),
          h(random_tensor(rng, {kB, kS, C}, -2, 2)) {
        if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
        Shape ctx_shape = query_shape;
        ctx_shape[-1] = C;
        d_ctx = random_tensor(rng, ctx_shape);
        att.precompute(h, keys);
    }
    Rng rng;
    Attention att;
    const int H = att.cfg.query_size, C = att.cfg.context_size;
    Tensor q, h, d_ctx;
    AttentionKeys keys;
};

void expect_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Problem pb(cfg, seed, {kB, cfg.query_size});
    for (int t : {0, 3, 12, 40}) {
        AttentionStepCache cache;
        Tensor ctx({kB, pb.C}), dense({kB, kS}), ctx_ref({kB, pb.C}), dense_ref({kB, kS});
        pb.att.forward(pb.q, pb.keys, pb.h, kLengths, t, ctx, cache);
        dense_weights(cache, dense);
        attn::naive::attention_forward(pb.att, pb.q, pb.h, kLengths, t, dense_ref, ctx_ref);
        // float32 scores over A or H ≤ 24 terms of O(1) products, then exp: ~1e-6 relative
        EXPECT_TRUE(close_abs(dense, dense_ref, 2e-6)) << describe(pb.att.cfg) << " t=" << t;
        EXPECT_TRUE(close_abs(ctx, ctx_ref, 5e-6)) << describe(pb.att.cfg) << " t=" << t;
    }
}

// |got − ref| ≤ tol · max(1, max|ref|) elementwise: relative for large gradients, absolute for
// small ones (the scalar d scale is a sum of O(1) terms that may cancel to near 0).
::testing::AssertionResult close_grad(ConstTensorView got, ConstTensorView ref, double tol) {
    double mx = 1.0;
    for (int64_t i = 0; i < ref.numel(); ++i) mx = std::max(mx, std::fabs(double(ref[i])));
    return close_abs(got, ref, tol * mx);
}

std::vector<std::pair<std::string, Tensor*>> grads_of(AttentionParams& p) {
    std::vector<std::pair<std::string, Tensor*>> out;
    p.visit([&](const std::string& n, Tensor& t) { out.emplace_back(n, &t); });
    return out;
}

// Tolerance of the backward checks: the float32 path sums ≤ 24 products per score and ≤ 23
// positions per softmax of O(1) values (|q|, |h| ≤ 2); measured: at most 4.3e-6 of
// max(1, max|gradient|); 5e-5 keeps a margin while a wrong term or transpose (≥ 1e-2) fails.
constexpr double kGradTol = 5e-5;

// d_query, d_enc_out and every parameter gradient against the oracle's.
void expect_grads_match(ConstTensorView d_q, ConstTensorView d_q_ref, ConstTensorView d_h,
                        ConstTensorView d_h_ref, AttentionParams& got, AttentionParams& ref,
                        const std::string& what) {
    EXPECT_TRUE(close_grad(d_q, d_q_ref, kGradTol)) << what << " d_query";
    EXPECT_TRUE(close_grad(d_h, d_h_ref, kGradTol)) << what << " d_enc_out";
    const auto a = grads_of(got), b = grads_of(ref);
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].second->numel() > 0) {
            EXPECT_TRUE(close_grad(*a[i].second, *b[i].second, kGradTol))
                << what << " " << a[i].first;
        }
}

// Per step: forward, backward and precompute_backward against naive::attention_backward.
void expect_backward_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Problem pb(cfg, seed, {kB, cfg.query_size});
    Attention& att = pb.att;
    for (int t : {0, 3, 12, 40}) {
        AttentionStepCache cache;
        Tensor ctx({kB, pb.C}), d_q({kB, pb.H}), d_h({kB, kS, pb.C});
        Tensor d_keys = Tensor::like(pb.keys.keys), d_q_ref({kB, pb.H}), d_h_ref({kB, kS, pb.C});
        att.grad.visit([](const std::string&, Tensor& g) { g.zero(); });
        AttentionParams ref = att.grad;
        att.forward(pb.q, pb.keys, pb.h, kLengths, t, ctx, cache);
        att.backward(pb.d_ctx, pb.q, pb.keys, pb.h, kLengths, cache, d_q, d_keys, d_h);
        att.precompute_backward(pb.h, d_keys, d_h);
        attn::naive::attention_backward(att, pb.q, pb.h, kLengths, t, pb.d_ctx, d_q_ref, d_h_ref,
                                        ref);
        expect_grads_match(d_q, d_q_ref, d_h, d_h_ref, att.grad, ref,
                           describe(att.cfg) + " t=" + std::to_string(t));
    }
}

// All T steps at once (dot/general): backward_steps against the oracle's per-step gradients,
// summed over the steps for enc_out and the parameters.
void expect_steps_backward_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    const int T = 4;
    Problem pb(cfg, seed, {T, kB, cfg.query_size});
    Attention& att = pb.att;
    std::vector<AttentionStepCache> caches(T);
    std::vector<AttentionStepCache*> out;
    std::vector<const AttentionStepCache*> in;
    for (auto& c : caches) {
        out.push_back(&c);
        in.push_back(&c);
    }
    Tensor ctx({T, kB, pb.C}), d_q({T, kB, pb.H}), d_h({kB, kS, pb.C});
    Tensor d_keys = Tensor::like(pb.keys.keys);
    att.forward_steps(pb.q, pb.keys, pb.h, kLengths, ctx, out);
    att.backward_steps(pb.d_ctx, pb.q, pb.keys, pb.h, kLengths, in, d_q, d_keys, d_h);
    att.precompute_backward(pb.h, d_keys, d_h);

    Tensor d_q_ref({T, kB, pb.H}), d_h_ref({kB, kS, pb.C}), d_h_t({kB, kS, pb.C});
    AttentionParams ref = att.grad, ref_t = att.grad;
    ref.visit([](const std::string&, Tensor& g) { g.zero(); });
    const auto sum = grads_of(ref), step = grads_of(ref_t);
    for (int t = 0; t < T; ++t) {
        attn::naive::attention_backward(att, pb.q.select(t), pb.h, kLengths, t, pb.d_ctx.select(t),
                                        d_q_ref.select(t), d_h_t, ref_t);
        for (int64_t i = 0; i < d_h_t.numel(); ++i) d_h_ref[i] += d_h_t[i];
        for (size_t k = 0; k < sum.size(); ++k)
            for (int64_t i = 0; i < sum[k].second->numel(); ++i)
                (*sum[k].second)[i] += (*step[k].second)[i];
    }
    expect_grads_match(d_q, d_q_ref, d_h, d_h_ref, att.grad, ref,
                       describe(att.cfg) + " (all steps)");
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

}  // namespace test_attention_oracle
