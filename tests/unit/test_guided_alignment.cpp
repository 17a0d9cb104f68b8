// Guided alignment (nazar/models/guided_alignment.h) against its oracle
// (nazar/models/naive_guided_alignment.h, double precision from docs/spec.md §7 "Guided
// alignment"):
//  * the loss alone: value and d α of random windowed weight rows equal the oracle's, and d α
//    equals central differences of the production loss itself (perturbing α);
//  * through the attention: T = 5 steps of each score (additive, dot, general, concat) and
//    locality (local-m, local-p) forward with the loss, the backward through AttentionTerms and
//    Attention::backward (the one extra-gradient hook), every gradient (query, encoder
//    outputs, parameters) against central differences of the oracle attention
//    (attention/naive.h) plus the oracle loss, in double. Tolerance 2e-3 relative to
//    max(1, |ref|), as test_coverage_oracle.cpp.
#include "nazar/attention/attention.h"
#include "nazar/attention/naive.h"
#include "nazar/core/params.h"
#include "nazar/models/attention_terms.h"
#include "nazar/models/guided_alignment.h"
#include "nazar/models/naive_guided_alignment.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace test_guided_alignment {

using namespace nazar;
using nazar::test::random_tensor;

namespace {
constexpr int kT = 5, kB = 3, kS = 9;
const std::vector<int> kLengths{kS, 4, 7};

// Links of each row: many-to-one, one-to-many, unaligned positions, and links far from the
// diagonal (outside a local window of D = 1 at some steps).
std::vector<std::vector<AlignedPair>> sample_links() {
    return {{{0, 0}, {1, 0}, {2, 1}, {8, 2}, {3, 3}, {4, 3}, {5, 3}},  // t = 4: none
            {{0, 0}, {3, 1}, {2, 2}, {1, 4}},
            {{6, 0}, {1, 1}, {1, 2}, {5, 3}, {2, 4}, {6, 4}}};
}
std::vector<std::span<const AlignedPair>> spans_of(const std::vector<CorpusAlignments>& holder) {
    std::vector<std::span<const AlignedPair>> rows;
    for (const auto& a : holder) rows.push_back(a.links(0));
    return rows;
}
std::vector<CorpusAlignments> sorted(const std::vector<std::vector<AlignedPair>>& links) {
    std::vector<CorpusAlignments> out(links.size());
    for (std::size_t b = 0; b < links.size(); ++b) out[b].add(links[b]);
    return out;
}

// Random windowed weight rows: row (t, b) has its window [start, start + count) with softmax
// weights, zeros elsewhere (columns >= count).
std::vector<DecoderStepCache> random_steps(Rng& rng, int W) {
    std::vector<DecoderStepCache> steps(kT);
    for (int t = 0; t < kT; ++t) {
        AttentionStepCache& c = steps[t].attention;
        c.weights.resize({kB, W});
        for (int b = 0; b < kB; ++b) {
            const int n = std::min(W, kLengths[b]);
            const int start = W == kS ? 0 : std::min(t, kLengths[b] - n);
            c.start.push_back(start);
            c.count.push_back(n);
            double z = 0;
            std::vector<double> e(n);
            for (int j = 0; j < n; ++j) z += e[j] = std::exp(rng.uniform(-2.0f, 2.0f));
            for (int j = 0; j < n; ++j) c.weights.at(b, j) = static_cast<float>(e[j] / z);
        }
    }
    return steps;
}

std::vector<double> dense(const std::vector<DecoderStepCache>& steps) {
    std::vector<double> a(kT * kB * kS, 0.0);
    for (int t = 0; t < kT; ++t)
        for (int b = 0; b < kB; ++b) {
            const AttentionStepCache& c = steps[t].attention;
            for (int j = 0; j < c.count[b]; ++j)
                a[(t * kB + b) * kS + c.start[b] + j] = c.weights.at(b, j);
        }
    return a;
}

void check_loss_alone(int W) {
    Rng rng(7);
    std::vector<DecoderStepCache> steps = random_steps(rng, W);
    const auto links = sample_links();
    const auto holder = sorted(links);
    const auto rows = spans_of(holder);
    const float lambda = 0.7f, scale = 0.5f;
    Tensor d_alpha({kT, kB, kS});
    const GuidedAlignmentStats st =
        guided_alignment_loss(steps, rows, kT, kS, lambda, scale, d_alpha);
    std::vector<double> ref_d;
    const double ref =
        naive::guided_alignment_loss(dense(steps), kT, kB, kS, links, lambda, &ref_d);
    EXPECT_NEAR(st.loss, ref, 1e-5 * std::abs(ref));
    EXPECT_EQ(st.positions, 4 + 4 + 5);
    for (int k = 0; k < kT * kB * kS; ++k)
        EXPECT_NEAR(d_alpha[k], scale * ref_d[k], 1e-5 * std::max(1.0, std::abs(ref_d[k]))) << k;
    // central differences of the production loss in α (window entries only: α outside is 0),
    // steps of 1% of α (the loss's curvature is 1/α²)
    for (int t = 0; t < kT; ++t)
        for (int b = 0; b < kB; ++b) {
            AttentionStepCache& c = steps[t].attention;
            for (int j = 0; j < c.count[b]; ++j) {
                const float x = c.weights.at(b, j), eps = 1e-2f * x;
                c.weights.at(b, j) = x + eps;
                const double hi = c.weights.at(b, j);
                const double up = guided_alignment_loss(steps, rows, kT, kS, lambda, 1, {}).loss;
                c.weights.at(b, j) = x - eps;
                const double lo = c.weights.at(b, j);
                const double down = guided_alignment_loss(steps, rows, kT, kS, lambda, 1, {}).loss;
                c.weights.at(b, j) = x;
                const double num = (up - down) / (hi - lo);
                const float ana = d_alpha.at(t, b, c.start[b] + j) / scale;
                EXPECT_NEAR(ana, num, 1e-3 * std::max(1.0, std::abs(num))) << t << " " << b;
            }
        }
    // a loss of 0 weight is 0 and adds no gradient; empty links give no positions
    Tensor none({kT, kB, kS});
    EXPECT_EQ(guided_alignment_loss(steps, rows, kT, kS, 0.0f, 1, none).loss, 0.0);
    for (int64_t k = 0; k < none.numel(); ++k) EXPECT_EQ(none[k], 0.0f);
    const std::vector<std::span<const AlignedPair>> empty(kB);
    EXPECT_EQ(guided_alignment_loss(steps, empty, kT, kS, 1, 1, none).positions, 0);
}

TEST(GuidedAlignment, LossAloneGlobal) {
    check_loss_alone(kS);
}
TEST(GuidedAlignment, LossAloneWindow3) {
    check_loss_alone(3);  // links outside the windows are skipped
}

TEST(GuidedAlignment, WeightDecay) {
    EXPECT_DOUBLE_EQ(guided_alignment_weight_at(2.0, 1.0, 10, 12345), 2.0);
    EXPECT_DOUBLE_EQ(guided_alignment_weight_at(2.0, 0.5, 10, 9), 2.0);
    EXPECT_DOUBLE_EQ(guided_alignment_weight_at(2.0, 0.5, 10, 10), 1.0);
    EXPECT_DOUBLE_EQ(guided_alignment_weight_at(2.0, 0.5, 10, 35), 0.25);
}

// ---- through the attention ----

double oracle_loss(const Attention& att, const Tensor& q, const Tensor& h, const Tensor& R,
                   const std::vector<std::vector<AlignedPair>>& links, double lambda) {
    const int C = att.cfg.context_size;
    std::vector<double> alpha(kT * kB * kS);
    Tensor w({kB, kS}), ctx({kB, C});
    double loss = 0;
    for (int t = 0; t < kT; ++t) {
        attn::naive::attention_forward(att, q.select(t), h, kLengths, t, w, ctx);
        for (int k = 0; k < kB * kS; ++k) alpha[t * kB * kS + k] = w[k];
        for (int k = 0; k < kB * C; ++k) loss += static_cast<double>(ctx[k]) * R.select(t)[k];
    }
    return loss + naive::guided_alignment_loss(alpha, kT, kB, kS, links, lambda);
}

void check_attention(AttentionConfig cfg, uint64_t seed) {
    Rng rng(seed);
    Attention att(cfg, rng);
    if (att.params.v_a.numel() > 0) {
        const float v = 6.0f / std::sqrt(static_cast<float>(cfg.attention_size));
        rng.fill_uniform(att.params.v_a, -v, v);
    }
    const int H = cfg.query_size, C = cfg.context_size;
    Tensor q = random_tensor(rng, {kT, kB, H}, -1, 1), h = random_tensor(rng, {kB, kS, C}, -1, 1);
    const Tensor R = random_tensor(rng, {kT, kB, C});
    const auto links = sample_links();
    const auto holder = sorted(links);
    const auto rows = spans_of(holder);
    const double lambda = 0.8;
    AttentionKeys keys;
    att.precompute(h, keys);
    std::vector<DecoderStepCache> steps(kT);
    Tensor ctx({kB, C});
    std::vector<int> targets(kT * kB, 5);
    for (int t = 0; t < kT; ++t) {
        AttentionTerms::begin_step(att, steps, t, kB, kS);
        att.forward(q.select(t), keys, h, kLengths, t, ctx, steps[t].attention);
    }
    AttentionTerms terms;
    terms.loss_forward(att, steps, targets, 0, kB, kS, 0.0f, 1.0f);
    const GuidedAlignmentStats st = guided_alignment_loss(
        steps, rows, kT, kS, static_cast<float>(lambda), 1.0f, terms.direct_alpha());
    EXPECT_GT(st.positions, 0);
    ParamList plist;
    collect_params(att.params, att.grad, "attention.", plist);
    zero_grads(plist);
    Tensor d_q({kT, kB, H}), d_h({kB, kS, C}), d_keys = Tensor::like(keys.keys);
    for (int t = kT - 1; t >= 0; --t) {
        terms.before_step_backward(att, t);
        att.backward(R.select(t), q.select(t), keys, h, kLengths, steps[t].attention, d_q.select(t),
                     d_keys, d_h);
        terms.after_step_backward(att, t);
    }
    att.precompute_backward(h, d_keys, d_h);
    struct Target {
        std::string name;
        TensorView value, grad;
    };
    std::vector<Target> tg{{"query", q, d_q}, {"enc_out", h, d_h}};
    for (const auto& p : plist) tg.push_back({p.name, *p.value, *p.grad});
    const float eps = 1e-3f;
    for (const Target& x : tg) {
        const int64_t n = x.value.numel(), stride = std::max<int64_t>(1, n / 12);
        for (int64_t k = 0; k < n; k += stride) {
            const float v = x.value[k];
            x.value[k] = v + eps;
            const float hi = x.value[k];
            const double up = oracle_loss(att, q, h, R, links, lambda);
            x.value[k] = v - eps;
            const float lo = x.value[k];
            const double down = oracle_loss(att, q, h, R, links, lambda);
            x.value[k] = v;
            const double num = (up - down) / (static_cast<double>(hi) - lo);
            EXPECT_NEAR(x.grad[k], num, 2e-3 * std::max(1.0, std::abs(num)))
                << x.name << "[" << k << "] " << describe(cfg);
        }
    }
}

AttentionConfig cfg_of(ScoreKind k, LocalMode local = LocalMode::global) {
    AttentionConfig c{.score = k,
                      .local = local,
                      .window = 2,
                      .query_size = 13,
                      .context_size = 13,
                      .attention_size = 19,
                      .position_size = 6};
    return c;
}
}  // namespace

TEST(GuidedAlignmentOracle, Additive) {
    check_attention(cfg_of(ScoreKind::additive), 91);
}
TEST(GuidedAlignmentOracle, Dot) {
    check_attention(cfg_of(ScoreKind::dot), 92);
}
TEST(GuidedAlignmentOracle, General) {
    check_attention(cfg_of(ScoreKind::general), 93);
}
TEST(GuidedAlignmentOracle, Concat) {
    check_attention(cfg_of(ScoreKind::concat), 94);
}
TEST(GuidedAlignmentOracle, LocalMGeneral) {
    check_attention(cfg_of(ScoreKind::general, LocalMode::monotonic), 95);
}
TEST(GuidedAlignmentOracle, LocalPAdditive) {
    check_attention(cfg_of(ScoreKind::additive, LocalMode::predictive), 96);
}

}  // namespace test_guided_alignment
