// MoChA (nazar/attention/monotonic.h mocha_row, AttentionConfig::mocha_chunk) at the row and the
// step level: the float rows against the double-precision oracle of the chunkwise weights
// (naive_mocha.h), then Attention's forward and backward against the whole-step oracle
// (attn::naive with MonotonicStep: scores and chunk energies from the parameters, α from
// naive_monotonic.h, β from naive_mocha.h), soft with and without noise, and hard; with padded,
// length-1 and empty sentences, chunks of 1 to wider than the source. Then what the mechanism
// promises: w = 1 is monotonic attention, the carried state is α (not β), hard β is the window's
// softmax at the stop, and the configuration refuses what it cannot do.
#include "nazar/attention/attention.h"
#include "nazar/attention/monotonic.h"
#include "nazar/attention/naive.h"
#include "nazar/attention/naive_mocha.h"
#include "tests/common/monotonic_steps.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace test_mocha_attention {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {
using namespace nazar::test::monotonic;

AttentionConfig mocha_config(int w, ScoreKind score = ScoreKind::additive, int A = 9) {
    AttentionConfig c;
    c.score = score;
    c.query_size = 12;
    c.context_size = 10;
    c.attention_size = A;
    c.monotonic = true;
    c.monotonic_bias_init = -0.4f;
    c.mocha_chunk = w;
    return c;
}

// A = 9 runs the kernels' vector tails, A = 40 whole AVX-512 and AVX2 vectors; chunks of 1, 2, 4
// and 25 (wider than every source: each window starts at 0).
std::vector<AttentionConfig> all_configs() {
    return {mocha_config(1), mocha_config(2), mocha_config(4, ScoreKind::concat),
            mocha_config(3, ScoreKind::additive, 40), mocha_config(25)};
}

std::vector<double> to_double(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}
}  // namespace

// The float rows against the oracle: random α (a sub-distribution) and u of either sign, up to
// ±80 (each window's own maximum keeps exp in range), every chunk from 1 to wider than the row.
TEST(Mocha, RowsMatchTheOracle) {
    Rng rng(3);
    for (const int n : {1, 2, 7, 19})
        for (const int w : {1, 2, 3, 5, 30})
            for (const float spread : {1.0f, 80.0f}) {
                std::vector<float> alpha(n), u(n), d_beta(n), beta(n), d_alpha(n), d_u(n);
                float left = 1.0f;
                for (int j = 0; j < n; ++j) {
                    alpha[j] = left * rng.uniform(0.0f, 0.7f);
                    left -= alpha[j];
                    u[j] = rng.uniform(-spread, spread);
                    d_beta[j] = rng.uniform(-1.0f, 1.0f);
                }
                attn::mocha_row(alpha.data(), u.data(), n, w, beta.data());
                attn::mocha_row_backward(alpha.data(), u.data(), d_beta.data(), n, w,
                                         d_alpha.data(), d_u.data());
                const auto a = to_double(alpha), uu = to_double(u), db = to_double(d_beta);
                const std::vector<double> ref = attn::naive::chunkwise_weights(a, uu, w);
                std::vector<double> da_ref(n), du_ref(n);
                attn::naive::chunkwise_weights_backward(a, uu, w, db, da_ref, du_ref);
                double sum = 0, sum_ref = 0;
                for (int j = 0; j < n; ++j) {
                    const std::string at = "n=" + std::to_string(n) + " w=" + std::to_string(w) +
                                           " spread=" + std::to_string(spread) +
                                           " j=" + std::to_string(j);
                    EXPECT_NEAR(beta[j], ref[j], 1e-6) << at;
                    EXPECT_NEAR(d_alpha[j], da_ref[j], 1e-5) << at;
                    EXPECT_NEAR(d_u[j], du_ref[j], 1e-5) << at;
                    EXPECT_TRUE(std::isfinite(beta[j]) && std::isfinite(d_u[j])) << at;
                    sum += beta[j];
                    sum_ref += alpha[j];
                }
                EXPECT_NEAR(sum, sum_ref, 1e-6) << "Σ β = Σ α";
            }
}

TEST(Mocha, ForwardMatchesOracle) {
    for (const AttentionConfig& cfg : all_configs())
        for (const bool noisy : {false, true}) {
            Problem pb(cfg, 7);
            AttentionStepCache cache = step_cache(pb, noisy, false);
            Tensor ctx({kB, cfg.context_size}), dense({kB, kS}), alpha({kB, kS});
            Tensor ctx_ref({kB, cfg.context_size}), dense_ref({kB, kS}), alpha_ref({kB, kS});
            pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 3, ctx, cache);
            dense_weights(cache, dense);
            attn::advance_previous(cache, alpha);
            attn::naive::MonotonicStep mono;
            mono.previous = pb.prev;
            if (noisy) mono.noise = pb.noise;
            mono.alpha = alpha_ref;
            attn::naive::attention_forward(pb.att, pb.q, pb.h, kLengths, 3, dense_ref, ctx_ref,
                                           &mono);
            const std::string what = describe(cfg) + (noisy ? " noisy" : "");
            EXPECT_TRUE(close_abs(dense, dense_ref, 2e-6)) << what << " β";
            EXPECT_TRUE(close_abs(alpha, alpha_ref, 2e-6)) << what << " α (carried)";
            EXPECT_TRUE(close_abs(ctx, ctx_ref, 5e-6)) << what;
            for (int b = 0; b < kB; ++b) {
                double sum_beta = 0, sum_alpha = 0;
                for (int j = 0; j < kS; ++j) {
                    sum_beta += dense.at(b, j);
                    sum_alpha += alpha.at(b, j);
                    if (j >= kLengths[b]) {
                        EXPECT_EQ(dense.at(b, j), 0.0f) << what;
                    }
                }
                EXPECT_NEAR(sum_beta, sum_alpha, 1e-6) << what << " row " << b;
            }
        }
}

TEST(Mocha, BackwardMatchesOracle) {
    for (const AttentionConfig& cfg : all_configs())
        for (const bool noisy : {false, true}) {
            Problem pb(cfg, 11);
            const std::string what = describe(cfg) + (noisy ? " noisy" : "");
            EXPECT_EQ(expect_backward_matches_oracle(pb, noisy, what), 5)
                << what << ": W_q, W_k, v_a, r and v_c";
            const bool chunked = cfg.mocha_chunk > 1;  // w = 1: β = α, u has no gradient
            double v_c_norm = 0;
            for (int64_t i = 0; i < pb.att.grad.v_c.numel(); ++i)
                v_c_norm += std::fabs(pb.att.grad.v_c[i]);
            EXPECT_EQ(v_c_norm > 0, chunked) << what << ": d v_c";
        }
}

// Hard decoding: α one-hot at the monotonic stop (as plain monotonic attention chooses it), β the
// softmax of u over the w positions ending there, zeros once the reader ran off the end.
TEST(Mocha, HardStepIsTheWindowSoftmaxAtTheStop) {
    const std::vector<int> from{4, 0, -1, 12, -1};  // row 2 is empty, row 4 ran off the end
    for (const AttentionConfig& cfg : all_configs())
        for (const float r : {-2.0f, 0.0f, 1.5f}) {
            Problem pb(cfg, 5);
            pb.att.params.r[0] = r;
            pb.prev = one_hot_previous(from);
            AttentionStepCache cache = step_cache(pb, false, true);
            Tensor ctx({kB, cfg.context_size}), dense({kB, kS}), alpha({kB, kS});
            Tensor ctx_ref({kB, cfg.context_size}), dense_ref({kB, kS}), alpha_ref({kB, kS});
            pb.att.forward(pb.q, pb.keys, pb.h, kLengths, 2, ctx, cache);
            dense_weights(cache, dense);
            attn::advance_previous(cache, alpha);
            attn::naive::MonotonicStep mono;
            mono.previous = pb.prev;
            mono.hard = true;
            mono.alpha = alpha_ref;
            attn::naive::attention_forward(pb.att, pb.q, pb.h, kLengths, 2, dense_ref, ctx_ref,
                                           &mono);
            const std::string what = describe(cfg) + " r=" + std::to_string(r);
            EXPECT_TRUE(close_abs(alpha, alpha_ref, 0.0)) << what;
            EXPECT_TRUE(close_abs(dense, dense_ref, 1e-6)) << what;
            EXPECT_TRUE(close_abs(ctx, ctx_ref, 2e-6)) << what;
            for (int b = 0; b < kB; ++b) {
                int stop = -1;
                for (int j = 0; j < kS; ++j)
                    if (alpha.at(b, j) == 1.0f) stop = j;
                double sum = 0;
                for (int j = 0; j < kS; ++j) {
                    const bool in = stop >= 0 && j <= stop && j > stop - cfg.mocha_chunk;
                    if (!in) {
                        EXPECT_EQ(dense.at(b, j), 0.0f) << what << " row " << b << " j " << j;
                    }
                    sum += dense.at(b, j);
                }
                EXPECT_NEAR(sum, stop >= 0 ? 1.0 : 0.0, 1e-6) << what << " row " << b;
                if (from[b] < 0) {
                    EXPECT_EQ(stop, -1) << "attended after running off the end";
                }
            }
        }
}

// w = 1: β = α, so the step is monotonic attention's to the bit (v_c is not read).
TEST(Mocha, WindowOfOneIsMonotonicAttention) {
    for (const bool hard : {false, true}) {
        Problem mocha(mocha_config(1), 13);
        AttentionConfig plain_cfg = mocha_config(0);
        Rng rng(13);
        Attention plain(plain_cfg, rng);
        plain.params.visit([&](const std::string& name, Tensor& t) {
            mocha.att.params.visit([&](const std::string& n, Tensor& m) {
                if (n == name && t.numel() > 0) t.copy_from(m);
            });
        });
        AttentionKeys keys;
        plain.precompute(mocha.h, keys);
        AttentionStepCache a = step_cache(mocha, false, hard), b = step_cache(mocha, false, hard);
        Tensor ca({kB, 10}), cb({kB, 10}), wa({kB, kS}), wb({kB, kS});
        mocha.att.forward(mocha.q, mocha.keys, mocha.h, kLengths, 1, ca, a);
        plain.forward(mocha.q, keys, mocha.h, kLengths, 1, cb, b);
        dense_weights(a, wa);
        dense_weights(b, wb);
        EXPECT_TRUE(close_abs(wa, wb, 0.0)) << "hard=" << hard;
        EXPECT_TRUE(close_abs(ca, cb, 0.0)) << "hard=" << hard;
    }
}

TEST(Mocha, ConfigurationRefusesWhatItCannotDo) {
    AttentionConfig c = mocha_config(3);
    EXPECT_NO_THROW(validate(c));
    AttentionConfig not_monotonic = c;
    not_monotonic.monotonic = false;
    EXPECT_THROW(validate(not_monotonic), UsageError);
    AttentionConfig general = c;
    general.score = ScoreKind::general;
    EXPECT_THROW(validate(general), UsageError);
    for (const int w : {-1, 257}) {
        AttentionConfig bad = c;
        bad.mocha_chunk = w;
        EXPECT_THROW(validate(bad), UsageError) << w;
    }
    EXPECT_NE(describe(c).find("MoChA w=3"), std::string::npos) << describe(c);
    Rng rng(1);
    const Attention att(c, rng);
    EXPECT_EQ(att.params.v_c.shape(), (Shape{1, 9}));
    AttentionConfig plain = c;
    plain.mocha_chunk = 0;
    EXPECT_EQ(attention_cost(c, 10).params, attention_cost(plain, 10).params + 9);
    // a model without MoChA draws its parameters as before: v_c is drawn last
    Rng r1(4), r2(4);
    const Attention with(c, r1), without(plain, r2);
    EXPECT_TRUE(close_abs(with.params.v_a, without.params.v_a, 0.0));
    EXPECT_TRUE(close_abs(with.params.W_k, without.params.W_k, 0.0));
}

}  // namespace test_mocha_attention
