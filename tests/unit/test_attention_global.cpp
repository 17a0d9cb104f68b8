// Global attention: docs/spec.md §10 worked examples through the real code path, hand-checked
// scores for every score kind, docs/spec.md §11's mistakes (padding, dot H != C), config parsing
// and the docs/spec.md §9 cost model.
#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/attention.h"
#include "nazar/attention/luong.h"
#include "nazar/core/blas.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_attention_global {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

namespace {

// Dot attention with q = (1, 0) and h_i = (e_i, y_i) scores exactly e_i: the weights of
// docs/spec.md §10 come out of the real precompute -> forward path, and the context is Σ α_i h_i.
struct DotExample {
    Tensor weights, context;
};
DotExample run_dot_example(const std::vector<float>& scores, const std::vector<float>& ys) {
    Rng rng(1);
    const int S = static_cast<int>(scores.size());
    Attention att({.score = ScoreKind::dot, .query_size = 2, .context_size = 2}, rng);
    Tensor q = Tensor::from({1, 2}, std::vector<float>{1, 0});
    Tensor h({1, S, 2});
    for (int i = 0; i < S; ++i) {
        h.at(0, i, 0) = scores[i];
        h.at(0, i, 1) = ys[i];
    }
    AttentionKeys keys;
    att.precompute(h, keys);
    AttentionStepCache cache;
    Tensor ctx({1, 2});
    const std::vector<int> len{S};
    att.forward(q, keys, h, len, 0, ctx, cache);
    return {cache.weights, ctx};
}

}  // namespace

TEST(AttentionGlobal, SpecExample1Weights) {
    auto r = run_dot_example({0.5f, 2.1f, 0.3f}, {1, 2, 3});
    const float want[] = {0.1477f, 0.7314f, 0.1209f};  // docs/spec.md §10 (notes: 0.12/0.79/0.09)
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(r.weights[i], want[i], 5e-5) << i;
    // context = Σ α_i h_i; second component = Σ α_i y_i
    EXPECT_NEAR(r.context[1], 0.1477f * 1 + 0.7314f * 2 + 0.1209f * 3, 5e-4);
    EXPECT_NEAR(r.context[0], 0.1477f * 0.5f + 0.7314f * 2.1f + 0.1209f * 0.3f, 5e-4);
}

TEST(AttentionGlobal, SpecExample2Weights) {
    auto r = run_dot_example({1.2f, 3.5f, 0.8f, 2.1f, 0.5f}, {0, 0, 0, 0, 0});
    const float want[] = {0.0685f, 0.6831f, 0.0459f, 0.1685f,
                          0.0340f};  // the notes print 0.64 (docs/spec.md §10)
    float sum = 0;
    for (int i = 0; i < 5; ++i) {
        EXPECT_NEAR(r.weights[i], want[i], 5e-5) << i;
        sum += r.weights[i];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-6);
}

TEST(AttentionGlobal, GeneralScoreByHand) {
    Rng rng(2);
    // H = 2, C = 3, W_a = key.weight (H, C)
    Attention att({.score = ScoreKind::general, .query_size = 2, .context_size = 3}, rng);
    att.params.W_k = Tensor::from({2, 3}, std::vector<float>{1, 0, 1, 0, 2, 0});
    Tensor q = Tensor::from({1, 2}, std::vector<float>{0.5f, -1});
    Tensor h = Tensor::from({1, 2, 3}, std::vector<float>{1, 1, 1, 0, 0.5f, 2});
    // W_a h_0 = (2, 2), W_a h_1 = (2, 1);  e = (0.5·2 − 2, 0.5·2 − 1) = (−1, 0)
    AttentionKeys keys;
    att.precompute(h, keys);
    EXPECT_FLOAT_EQ(keys.keys.at(0, 0, 0), 2);
    EXPECT_FLOAT_EQ(keys.keys.at(0, 1, 1), 1);
    AttentionStepCache cache;
    Tensor ctx({1, 3});
    const std::vector<int> len{2};
    att.forward(q, keys, h, len, 0, ctx, cache);
    const float a0 = 1 / (1 + std::exp(1.0f));
    EXPECT_NEAR(cache.weights[0], a0, 1e-6);
    EXPECT_NEAR(cache.weights[1], 1 - a0, 1e-6);
    EXPECT_NEAR(ctx[2], a0 * 1 + (1 - a0) * 2, 1e-6);
}

TEST(AttentionGlobal, ScaledGeneralDividesBySqrtC) {
    Rng rng(3);
    AttentionConfig cfg{.score = ScoreKind::general, .query_size = 3, .context_size = 4};
    Attention plain(cfg, rng);
    cfg.scale = ScaleMode::inv_sqrt;
    Attention scaled(cfg, rng);
    scaled.params = plain.params;
    Tensor q = random_tensor(rng, {1, 3}), h = random_tensor(rng, {1, 4, 4});
    const std::vector<int> len{4};
    AttentionKeys k1, k2;
    plain.precompute(h, k1);
    scaled.precompute(h, k2);
    AttentionStepCache c1, c2;
    Tensor x1({1, 4}), x2({1, 4});
    plain.forward(q, k1, h, len, 0, x1, c1);
    scaled.forward(q, k2, h, len, 0, x2, c2);
    // same raw scores, weights = softmax(r / 2) for C = 4
    std::vector<float> r(c1.scores.data(), c1.scores.data() + 4), e(4), a(4);
    for (int i = 0; i < 4; ++i) e[i] = r[i] / 2;
    float mx = *std::max_element(e.begin(), e.end()), sum = 0;
    for (int i = 0; i < 4; ++i) sum += (a[i] = std::exp(e[i] - mx));
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(c2.weights[i], a[i] / sum, 1e-6);
}

TEST(AttentionGlobal, AdditiveScoreByHand) {
    Rng rng(4);
    // H = 1, C = 1, A = 2: e_i = v · tanh(W_q q + W_k h_i)
    Attention att(
        {.score = ScoreKind::additive, .query_size = 1, .context_size = 1, .attention_size = 2},
        rng);
    att.params.W_q = Tensor::from({2, 1}, std::vector<float>{1, -1});
    att.params.W_k = Tensor::from({2, 1}, std::vector<float>{0.5f, 2});
    att.params.v_a = Tensor::from({1, 2}, std::vector<float>{1, 3});
    Tensor q = Tensor::from({1, 1}, std::vector<float>{0.3f});
    Tensor h = Tensor::from({1, 3, 1}, std::vector<float>{1, -1, 0.2f});
    AttentionKeys keys;
    att.precompute(h, keys);
    AttentionStepCache cache;
    Tensor ctx({1, 1});
    const std::vector<int> len{3};
    att.forward(q, keys, h, len, 0, ctx, cache);
    double e[3], sum = 0, c = 0;
    for (int i = 0; i < 3; ++i) {
        const double x = h[i];
        e[i] = std::tanh(0.3 + 0.5 * x) + 3 * std::tanh(-0.3 + 2 * x);
        sum += std::exp(e[i]);
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_NEAR(cache.weights[i], std::exp(e[i]) / sum, 2e-6) << i;
        c += std::exp(e[i]) / sum * h[i];
    }
    EXPECT_NEAR(ctx[0], c, 2e-6);
    EXPECT_EQ(cache.score_evals, 3);
}

TEST(AttentionGlobal, FusedAdditiveKernelMatchesNaive) {
    Rng rng(5);
    const int n = 7, A = 33;
    Tensor u = random_tensor(rng, {A}, -2, 2), k = random_tensor(rng, {n, A}, -2, 2),
           v = random_tensor(rng, {A});
    Tensor e({n}), e_ref({n}), tmp({A});
    attn::additive_scores(u.data(), k.data(), v.data(), n, A, tmp.data(), e.data());
    attn::naive::additive_scores(u.data(), k.data(), v.data(), n, A, e_ref.data());
    EXPECT_TRUE(close_abs(e, e_ref, 2e-5));
}

// The 16-lane AVX-512 kernels (chosen at run time) must give exactly the 8-lane AVX2 results,
// forward and backward: the same IEEE operations per lane and the same summation order. A
// covers 16-blocks + an 8-block + a scalar tail (283), whole 16-blocks (256), 8 lanes only, and
// a tail only. Inputs reach |x| up to 6 so both tanh branches (|x| < 0.625 and above) run. On a
// CPU without AVX-512 both runs would take the 8-lane path: skipped there.
TEST(AttentionGlobal, AdditiveKernelsAvx512MatchAvx2Bitwise) {
    const auto keep = test::keep_additive_avx512();
    if (!attn::set_additive_avx512(true))
        GTEST_SKIP() << "no AVX-512 on this CPU: only the 8-lane kernels exist to compare";
    Rng rng(15);
    for (const int A : {283, 256, 8, 5}) {
        const int n = 6;
        Tensor u = random_tensor(rng, {A}, -3, 3), k = random_tensor(rng, {n, A}, -3, 3);
        Tensor v = random_tensor(rng, {A}), d_e = random_tensor(rng, {n});
        d_e[2] = 0.0f;  // a position without gradient is skipped
        struct Out {
            Tensor e, d_u, d_k, d_v;
        };
        const auto run = [&](bool avx512) {
            attn::set_additive_avx512(avx512);
            Out o{Tensor({n}), Tensor({A}), Tensor({n, A}), Tensor({A})};
            Tensor tmp({A});
            attn::additive_scores(u.data(), k.data(), v.data(), n, A, tmp.data(), o.e.data());
            attn::additive_scores_backward(u.data(), k.data(), v.data(), d_e.data(), n, A,
                                           tmp.data(), o.d_u.data(), o.d_k.data(), o.d_v.data());
            return o;
        };
        const Out a = run(false), b = run(true);
        EXPECT_EQ(max_abs_diff(a.e, b.e), 0.0f) << "A = " << A;
        EXPECT_EQ(max_abs_diff(a.d_u, b.d_u), 0.0f) << "A = " << A;
        EXPECT_EQ(max_abs_diff(a.d_k, b.d_k), 0.0f) << "A = " << A;
        EXPECT_EQ(max_abs_diff(a.d_v, b.d_v), 0.0f) << "A = " << A;
    }
}

// Two scores of one hidden layer (MoChA's monotonic and chunk energies) with one tanh per
// element: each bit for bit what additive_scores gives alone, on every path this CPU has.
TEST(AttentionGlobal, TwoScoresSharingTheTanhEqualEachAlone) {
    const auto keep = test::keep_additive_avx512();
    Rng rng(16);
    for (const bool avx512 : {false, true}) {
        if (attn::set_additive_avx512(avx512) != avx512) continue;  // no AVX-512 here
        for (const int A : {283, 256, 128, 8, 5}) {
            const int n = 6;
            Tensor u = random_tensor(rng, {A}, -3, 3), k = random_tensor(rng, {n, A}, -3, 3);
            Tensor v = random_tensor(rng, {A}), w = random_tensor(rng, {A}), tmp({A});
            Tensor e({n}), f({n}), e1({n}), f1({n});
            attn::additive_scores2(u.data(), k.data(), v.data(), w.data(), n, A, tmp.data(),
                                   e.data(), f.data());
            attn::additive_scores(u.data(), k.data(), v.data(), n, A, tmp.data(), e1.data());
            attn::additive_scores(u.data(), k.data(), w.data(), n, A, tmp.data(), f1.data());
            EXPECT_EQ(max_abs_diff(e, e1), 0.0f) << "A = " << A << " avx512 " << avx512;
            EXPECT_EQ(max_abs_diff(f, f1), 0.0f) << "A = " << A << " avx512 " << avx512;
        }
    }
}

TEST(AttentionGlobal, KeysAreOneGemmOverAllPositions) {
    Rng rng(6);
    Attention att(
        {.score = ScoreKind::concat, .query_size = 3, .context_size = 5, .attention_size = 4}, rng);
    Tensor h = random_tensor(rng, {2, 3, 5});
    AttentionKeys keys;
    att.precompute(h, keys);
    ASSERT_EQ(keys.keys.shape(), Shape({2, 3, 4}));
    Tensor ref({6, 4});
    gemm_naive(false, true, 6, 4, 5, 1.0f, h.data(), 5, att.params.W_k.data(), 5, 0.0f, ref.data(),
               4);
    EXPECT_TRUE(close_abs(keys.keys.reshape({6, 4}), ref, 1e-5));
}

// Notes' mistake 1: a padded sentence must give the same context and weights as alone, and the
// padding positions weight exactly 0 — whatever garbage the padded encoder rows hold.
TEST(AttentionGlobal, PaddingGetsZeroWeightAndDoesNotChangeTheContext) {
    const ScoreKind kinds[] = {ScoreKind::additive, ScoreKind::dot, ScoreKind::general,
                               ScoreKind::concat};
    for (ScoreKind kind : kinds) {
        Rng rng(7);
        Attention att({.score = kind, .query_size = 4, .context_size = 4, .attention_size = 3},
                      rng);
        const int S = 6, len0 = 3;
        Tensor q = random_tensor(rng, {2, 4});
        Tensor h = random_tensor(rng, {2, S, 4});
        for (int i = len0; i < S; ++i)
            for (int c = 0; c < 4; ++c) h.at(0, i, c) = 50.0f;  // loud padding
        const std::vector<int> len{len0, S};
        AttentionKeys keys;
        att.precompute(h, keys);
        AttentionStepCache cache;
        Tensor ctx({2, 4});
        att.forward(q, keys, h, len, 0, ctx, cache);

        // the same sentence alone, unpadded
        Tensor q1({1, 4}), h1({1, len0, 4});
        q1.copy_from(q.slice(0, 1));
        for (int i = 0; i < len0; ++i)
            for (int c = 0; c < 4; ++c) h1.at(0, i, c) = h.at(0, i, c);
        const std::vector<int> len1{len0};
        AttentionKeys keys1;
        att.precompute(h1, keys1);
        AttentionStepCache cache1;
        Tensor ctx1({1, 4});
        att.forward(q1, keys1, h1, len1, 0, ctx1, cache1);

        for (int i = 0; i < len0; ++i)
            EXPECT_NEAR(cache.weights.at(0, i), cache1.weights.at(0, i), 1e-6) << to_string(kind);
        for (int i = len0; i < S; ++i)
            EXPECT_EQ(cache.weights.at(0, i), 0.0f) << to_string(kind);  // exactly
        EXPECT_TRUE(close_abs(ctx.slice(0, 1), ctx1, 1e-6)) << to_string(kind);
    }
}

// Notes' mistake 3: dot with H != C is a configuration error naming both sizes.
TEST(AttentionConfig, DotWithMismatchedSizesNamesBothAndSuggestsGeneral) {
    Rng rng(8);
    try {
        Attention att({.score = ScoreKind::dot, .query_size = 256, .context_size = 512}, rng);
        FAIL() << "expected a UsageError";
    } catch (const UsageError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("H=256"), std::string::npos) << msg;
        EXPECT_NE(msg.find("C=512"), std::string::npos) << msg;
        EXPECT_NE(msg.find("general"), std::string::npos) << msg;
    }
}

TEST(AttentionConfig, OtherConfigurationErrors) {
    Rng rng(9);
    EXPECT_THROW(Attention({.score = ScoreKind::additive, .query_size = 4, .context_size = 4}, rng),
                 UsageError);
    EXPECT_THROW(Attention({.score = ScoreKind::additive,
                            .scale = ScaleMode::inv_sqrt,
                            .query_size = 4,
                            .context_size = 4,
                            .attention_size = 2},
                           rng),
                 UsageError);
    EXPECT_THROW(Attention({.score = ScoreKind::general,
                            .local = LocalMode::monotonic,
                            .window = 0,
                            .query_size = 4,
                            .context_size = 4},
                           rng),
                 UsageError);
    EXPECT_THROW(Attention({.score = ScoreKind::general, .query_size = 0, .context_size = 4}, rng),
                 UsageError);
    // runtime misuse: a length beyond S, a wrong query size
    Attention att({.score = ScoreKind::general, .query_size = 2, .context_size = 3}, rng);
    Tensor h({1, 2, 3}), q({1, 2}), bad_q({1, 3}), ctx({1, 3});
    AttentionKeys keys;
    att.precompute(h, keys);
    AttentionStepCache cache;
    const std::vector<int> too_long{3}, ok{2};
    EXPECT_THROW(att.forward(q, keys, h, too_long, 0, ctx, cache), Error);
    EXPECT_THROW(att.forward(bad_q, keys, h, ok, 0, ctx, cache), Error);
}

TEST(AttentionConfig, NamesParseAndPrint) {
    EXPECT_EQ(parse_score_kind("bahdanau"), ScoreKind::additive);
    EXPECT_EQ(parse_score_kind("general"), ScoreKind::general);
    EXPECT_EQ(parse_local_mode("local-p"), LocalMode::predictive);
    EXPECT_EQ(parse_scale_mode("sqrt"), ScaleMode::inv_sqrt);
    EXPECT_THROW(parse_score_kind("multiplicative"), UsageError);
    AttentionConfig cfg{.score = ScoreKind::general, .query_size = 8, .context_size = 8};
    apply_attention_name("local-p", cfg);
    EXPECT_EQ(cfg.local, LocalMode::predictive);
    EXPECT_EQ(cfg.score, ScoreKind::general);
    apply_attention_name("scaled-dot", cfg);
    EXPECT_EQ(cfg.score, ScoreKind::dot);
    EXPECT_EQ(cfg.scale, ScaleMode::inv_sqrt);
    EXPECT_EQ(describe(cfg), "local-p scaled(sqrt) dot D=10 (H=8, C=8, P=8)");
    for (auto k : {ScoreKind::additive, ScoreKind::dot, ScoreKind::general, ScoreKind::concat})
        EXPECT_EQ(parse_score_kind(to_string(k)), k);
}

TEST(AttentionConfig, ParameterNamesAndShapes) {
    Rng rng(10);
    Attention att({.score = ScoreKind::additive,
                   .local = LocalMode::predictive,
                   .query_size = 5,
                   .context_size = 6,
                   .attention_size = 3,
                   .position_size = 2},
                  rng);
    std::vector<std::string> names;
    std::vector<Shape> shapes;
    att.params.visit([&](const std::string& n, Tensor& t) {
        if (t.numel() == 0) return;
        names.push_back(n);
        shapes.push_back(t.shape());
    });
    const std::vector<std::string> want{"query.weight", "key.weight", "v.weight", "position.weight",
                                        "position_v.weight"};
    EXPECT_EQ(names, want);
    EXPECT_EQ(shapes[0], Shape({3, 5}));
    EXPECT_EQ(shapes[1], Shape({3, 6}));
    EXPECT_EQ(shapes[2], Shape({1, 3}));
    EXPECT_EQ(shapes[3], Shape({2, 5}));
    EXPECT_EQ(shapes[4], Shape({1, 2}));
    // nn.Linear init bound 1/sqrt(in)
    for (int64_t i = 0; i < att.params.W_k.numel(); ++i)
        EXPECT_LE(std::abs(att.params.W_k[i]), 1 / std::sqrt(6.0f));
    Attention gen({.score = ScoreKind::general,
                   .scale = ScaleMode::learned,
                   .query_size = 5,
                   .context_size = 16},
                  rng);
    EXPECT_EQ(gen.params.W_k.shape(), Shape({5, 16}));
    EXPECT_FLOAT_EQ(gen.params.scale[0], 0.25f);
}

// docs/spec.md §9 at S = 50, d_s = d_h = 512, d_a = 256.
TEST(AttentionConfig, CostModelReproducesSpecSection9) {
    const AttentionConfig add{.score = ScoreKind::additive,
                              .query_size = 512,
                              .context_size = 512,
                              .attention_size = 256};
    const AttentionCost a = attention_cost(add, 50);
    EXPECT_EQ(a.keys, 6553600);             // U_a H: 50×256×512
    EXPECT_EQ(a.query + a.scores, 156672);  // W_a s 131K + 50×256 add/tanh + 50×256 v ≈ 157K
    EXPECT_EQ(a.params, 256 * (512 + 512 + 1));
    const AttentionConfig gen{.score = ScoreKind::general, .query_size = 512, .context_size = 512};
    const AttentionCost g = attention_cost(gen, 50);
    EXPECT_EQ(g.keys, 13107200);                           // W_a H: 50×512×512
    EXPECT_EQ(g.scores + g.context + 512 * 1024, 575488);  // + W_c combine ≈ 575K
    AttentionConfig loc = gen;
    loc.local = LocalMode::predictive;
    EXPECT_EQ(attention_cost(loc, 50).positions, 21);
    EXPECT_EQ(attention_cost(loc, 800).scores, attention_cost(loc, 50).scores);  // O(D), not O(S)
}

}  // namespace test_attention_global
