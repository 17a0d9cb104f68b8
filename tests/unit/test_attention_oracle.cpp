// Composition check (STYLE.md, Tests §3): the batched, precomputed-keys, fused and windowed
// implementation against attn::naive (double, one score at a time straight from SPEC §3-5),
// for every variant, with padded and empty sentences and decoder steps beyond a sentence.
#include "nazar/attention/attention.h"
#include "nazar/attention/naive.h"
#include "tests/common/test_util.h"

#include <vector>

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
void expect_matches_oracle(AttentionConfig cfg, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
    const int B = 5, S = 23, H = cfg.query_size, C = cfg.context_size;
    const std::vector<int> len{S, 1, 0, 17, 9};
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
