// The MoChA chunkwise-weights oracle (nazar/attention/naive_mocha.h, Chiu & Raffel 2018): a step
// worked by hand; w = 1 is monotonic attention itself; the mass of α kept (each window's softmax
// sums to 1) and nothing placed after the last possible stop; the backward against central
// differences in double; and the hard limit (α one-hot at the stop) equal to the hard decoding's
// window softmax.
#include "nazar/attention/naive_mocha.h"
#include "nazar/core/check.h"
#include "nazar/core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace nazar::attn::naive {
namespace {

double sum(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0);
}

// α >= 0 summing to at most 1, u in [-3, 3]
void random_row(Rng& rng, int S, std::vector<double>& alpha, std::vector<double>& u) {
    alpha.resize(S);
    u.resize(S);
    for (int j = 0; j < S; ++j) {
        alpha[j] = rng.uniform_double();
        u[j] = -3 + 6 * rng.uniform_double();
    }
    const double total = sum(alpha) / (0.4 + 0.6 * rng.uniform_double());
    for (double& a : alpha) a /= total;
}

TEST(MochaOracle, AStepWorkedByHand) {
    // exp(u) = (1, 3, 1), w = 2: windows {0}, {0, 1}, {1, 2} with sums 1, 4, 4
    const std::vector<double> alpha{0.5, 0.125, 0.375}, u{0, std::log(3.0), 0};
    const std::vector<double> b = chunkwise_weights(alpha, u, 2);
    EXPECT_DOUBLE_EQ(b[0], 0.5 + 0.125 / 4);
    EXPECT_DOUBLE_EQ(b[1], 0.125 * 3 / 4 + 0.375 * 3 / 4);
    EXPECT_DOUBLE_EQ(b[2], 0.375 / 4);
}

TEST(MochaOracle, WindowOfOneIsMonotonicAttention) {
    Rng rng(3);
    std::vector<double> alpha, u;
    random_row(rng, 11, alpha, u);
    const std::vector<double> b = chunkwise_weights(alpha, u, 1);
    for (int j = 0; j < 11; ++j) EXPECT_NEAR(b[j], alpha[j], 1e-15);
}

TEST(MochaOracle, KeepsTheMassAndPlacesNothingAfterTheLastStop) {
    Rng rng(5);
    std::vector<double> alpha, u;
    for (const int S : {1, 4, 17, 60})
        for (const int w : {1, 2, 3, 8, 100}) {
            random_row(rng, S, alpha, u);
            const int last = S / 2;  // the reader cannot have stopped after `last`
            for (int k = last + 1; k < S; ++k) alpha[k] = 0;
            const std::vector<double> b = chunkwise_weights(alpha, u, w);
            EXPECT_NEAR(sum(b), sum(alpha), 1e-12) << "S " << S << " w " << w;
            for (int j = last + 1; j < S; ++j) EXPECT_EQ(b[j], 0.0) << "S " << S << " w " << w;
            for (double x : b) EXPECT_GE(x, 0.0);
        }
}

TEST(MochaOracle, BackwardMatchesCentralDifferences) {
    Rng rng(7);
    std::vector<double> alpha, u;
    for (const int S : {1, 5, 13})
        for (const int w : {1, 2, 4}) {
            random_row(rng, S, alpha, u);
            std::vector<double> d_beta(S), d_alpha(S), d_u(S);
            for (double& d : d_beta) d = -1 + 2 * rng.uniform_double();
            chunkwise_weights_backward(alpha, u, w, d_beta, d_alpha, d_u);
            const auto f = [&](const std::vector<double>& a, const std::vector<double>& e) {
                const std::vector<double> b = chunkwise_weights(a, e, w);
                double s = 0;
                for (int j = 0; j < S; ++j) s += d_beta[j] * b[j];
                return s;
            };
            const double h = 1e-6;
            for (int i = 0; i < S; ++i) {
                std::vector<double> ap = alpha, am = alpha, up = u, um = u;
                ap[i] += h;
                am[i] -= h;
                up[i] += h;
                um[i] -= h;
                EXPECT_NEAR(d_alpha[i], (f(ap, u) - f(am, u)) / (2 * h), 1e-8) << "d alpha " << i;
                EXPECT_NEAR(d_u[i], (f(alpha, up) - f(alpha, um)) / (2 * h), 1e-8) << "d u " << i;
            }
        }
}

TEST(MochaOracle, HardLimitIsTheWindowSoftmaxAtTheStop) {
    Rng rng(9);
    std::vector<double> alpha, u;
    random_row(rng, 9, alpha, u);
    for (const int w : {1, 3, 20})
        for (int k = -1; k < 9; ++k) {
            std::vector<double> one_hot(9, 0.0);
            if (k >= 0) one_hot[k] = 1;
            const std::vector<double> soft = chunkwise_weights(one_hot, u, w);
            const std::vector<double> hard = hard_chunk(u, k, w);
            for (int j = 0; j < 9; ++j) EXPECT_NEAR(soft[j], hard[j], 1e-15) << k << " " << j;
        }
    EXPECT_THROW(hard_chunk(u, 9, 2), Error);
    EXPECT_THROW(chunkwise_weights(alpha, u, 0), Error);
}

}  // namespace
}  // namespace nazar::attn::naive
