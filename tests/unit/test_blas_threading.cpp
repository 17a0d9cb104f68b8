// The paths of nazar::gemm that performance added (nazar/core/gemm/dispatch.cpp): large products
// cut into blocks over nazar's pool, OpenBLAS's own threading, and the small-M kernel (M <= 8 rows,
// C = alpha A Bᵀ + beta C) used by decoding. Each is checked against the naive oracle, with
// leading dimensions larger than the matrices, K not a multiple of the vector width, and for
// 1 and 2 threads; a fixed thread count gives bit-identical results run to run.
#include "nazar/core/blas.h"
#include "nazar/core/threads.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <tuple>
#include <utility>
#include <vector>

namespace nazar {
namespace test_blas_threading {
namespace {

// Tolerance: float products of K <= 700 terms in [-1, 1] against a double-accumulated oracle;
// the float rounding error is below K · 2^-24 · max|term| ≈ 4e-5 relative to the row norms.
constexpr double kTol = 1e-4;

struct Case {
    bool ta, tb;
    int M, N, K;
};

void check(const Case& c, float alpha, float beta) {
    Rng rng(static_cast<uint64_t>(c.M * 131 + c.N * 7 + c.K));
    const int lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 5, ldc = c.N + 2;
    std::vector<float> A(static_cast<std::size_t>(c.ta ? c.K : c.M) * lda),
        B(static_cast<std::size_t>(c.tb ? c.N : c.K) * ldb), C(static_cast<std::size_t>(c.M) * ldc);
    for (auto* v : {&A, &B, &C})
        for (float& x : *v) x = rng.uniform(-1, 1);
    std::vector<float> ref = C;
    gemm_raw(c.ta, c.tb, c.M, c.N, c.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    gemm_naive(c.ta, c.tb, c.M, c.N, c.K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(),
               ldc);
    double worst = 0, scale = 1e-30;
    for (std::size_t i = 0; i < C.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(C[i] - ref[i])));
        scale = std::max(scale, static_cast<double>(std::abs(ref[i])));
    }
    EXPECT_LE(worst / scale, kTol) << "ta " << c.ta << " tb " << c.tb << " M " << c.M << " N "
                                   << c.N << " K " << c.K << " alpha " << alpha << " beta " << beta;
}

TEST(BlasThreading, EveryPathMatchesTheOracle) {
    const std::vector<Case> cases = {
        {false, true, 1, 8000, 512},  {false, true, 5, 1536, 768},
        {false, true, 8, 37, 13},                                  // small M
        {false, true, 3, 5, 3},       {false, true, 9, 300, 200},  // just above
        {false, false, 64, 600, 300}, {true, false, 600, 300, 64},
        {false, true, 128, 500, 128}, {true, true, 70, 90, 110},
        {false, false, 700, 40, 80},  // by rows
    };
    const auto keep_mode = test::keep_gemm_threading();
    const auto keep_threads = test::keep_num_threads();
    for (GemmThreading mode : {GemmThreading::pool, GemmThreading::blas})
        for (int threads : {1, 2}) {
            set_gemm_threading(mode);
            set_num_threads(threads);
            for (const Case& c : cases) {
                check(c, 1.0f, 0.0f);
                check(c, 0.5f, 2.0f);
            }
        }
}

TEST(BlasThreading, FixedThreadCountIsBitIdentical) {
    const auto keep_threads = test::keep_num_threads();
    set_num_threads(2);
    Rng rng(5);
    const Tensor a = test::random_tensor(rng, {64, 768}), b = test::random_tensor(rng, {1536, 768});
    Tensor c1({64, 1536}), c2({64, 1536});
    gemm(a, false, b, true, c1);
    gemm(a, false, b, true, c2);
    EXPECT_EQ(max_abs_diff(c1, c2), 0.0);
    const Tensor x = test::random_tensor(rng, {4, 768});
    Tensor d1({4, 1536}), d2({4, 1536});
    gemm(x, false, b, true, d1);
    gemm(x, false, b, true, d2);
    EXPECT_EQ(max_abs_diff(d1, d2), 0.0);
}

TEST(BlasThreading, SmallMKernelIsBitIdenticalOnOneAndTwoThreads) {
    // Two threads split B into 16-row units once the product has 1.5 MFLOP or B has 256 KiB
    // (1 x 512 x 512: split for its bytes alone; 1 x 600 x 100: neither, one thread): every C
    // entry still gets the same sums in the same order as on one thread.
    const auto keep_threads = test::keep_num_threads();
    Rng rng(11);
    for (auto [M, N, K] : {std::tuple{1, 512, 512}, std::tuple{1, 600, 100},
                           std::tuple{5, 1536, 768}, std::tuple{8, 1037, 131}}) {
        const Tensor a = test::random_tensor(rng, {M, K}), b = test::random_tensor(rng, {N, K});
        Tensor one({M, N}), two({M, N});
        set_num_threads(1);
        gemm(a, false, b, true, one);
        set_num_threads(2);
        gemm(a, false, b, true, two);
        EXPECT_EQ(max_abs_diff(one, two), 0.0) << M << " x " << N << " x " << K;
    }
}

TEST(BlasThreading, SmallMKernelAvx512AndAvx2AreBitIdentical) {
    // Both paths keep the same two 8-lane accumulators per C entry (the 8-float blocks of K at
    // even and at odd positions, core/gemm/small_m_*.cpp) and reduce them in the same order, so
    // every M in [1, 8], N with a remainder past the 8- and 12-row blocks, K with a scalar tail
    // and with an odd count of 8-float blocks (29), and beta = 0 must agree bit for bit. Skipped
    // where the CPU lacks AVX-512 (both runs would be AVX2).
    const auto keep = test::keep_small_gemm_avx512();
    const auto keep_threads = test::keep_num_threads();
    if (!set_small_gemm_avx512(true))
        GTEST_SKIP() << "no AVX-512 on this CPU: only the AVX2 small-M kernel exists to compare";
    Rng rng(11);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (int M = 1; M <= 8; ++M)
            for (int N : {7, 45, 1000})
                for (int K : {13, 29, 512})
                    for (auto [alpha, beta] : {std::pair{0.5f, 2.0f}, {0.7f, 1.3f}, {0.3f, 0.0f}}) {
                        const Tensor a = test::random_tensor(rng, {M, K}),
                                     b = test::random_tensor(rng, {N, K});
                        Tensor c0 = test::random_tensor(rng, {M, N});
                        Tensor c1 = c0;
                        set_small_gemm_avx512(false);
                        gemm(a, false, b, true, c0, alpha, beta);
                        set_small_gemm_avx512(true);
                        gemm(a, false, b, true, c1, alpha, beta);
                        EXPECT_EQ(max_abs_diff(c0, c1), 0.0)
                            << "M " << M << " N " << N << " K " << K << " beta " << beta;
                    }
    }
}

}  // namespace
}  // namespace test_blas_threading
}  // namespace nazar
