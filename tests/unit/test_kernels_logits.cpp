// The AVX-512 kernels of kernels_avx512.cpp against their 8-lane / scalar forms, bit for bit:
// add_bias_logsumexp_row (the biased row and its log-sum-exp as add_bias_rows + logsumexp_row
// give them, and within float rounding of an fp64 oracle; rows of every length, logits spread
// over the whole range of exp, flushes to 0 included, infinities and NaN); tanh and sigmoid over
// a sweep of every 97th float bit pattern (both signs, denormals, infinities, NaNs).
#include "nazar/core/kernels.h"
#include "nazar/core/rng.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace nazar {
namespace test_kernels_logits {
namespace {

// The reference: z + b written, then logsumexp_row.
float reference(std::vector<float>& z, const std::vector<float>& b) {
    if (!b.empty())
        for (std::size_t i = 0; i < z.size(); ++i) z[i] += b[i];
    return kernels::logsumexp_row(z.data(), static_cast<int>(z.size()));
}

double oracle(const std::vector<float>& z) {
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    for (const float x : z) mx = std::max(mx, static_cast<double>(x));
    for (const float x : z) s += std::exp(static_cast<double>(x) - mx);
    return mx + std::log(s);
}

void expect_same_bits(float a, float b, const char* what, int n) {
    if (std::isnan(a) && std::isnan(b)) return;
    EXPECT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b))
        << what << " n=" << n << ": " << a << " vs " << b;
}

// Both paths (the AVX-512 one where the CPU has it) against the reference, bit for bit.
void check_row(std::vector<float> z, const std::vector<float>& b) {
    const int n = static_cast<int>(z.size());
    std::vector<float> want = z;
    const float lse_want = reference(want, b);
    for (const bool fast : {false, true}) {
        kernels::set_kernels_avx512(fast);
        std::vector<float> got = z;
        const float lse =
            kernels::add_bias_logsumexp_row(got.data(), b.empty() ? nullptr : b.data(), n);
        expect_same_bits(lse, lse_want, fast ? "lse (fast)" : "lse (portable)", n);
        for (int i = 0; i < n; ++i) expect_same_bits(got[i], want[i], "biased entry", n);
    }
    kernels::set_kernels_avx512(true);
}

TEST(KernelsLogits, BitIdenticalToBiasThenLogsumexp) {
    Rng rng(7, 0);
    for (int n : {0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 1000, 8000, 8003}) {
        for (const float spread : {0.1f, 5.0f, 40.0f, 200.0f}) {
            std::vector<float> z(n), b(n);
            for (float& x : z) x = spread * (2 * rng.uniform() - 1);
            for (float& x : b) x = rng.uniform() - 0.5f;
            check_row(z, b);
            check_row(z, {});
        }
    }
}

// The sum before its logarithm, where one exp off by an ulp shows: short rows (one block of 8
// or 16 is a tree of 8 sums), offsets over exp's whole range, both paths bit for bit.
TEST(KernelsLogits, SumOfExpsBitIdenticalOnBothPaths) {
    Rng rng(3, 0);
    int compared = 0;
    for (int n : {8, 16, 24, 40}) {
        for (int row = 0; row < 3000; ++row) {
            std::vector<float> z(n);
            const float spread = row % 3 == 0 ? 1.0f : row % 3 == 1 ? 20.0f : 90.0f;
            for (float& x : z) x = spread * (2 * rng.uniform() - 1);
            kernels::set_kernels_avx512(false);
            const float want = kernels::sum_exp_shifted(z.data(), n, 0.5f);
            kernels::set_kernels_avx512(true);
            const float got = kernels::sum_exp_shifted(z.data(), n, 0.5f);
            expect_same_bits(got, want, "sum of exps", n);
            ++compared;
        }
    }
    EXPECT_EQ(compared, 12000);
}

TEST(KernelsLogits, MatchesTheOracleWithinFloatRounding) {
    Rng rng(11, 0);
    for (int n : {5, 64, 8000}) {
        std::vector<float> z(n), b(n);
        for (float& x : z) x = 12 * (2 * rng.uniform() - 1);
        for (float& x : b) x = rng.uniform() - 0.5f;
        std::vector<float> biased = z;
        for (int i = 0; i < n; ++i) biased[i] += b[i];
        const float lse = kernels::add_bias_logsumexp_row(z.data(), b.data(), n);
        EXPECT_NEAR(lse, oracle(biased), 1e-5 * (1 + std::fabs(oracle(biased)))) << n;
    }
}

TEST(KernelsAvx512, TanhAndSigmoidBitIdenticalOverTheFloats) {
    // Without the AVX-512 path (another CPU, arm64) both calls would run the portable kernel.
    if (!kernels::set_kernels_avx512(true)) GTEST_SKIP() << "no AVX-512 kernels on this CPU";
    // Every 97th bit pattern (44 million floats); under AddressSanitizer every 1,553rd: the
    // instrumented suite checks the memory of the same loops, the Release suite the values.
    constexpr uint64_t kStride = test::kAddressSanitized ? 1553 : 97;
    std::vector<float> x;
    for (uint64_t u = 0; u <= 0xffffffffull; u += kStride)
        x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
    for (const float v : {0.0f, -0.0f, 0.625f, -0.625f, 10.0f, 44.0f, -44.0f, 87.3f, -87.3f})
        x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size()) - 5;  // a length with a 16-lane tail
    for (const bool sig : {false, true}) {
        std::vector<float> want(x.size(), 7.0f), got(x.size(), 7.0f);
        kernels::set_kernels_avx512(false);
        (sig ? kernels::sigmoid : kernels::tanh)(x.data(), want.data(), n);
        kernels::set_kernels_avx512(true);
        (sig ? kernels::sigmoid : kernels::tanh)(x.data(), got.data(), n);
        int64_t differ = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
            if (!both_nan && std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) &&
                differ++ < 5)
                ADD_FAILURE() << (sig ? "sigmoid(" : "tanh(") << x[i] << "): " << got[i] << " vs "
                              << want[i];
        }
        EXPECT_EQ(differ, 0);
        EXPECT_EQ(got.back(), 7.0f);  // past n: untouched
    }
}

TEST(KernelsLogits, InfinitiesAndNaN) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int n : {3, 16, 40}) {
        std::vector<float> z(n, 1.0f);
        z[n / 2] = inf;
        check_row(z, {});
        z.assign(n, -inf);
        check_row(z, {});  // all −∞: −∞
        z.assign(n, 2.0f);
        z[n - 1] = nan;
        check_row(z, {});  // NaN is skipped by the maximum, then poisons the sum
        z.assign(n, -100.0f);
        z[0] = 0.0f;
        check_row(z, {});  // exp flushes to 0 below −87.3
    }
}

}  // namespace
}  // namespace test_kernels_logits
}  // namespace nazar
