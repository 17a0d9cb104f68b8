// Copy attention (nazar/models/copy.h): the mixture of one row against its definition computed
// directly, finite differences of the loss through logits, attention weights and gate (a
// repeated source token, a copy-only target, a generator-only target), and the gate layer.
#include "nazar/core/rng.h"
#include "nazar/models/copy.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_grad_copy {

using namespace nazar;
using nazar::test::check_gradients;
using nazar::test::random_tensor;

namespace {

constexpr int V = 7, S = 5;

// P(y) straight from the definition, in double.
double mixture(const Tensor& z, const Tensor& alpha, const std::vector<int32_t>& ids, float g,
               int32_t y) {
    double m = -1e30, sum = 0;
    for (int v = 0; v < V; ++v) m = std::max(m, static_cast<double>(z[v]));
    for (int v = 0; v < V; ++v) sum += std::exp(z[v] - m);
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(g)));
    double P = y < V ? p * std::exp(z[y] - m) / sum : 0.0;
    for (int i = 0; i < S; ++i)
        if (ids[i] == y) P += (1 - p) * alpha[i];
    return P;
}

struct Case {
    Tensor z, alpha, g;
    std::vector<int32_t> ids;
};

Case make_case(uint64_t seed) {
    Rng rng(seed);
    Case c{random_tensor(rng, {V}, -2, 2),
           random_tensor(rng, {S}, 0.05f, 1.0f),
           random_tensor(rng, {1}, -1, 1),
           {}};
    double sum = 0;
    for (int i = 0; i < S; ++i) sum += c.alpha[i];
    for (int i = 0; i < S; ++i) c.alpha[i] = static_cast<float>(c.alpha[i] / sum);
    // token 4 twice (a repeated source token), 8 = V + 1 (out of vocabulary) twice, 7 = V once
    c.ids = {4, 8, 2, 4, 7};
    return c;
}

CopyRow row_of(const Case& c) {
    return {
        .z = c.z.data(), .V = V, .alpha = c.alpha.data(), .ids = c.ids.data(), .S = S, .g = c.g[0]};
}

}  // namespace

TEST(CopyRow, LossMatchesTheMixture) {
    const Case c = make_case(3);
    for (int32_t y : {4, 8, 7, 5, 2}) {
        const double want = -std::log(mixture(c.z, c.alpha, c.ids, c.g[0], y) + kCopyEpsilon);
        EXPECT_NEAR(copy_row_loss(row_of(c), y), want, 1e-6) << "y = " << y;
    }
    // a target neither in the vocabulary nor in the source: P = 0, loss −log ε (finite)
    EXPECT_NEAR(copy_row_loss(row_of(c), 9), -std::log(kCopyEpsilon), 1e-6);
}

TEST(CopyRow, LogProbsMatchTheMixture) {
    const Case c = make_case(5);
    std::vector<float> lp(V + 2);
    const float p = copy_row_log_probs(row_of(c), V + 2, lp.data());
    EXPECT_NEAR(p, 1.0 / (1.0 + std::exp(-c.g[0])), 1e-6);
    double total = 0;
    for (int w = 0; w < V + 2; ++w) {
        const double P = mixture(c.z, c.alpha, c.ids, c.g[0], w);
        EXPECT_NEAR(lp[w], std::log(P + kCopyEpsilon), 1e-5) << "w = " << w;
        EXPECT_NEAR(lp[w], -copy_row_loss(row_of(c), w), 1e-5) << "w = " << w;
        total += P;
    }
    EXPECT_NEAR(total, 1.0, 1e-6);  // a distribution over the extended vocabulary
}

// Finite differences through z, α and g, for a target in the vocabulary and repeated in the
// source (4), a copy-only target (8, twice in the source; 7, once), a vocabulary-only one (5).
TEST(CopyRow, GradientsMatchFiniteDifferences) {
    for (int32_t y : {4, 8, 7, 5}) {
        Case c = make_case(11);
        Tensor d_z({V}), d_alpha({S}), d_g({1});
        CopyRowGrad grad{.d_z = d_z.data(), .d_alpha = d_alpha.data()};
        copy_row_loss(row_of(c), y, 0.7f, &grad);
        d_g[0] = grad.d_g;
        const auto loss = [&] { return 0.7 * copy_row_loss(row_of(c), y); };
        EXPECT_TRUE(check_gradients(loss,
                                    {{"z", c.z, d_z}, {"alpha", c.alpha, d_alpha}, {"g", c.g, d_g}},
                                    {.eps = 1e-3, .rtol = 1e-3, .atol = 1e-5}))
            << "y = " << y;
    }
}

// A copy-only target whose source weight is tiny: the log-domain mixture keeps the gradient
// finite and exact (no log of an underflowed probability).
TEST(CopyRow, TinyCopyMassStaysFinite) {
    Case c = make_case(13);
    c.alpha[1] = 1e-30f;
    c.alpha[3] = 0;
    const int32_t y = 8;  // positions 1 and 3: mass 1e-30 (below ε), loss ≈ −log ε
    Tensor d_z({V}), d_alpha({S});
    CopyRowGrad grad{.d_z = d_z.data(), .d_alpha = d_alpha.data()};
    const double l = copy_row_loss(row_of(c), y, 1.0f, &grad);
    EXPECT_TRUE(std::isfinite(l));
    EXPECT_TRUE(std::isfinite(grad.d_g));
    EXPECT_NEAR(l, -std::log(kCopyEpsilon), 1e-3);
}

// The gate g = w · [c ; s ; e] + b, through the mixture loss of each row.
TEST(CopyGate, GradientsMatchFiniteDifferences) {
    constexpr int N = 3, C = 4, H = 3, E = 2;
    Rng rng(7);
    CopyGate gate(C, H, E, rng);
    Tensor c = random_tensor(rng, {N, C}), s = random_tensor(rng, {N, H}),
           e = random_tensor(rng, {N, E});
    const Case k = make_case(17);
    const std::vector<int32_t> ys = {4, 8, 5};
    Tensor in, g({N}), d_g({N});
    const auto loss = [&] {
        gate.forward(c, s, e, in, g);
        double l = 0;
        for (int n = 0; n < N; ++n) {
            CopyRow r = row_of(k);
            r.g = g[n];
            l += copy_row_loss(r, ys[n]);
        }
        return l;
    };
    loss();
    Tensor d_z({V}), d_alpha({S});
    for (int n = 0; n < N; ++n) {
        CopyRow r = row_of(k);
        r.g = g[n];
        CopyRowGrad grad{.d_z = d_z.data(), .d_alpha = d_alpha.data()};
        copy_row_loss(r, ys[n], 1.0f, &grad);
        d_g[n] = grad.d_g;
    }
    Tensor d_c({N, C}), d_s({N, H}), d_e({N, E});
    gate.backward(d_g, in, d_c, d_s, d_e);
    EXPECT_TRUE(check_gradients(loss,
                                {{"c", c, d_c},
                                 {"s", s, d_s},
                                 {"e", e, d_e},
                                 {"weight", gate.linear.params.weight, gate.linear.grad.weight},
                                 {"bias", gate.linear.params.bias, gate.linear.grad.bias}},
                                {.eps = 1e-3, .rtol = 1e-3, .atol = 1e-5}));
}

// The model passes log-probabilities (normalized: log Σ exp z taken as 0): the same loss,
// gradients, argmax and log-probabilities as from the raw logits.
TEST(CopyRow, NormalizedLogitsGiveTheSameMixture) {
    const Case c = make_case(19);
    Tensor lz({V});
    double m = -1e30, s = 0;
    for (int v = 0; v < V; ++v) m = std::max(m, static_cast<double>(c.z[v]));
    for (int v = 0; v < V; ++v) s += std::exp(c.z[v] - m);
    for (int v = 0; v < V; ++v) lz[v] = static_cast<float>(c.z[v] - m - std::log(s));
    CopyRow n = row_of(c);
    n.z = lz.data();
    n.normalized = true;
    EXPECT_EQ(copy_row_argmax(n), copy_row_argmax(row_of(c)));
    for (int32_t y : {4, 8, 5}) {
        Tensor d_z({V}), d_a({S}), n_z({V}), n_a({S});
        CopyRowGrad g{.d_z = d_z.data(), .d_alpha = d_a.data()};
        CopyRowGrad h{.d_z = n_z.data(), .d_alpha = n_a.data()};
        EXPECT_NEAR(copy_row_loss(n, y, 1.0f, &h), copy_row_loss(row_of(c), y, 1.0f, &g), 1e-6);
        EXPECT_NEAR(h.d_g, g.d_g, 1e-6);
        for (int v = 0; v < V; ++v) EXPECT_NEAR(n_z[v], d_z[v], 1e-6);
        for (int i = 0; i < S; ++i) EXPECT_NEAR(n_a[i], d_a[i], 1e-6);
    }
}

// Label smoothing (docs/spec.md §7a): (1 − ls)(−log(P(y) + ε)) + (ls/V) Σ_{v<V} −log(P(v) + ε),
// the uniform share over the fixed vocabulary only (the extended slots 7, 8 get none).
TEST(CopyRow, SmoothedLossMatchesTheDefinition) {
    const Case c = make_case(23);
    for (float ls : {0.1f, 0.4f}) {
        for (int32_t y : {4, 8, 5}) {
            double smooth = 0;
            for (int v = 0; v < V; ++v)
                smooth -= std::log(mixture(c.z, c.alpha, c.ids, c.g[0], v) + kCopyEpsilon);
            const double want =
                (1 - ls) * -std::log(mixture(c.z, c.alpha, c.ids, c.g[0], y) + kCopyEpsilon) +
                ls * smooth / V;
            EXPECT_NEAR(copy_row_loss(row_of(c), y, 1.0f, nullptr, ls), want, 1e-6)
                << "ls = " << ls << ", y = " << y;
        }
    }
}

// With the gate fully open (p_gen = 1) the smoothed copy loss is the non-copy smoothed
// cross-entropy (1 − ls)(−log softmax_y) + ls · mean_v(−log softmax_v), and so are its gradients
// with respect to z: ls (softmax − 1/V) + (1 − ls)(softmax − δ_y).
TEST(CopyRow, SmoothedLossWithAnOpenGateIsTheUsualOne) {
    Case c = make_case(29);
    c.g[0] = 40;  // 1 − p_gen = e^-40
    const float ls = 0.2f;
    double m = -1e30, s = 0;
    for (int v = 0; v < V; ++v) m = std::max(m, static_cast<double>(c.z[v]));
    for (int v = 0; v < V; ++v) s += std::exp(c.z[v] - m);
    const int32_t y = 5;
    double mean_nll = 0;
    for (int v = 0; v < V; ++v) mean_nll -= (c.z[v] - m - std::log(s)) / V;
    const double want = (1 - ls) * -(c.z[y] - m - std::log(s)) + ls * mean_nll;
    Tensor d_z({V}), d_alpha({S});
    CopyRowGrad grad{.d_z = d_z.data(), .d_alpha = d_alpha.data()};
    EXPECT_NEAR(copy_row_loss(row_of(c), y, 1.0f, &grad, ls), want, 1e-6);
    for (int v = 0; v < V; ++v) {
        const double sm = std::exp(c.z[v] - m) / s;
        EXPECT_NEAR(d_z[v], ls * (sm - 1.0 / V) + (1 - ls) * (sm - (v == y)), 1e-6) << v;
    }
}

// Finite differences of the smoothed loss through z, α and g (the same targets as above).
TEST(CopyRow, SmoothedGradientsMatchFiniteDifferences) {
    for (float ls : {0.1f, 0.5f}) {
        for (int32_t y : {4, 8, 7, 5}) {
            Case c = make_case(31);
            Tensor d_z({V}), d_alpha({S}), d_g({1});
            CopyRowGrad grad{.d_z = d_z.data(), .d_alpha = d_alpha.data()};
            copy_row_loss(row_of(c), y, 0.7f, &grad, ls);
            d_g[0] = grad.d_g;
            const auto loss = [&] { return 0.7 * copy_row_loss(row_of(c), y, 1.0f, nullptr, ls); };
            EXPECT_TRUE(check_gradients(
                loss, {{"z", c.z, d_z}, {"alpha", c.alpha, d_alpha}, {"g", c.g, d_g}},
                {.eps = 1e-3, .rtol = 1e-3, .atol = 1e-5}))
                << "ls = " << ls << ", y = " << y;
        }
    }
}

}  // namespace test_grad_copy
