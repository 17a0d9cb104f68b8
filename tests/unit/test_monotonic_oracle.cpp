// The monotonic alignment oracle (nazar/attention/naive_monotonic.h, Raffel et al. 2017): a step
// worked by hand; the recursive and the parallel (log-space triangular) forms equal to 1e-12 on
// random rows, rows with probabilities of exactly 0 and 1, and long rows with small p (where the
// paper's cumprod form divides by products near 1e-10); the probability mass (no more than the
// previous step's, all of it when the last position is certain); monotonicity; the backward
// against central differences in double; and the hard limit (p of 0 and 1 only) equal to the
// hard decoding's choice.
#include "nazar/attention/naive_monotonic.h"
#include "nazar/core/check.h"
#include "nazar/core/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace nazar::attn::naive {
namespace {

double sum(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0);
}

// p in (0, 1); prev >= 0 summing to `mass`
void random_row(Rng& rng, int S, double mass, std::vector<double>& p, std::vector<double>& prev) {
    p.resize(S);
    prev.resize(S);
    for (int j = 0; j < S; ++j) {
        p[j] = 0.02 + 0.96 * rng.uniform_double();
        prev[j] = rng.uniform_double();
    }
    const double total = sum(prev);
    for (double& x : prev) x *= mass / total;
}

TEST(MonotonicOracle, AStepWorkedByHand) {
    // from position 0: stop there with 1/2; else move on and stop at 1 with 1/4 of the remaining
    // 1/2; else (3/8 left) stop at 2, which is certain
    const std::vector<double> p{0.5, 0.25, 1.0}, prev{1, 0, 0};
    for (const auto& a : {monotonic_alignment(p, prev), monotonic_alignment_parallel(p, prev)}) {
        EXPECT_DOUBLE_EQ(a[0], 0.5);
        EXPECT_DOUBLE_EQ(a[1], 0.125);
        EXPECT_DOUBLE_EQ(a[2], 0.375);
    }
    // the previous step split between positions 0 and 2: what stood at 2 cannot move back
    const std::vector<double> a = monotonic_alignment(p, std::vector<double>{0.6, 0, 0.4});
    EXPECT_DOUBLE_EQ(a[0], 0.3);
    EXPECT_DOUBLE_EQ(a[1], 0.075);
    EXPECT_DOUBLE_EQ(a[2], 0.225 + 0.4);
}

TEST(MonotonicOracle, RecursiveAndParallelFormsAgree) {
    Rng rng(41);
    std::vector<double> p, prev;
    for (const int S : {1, 2, 7, 33, 120})
        for (int rep = 0; rep < 5; ++rep) {
            random_row(rng, S, 0.3 + 0.7 * rng.uniform_double(), p, prev);
            if (rep == 3)  // exact 0 and 1 (σ of large energies rounds to them)
                for (int j = 0; j < S; j += 3) p[j] = (j / 3) % 2 ? 1.0 : 0.0;
            if (rep == 4)  // long runs of small p: Π (1 − p) far below 1e-10 at S = 120
                for (double& x : p) x = 0.3 * x * x;
            const std::vector<double> r = monotonic_alignment(p, prev),
                                      q = monotonic_alignment_parallel(p, prev);
            for (int j = 0; j < S; ++j)
                ASSERT_NEAR(r[j], q[j], 1e-12) << "S " << S << " rep " << rep << " j " << j;
        }
}

TEST(MonotonicOracle, MassNeverGrowsAndStaysWhenTheEndIsCertain) {
    Rng rng(42);
    std::vector<double> p, prev;
    for (const int S : {1, 5, 40}) {
        random_row(rng, S, 0.8, p, prev);
        const std::vector<double> a = monotonic_alignment(p, prev);
        EXPECT_LE(sum(a), 0.8 + 1e-12);
        for (double x : a) EXPECT_GE(x, 0.0);
        p.back() = 1.0;  // the last position stops whoever reaches it
        EXPECT_NEAR(sum(monotonic_alignment(p, prev)), 0.8, 1e-12) << S;
    }
}

TEST(MonotonicOracle, NothingMovesBackward) {
    Rng rng(43);
    std::vector<double> p, prev;
    random_row(rng, 12, 1.0, p, prev);
    std::fill(prev.begin(), prev.end(), 0.0);
    prev[5] = 1.0;
    const std::vector<double> a = monotonic_alignment(p, prev);
    for (int j = 0; j < 5; ++j) EXPECT_EQ(a[j], 0.0) << j;
    EXPECT_DOUBLE_EQ(a[5], p[5]);
}

TEST(MonotonicOracle, BackwardMatchesCentralDifferences) {
    Rng rng(44);
    std::vector<double> p, prev, R(0);
    for (const int S : {1, 4, 17}) {
        random_row(rng, S, 0.9, p, prev);
        R.resize(S);
        for (double& r : R) r = 2 * rng.uniform_double() - 1;
        const auto loss = [&](const std::vector<double>& pp, const std::vector<double>& qq) {
            const std::vector<double> a = monotonic_alignment(pp, qq);
            return std::inner_product(a.begin(), a.end(), R.begin(), 0.0);
        };
        std::vector<double> d_p(S), d_prev(S);
        monotonic_alignment_backward(p, prev, R, d_p, d_prev);
        const double eps = 1e-6;
        for (int j = 0; j < S; ++j) {
            std::vector<double> a = p, b = p;
            a[j] += eps;
            b[j] -= eps;
            EXPECT_NEAR(d_p[j], (loss(a, prev) - loss(b, prev)) / (2 * eps), 1e-8) << S << " " << j;
            a = prev;
            b = prev;
            a[j] += eps;
            b[j] -= eps;
            EXPECT_NEAR(d_prev[j], (loss(p, a) - loss(p, b)) / (2 * eps), 1e-8) << S << " " << j;
        }
    }
}

// p of only 0 and 1, from a one-hot α_{t−1}: the expected alignment is the hard decoding's choice
TEST(MonotonicOracle, HardLimitIsTheHardDecodingsChoice) {
    Rng rng(45);
    for (int rep = 0; rep < 50; ++rep) {
        const int S = 1 + static_cast<int>(rng.uniform_double() * 10);
        const int from = static_cast<int>(rng.uniform_double() * S);
        std::vector<double> p(S), prev(S, 0.0);
        for (double& x : p) x = rng.uniform_double() < 0.3 ? 1.0 : 0.0;
        prev[from] = 1.0;
        const std::vector<double> a = monotonic_alignment(p, prev);
        const int stop = hard_stop(p, from);
        for (int j = 0; j < S; ++j) EXPECT_EQ(a[j], j == stop ? 1.0 : 0.0) << rep << " " << j;
    }
    EXPECT_EQ(hard_stop(std::vector<double>{0.9, 0.1, 0.5}, 1), 2);  // 0.5 stops (>= 0.5)
    EXPECT_EQ(hard_stop(std::vector<double>{0.9, 0.1, 0.4}, 1), -1);
    EXPECT_THROW(monotonic_alignment(std::vector<double>{1.5}, std::vector<double>{1}), Error);
    EXPECT_THROW(monotonic_alignment(std::vector<double>{0.5, 0.5}, std::vector<double>{1}), Error);
}

}  // namespace
}  // namespace nazar::attn::naive
