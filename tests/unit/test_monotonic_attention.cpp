// Monotonic attention (nazar/attention/monotonic.h) at the step level: the batched path against
// the double-precision oracle (attn::naive with MonotonicStep: the scores from the parameters and
// the expected alignment from naive_monotonic.h), forward and backward with d α_{t−1}, soft with
// and without the pre-sigmoid noise, and hard; with padded, length-1 and empty sentences, for
// every score kind. Then what the mechanism promises: α only moves forward in hard decoding, the
// soft alignment is the hard one where p is 0 or 1, Σ α ≤ Σ α_{t−1}, and the configuration
// refuses what it cannot do.
#include "nazar/attention/attention.h"
#include "nazar/attention/monotonic.h"
#include "nazar/attention/naive.h"
#include "tests/common/monotonic_steps.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace test_monotonic_attention {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
using namespace nazar::test::monotonic;

AttentionConfig monotonic_config(ScoreKind score, ScaleMode scale = ScaleMode::none) {
    AttentionConfig c;
    c.score = score;
    c.scale = scale;
    c.query_size = 12;
    c.context_size = score == ScoreKind::dot ? 12 : 10;
    c.attention_size = 9;
    c.monotonic = true;
    c.monotonic_bias_init = -0.4f;
    return c;
}

// A = 9 and H = 12 run the kernels' vector tails; A = 40, H = C = 40 whole AVX-512 and AVX2
// vectors as well.
std::vector<AttentionConfig> all_configs() {
    AttentionConfig wide = monotonic_config(ScoreKind::additive);
    wide.attention_size = 40;
    AttentionConfig wide_dot = monotonic_config(ScoreKind::dot);
    wide_dot.query_size = wide_dot.context_size = 40;
    return {monotonic_config(ScoreKind::additive),
            monotonic_config(ScoreKind::concat),
            monotonic_config(ScoreKind::general, ScaleMode::learned),
            monotonic_config(ScoreKind::dot, ScaleMode::inv_sqrt),
            wide,
            wide_dot};
}

}  // namespace

TEST(MonotonicAttention, ForwardMatchesOracle) {
    for (const AttentionConfig& cfg : all_configs())
        for (const bool noisy : {false, true}) {
            Problem pb(cfg, 7);
            AttentionStepCache cache = step_cache(pb, noisy, false);
            Tensor ctx({kB, cfg.context_size}), dense({kB, kS});
            Tensor ctx_ref({kB, cfg.context_size}), dense_ref({kB, kS});
            pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 3, ctx, cache);
            dense_weights(cache, dense);
            attn::naive::MonotonicStep mono;
            mono.previous = pb.prev;
            if (noisy) mono.noise = pb.noise;
            attn::naive::attention_forward(pb.att, pb.q, pb.h, kLengths, 3, dense_ref, ctx_ref,
                                           &mono);
            const std::string what = describe(cfg) + (noisy ? " noisy" : "");
            EXPECT_TRUE(close_abs(dense, dense_ref, 2e-6)) << what;
            EXPECT_TRUE(close_abs(ctx, ctx_ref, 5e-6)) << what;
            for (int b = 0; b < kB; ++b) {  // Σ α ≤ Σ α_{t−1}: the rest runs off the end
                double sum = 0, sum_prev = 0;
                for (int j = 0; j < kS; ++j) {
                    sum += dense.at(b, j);
                    sum_prev += pb.prev.at(b, j);
                    if (j >= kLengths[b]) {
                        EXPECT_EQ(dense.at(b, j), 0.0f) << what;
                    }
                }
                EXPECT_LE(sum, sum_prev + 1e-6) << what << " row " << b;
            }
        }
}

TEST(MonotonicAttention, BackwardMatchesOracle) {
    for (const AttentionConfig& cfg : all_configs())
        for (const bool noisy : {false, true}) {
            Problem pb(cfg, 11);
            const std::string what = describe(cfg) + (noisy ? " noisy" : "");
            EXPECT_GT(expect_backward_matches_oracle(pb, noisy, what), 0) << what;
            EXPECT_NE(pb.att.grad.r[0], 0.0f) << what << ": the bias got no gradient";
        }
}

// Hard decoding: one-hot at the first position at or after α_{t−1}'s with e + r >= 0, as the
// oracle's hard_stop chooses; zeros once the previous step ran off the end.
TEST(MonotonicAttention, HardStepMatchesOracle) {
    const std::vector<int> from{4, 0, -1, 12, -1};  // row 2 is empty, row 4 ran off the end
    for (const AttentionConfig& cfg : all_configs())
        for (const float r : {-2.0f, 0.0f, 1.5f}) {
            Problem pb(cfg, 5);
            pb.att.params.r[0] = r;
            pb.prev = one_hot_previous(from);
            AttentionStepCache cache = step_cache(pb, false, true);
            Tensor ctx({kB, cfg.context_size}), dense({kB, kS});
            Tensor ctx_ref({kB, cfg.context_size}), dense_ref({kB, kS});
            pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 2, ctx, cache);
            dense_weights(cache, dense);
            attn::naive::MonotonicStep mono;
            mono.previous = pb.prev;
            mono.hard = true;
            attn::naive::attention_forward(pb.att, pb.q, pb.h, kLengths, 2, dense_ref, ctx_ref,
                                           &mono);
            EXPECT_TRUE(close_abs(dense, dense_ref, 0.0)) << describe(cfg) << " r=" << r;
            EXPECT_TRUE(close_abs(ctx, ctx_ref, 1e-6)) << describe(cfg) << " r=" << r;
            for (int b = 0; b < kB; ++b) {
                int ones = 0, at = -1;
                for (int j = 0; j < kS; ++j)
                    if (dense.at(b, j) != 0.0f) {
                        EXPECT_EQ(dense.at(b, j), 1.0f);
                        ++ones;
                        at = j;
                    }
                EXPECT_LE(ones, 1);
                if (at >= 0) {
                    EXPECT_GE(at, from[b]) << "moved back";
                }
                if (from[b] < 0) {
                    EXPECT_EQ(ones, 0) << "attended after running off the end";
                }
            }
        }
}

// Where every p is 0 or 1 the expected alignment is the hard choice: a saturated bias.
TEST(MonotonicAttention, SoftEqualsHardWhereSelectionIsCertain) {
    const std::vector<int> from{4, 0, -1, 12, 6};
    for (const float r : {-60.0f, 60.0f}) {
        Problem pb(monotonic_config(ScoreKind::additive), 3);
        pb.att.params.r[0] = r;
        pb.prev = one_hot_previous(from);
        Tensor soft({kB, kS}), hard({kB, kS}), c_soft({kB, 10}), c_hard({kB, 10});
        AttentionStepCache s = step_cache(pb, false, false), h = step_cache(pb, false, true);
        pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 1, c_soft, s);
        pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 1, c_hard, h);
        dense_weights(s, soft);
        dense_weights(h, hard);
        EXPECT_TRUE(close_abs(soft, hard, 1e-6)) << "r=" << r;
        EXPECT_TRUE(close_abs(c_soft, c_hard, 1e-5)) << "r=" << r;
    }
}

TEST(MonotonicAttention, StartAndAdvanceCarryTheWeights) {
    Tensor prev;
    attn::start_previous(3, 4, prev);
    for (int b = 0; b < 3; ++b)
        for (int j = 0; j < 4; ++j) EXPECT_EQ(prev.at(b, j), j == 0 ? 1.0f : 0.0f);
    AttentionStepCache step;
    step.weights = Tensor({3, 4});
    step.weights.at(1, 2) = 0.25f;
    step.start.assign(3, 0);
    step.count.assign(3, 4);
    step.previous = Tensor::clone(prev);
    Tensor next;
    attn::advance_previous(step, next);
    EXPECT_TRUE(close_abs(next, step.weights, 0.0));
}

TEST(MonotonicAttention, ConfigurationRefusesWhatItCannotDo) {
    AttentionConfig c = monotonic_config(ScoreKind::additive);
    EXPECT_NO_THROW(validate(c));
    AttentionConfig local = c;
    local.local = LocalMode::monotonic;
    EXPECT_THROW(validate(local), UsageError);
    AttentionConfig cov = c;
    cov.coverage = true;
    EXPECT_THROW(validate(cov), UsageError);
    AttentionConfig noise = c;
    noise.monotonic_noise = -1.0f;
    EXPECT_THROW(validate(noise), UsageError);
    AttentionConfig named;
    named.query_size = named.context_size = named.attention_size = 4;
    apply_attention_name("monotonic", named);
    EXPECT_TRUE(named.monotonic);
    EXPECT_NE(describe(named).find("monotonic"), std::string::npos);
    Rng rng(1);
    const Attention att(c, rng);
    EXPECT_FALSE(att.can_batch_steps());
    EXPECT_EQ(att.params.r[0], -0.4f);  // the configured initial bias
    AttentionConfig plain = c;
    plain.monotonic = false;
    EXPECT_EQ(attention_cost(c, 10).params, attention_cost(plain, 10).params + 1);
}

}  // namespace test_monotonic_attention
