// bf16 x bf16 -> fp32 products (nazar/core/gemm/bf16.h) against an fp64 oracle on bf16-rounded
// inputs, and the precision switch of gemm.
//
// Error bound. The inputs are rounded to bf16 first (the oracle does the same), after which every
// product of two bf16 values is exact in fp32; what remains is the fp32 summation of K terms in
// some order, |C - C_oracle| <= alpha K 2^-24 sum_k |a_ik b_kj| (to first order) plus one
// rounding of beta C and of the result. The tests allow twice that: 2 K 2^-24 sum |a b| + 2^-22
// |beta C|. Against the exact product of the unrounded fp32 inputs, each input carries a relative
// rounding error <= u = 2^-8 (bf16's unit roundoff: 8 significant bits), so each term <= 2u + u^2
// relative: the second bound adds (2^-7 + 2^-15) sum |a b|. Every kernel runs on each transpose
// combination, odd K, column tails of the 32-wide strips, row tails of the 12-row tiles, padded
// leading dimensions, alpha/beta, beta = 0 on a NaN-filled C, one and two threads. The fallback
// runs everywhere; the AVX512-BF16 kernel and oneDNN's bf16 matmul where the CPU has AVX512-BF16
// (skipped with a message otherwise).
#include "nazar/core/blas.h"
#include "nazar/core/check.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace nazar {
namespace test_gemm_bf16 {
namespace {

struct Case {
    bool ta, tb;
    int M, N, K;
    float alpha, beta;
};

struct Mats {
    Case c;
    int lda, ldb, ldc;
    std::vector<float> A, B, C;
};

Mats make(const Case& c, uint64_t seed) {
    Rng rng(seed);
    Mats m{c, (c.ta ? c.M : c.K) + 3, (c.tb ? c.K : c.N) + 5, c.N + 2, {}, {}, {}};
    m.A.resize(static_cast<size_t>(c.ta ? c.K : c.M) * m.lda);
    m.B.resize(static_cast<size_t>(c.tb ? c.N : c.K) * m.ldb);
    m.C.resize(static_cast<size_t>(c.M) * m.ldc);
    for (auto* v : {&m.A, &m.B, &m.C})
        for (float& x : *v) x = 4 * rng.uniform() - 2;
    if (c.beta == 0.0f) std::fill(m.C.begin(), m.C.end(), std::numeric_limits<float>::quiet_NaN());
    return m;
}

float at_a(const Mats& m, int i, int k) {
    return m.c.ta ? m.A[static_cast<size_t>(k) * m.lda + i]
                  : m.A[static_cast<size_t>(i) * m.lda + k];
}
float at_b(const Mats& m, int k, int j) {
    return m.c.tb ? m.B[static_cast<size_t>(j) * m.ldb + k]
                  : m.B[static_cast<size_t>(k) * m.ldb + j];
}

// Checks got (C after the product) against the fp64 oracle; rounded: the oracle rounds the inputs
// to bf16 (the tight bound), else it takes them as they are (plus (2^-7 + 2^-15) sum |a b|).
void expect_close(const Mats& m, const std::vector<float>& got, bool rounded, const char* what) {
    const Case& c = m.c;
    int bad = 0;
    for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j) {
            double exact = 0, mag = 0;
            for (int k = 0; k < c.K; ++k) {
                float a = at_a(m, i, k), b = at_b(m, k, j);
                if (rounded) {
                    a = bf16_round(a);
                    b = bf16_round(b);
                }
                exact += static_cast<double>(a) * b;
                mag += std::abs(static_cast<double>(a) * b);
            }
            const double c0 = c.beta == 0.0f ? 0.0 : m.C[static_cast<size_t>(i) * m.ldc + j];
            const double want = c.alpha * exact + c.beta * c0;
            const double tol = std::abs(c.alpha) * mag *
                                   (2.0 * c.K * std::ldexp(1.0, -24) +
                                    (rounded ? 0.0 : std::ldexp(1.0, -7) + std::ldexp(1.0, -15))) +
                               std::ldexp(1.0, -22) * (std::abs(c.beta * c0) + std::abs(want));
            const float g = got[static_cast<size_t>(i) * m.ldc + j];
            if (!(std::abs(g - want) <= tol) && bad++ < 3)
                ADD_FAILURE() << what << " ta " << c.ta << " tb " << c.tb << " " << c.M << "x"
                              << c.N << "x" << c.K << " C[" << i << "," << j << "] = " << g
                              << ", oracle " << want << ", bound " << tol;
        }
    // the padding between rows of C is never written
    for (int i = 0; i < c.M; ++i)
        for (int j = c.N; j < m.ldc; ++j) {
            const size_t p = static_cast<size_t>(i) * m.ldc + j;
            EXPECT_TRUE(std::memcmp(&got[p], &m.C[p], 4) == 0) << what << " wrote padding";
        }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    const int shapes[][3] = {{1, 1, 1},     {5, 7, 3},     {12, 32, 2},   {13, 33, 31},
                             {37, 70, 257}, {64, 96, 300}, {200, 40, 65}, {29, 130, 512}};
    for (const auto& s : shapes)
        for (int t = 0; t < 4; ++t)
            out.push_back({(t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], t == 3 ? -0.5f : 1.0f,
                           t % 2 == 0 ? 0.0f : 0.75f});
    return out;
}

class ThreadsGuard {
public:
    explicit ThreadsGuard(int n) : saved_(num_threads()) { set_num_threads(n); }
    ~ThreadsGuard() { set_num_threads(saved_); }

private:
    int saved_;
};

void check_kernel(Bf16Kernel k, const char* what) {
    for (int threads : {1, 2}) {
        ThreadsGuard g(threads);
        uint64_t seed = 1;
        for (const Case& c : cases()) {
            const Mats m = make(c, seed++);
            std::vector<float> got = m.C;
            gemm_bf16_on(k, c.ta, c.tb, c.M, c.N, c.K, c.alpha, m.A.data(), m.lda, m.B.data(),
                         m.ldb, c.beta, got.data(), m.ldc);
            expect_close(m, got, true, what);
            expect_close(m, got, false, what);
        }
    }
}

TEST(GemmBf16, RoundsToNearestEven) {
    EXPECT_EQ(bf16_bits(1.0f), 0x3F80);
    EXPECT_EQ(bf16_bits(-2.0f), 0xC000);
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1)
    EXPECT_EQ(bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
    // 1 + 3 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even one
    EXPECT_EQ(bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
    EXPECT_EQ(bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
    EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
    EXPECT_TRUE(std::isnan(bf16_round(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(bf16_round(3.0f), 3.0f);
    EXPECT_EQ(bf16_value(0x4049), 3.140625f);
}

TEST(GemmBf16, FallbackMatchesOracle) {
    check_kernel(Bf16Kernel::fallback, "fallback");
}

TEST(GemmBf16, Avx512Bf16MatchesOracle) {
    if (!bf16_fast_available()) GTEST_SKIP() << "no AVX512-BF16 usable: " << bf16_description();
    check_kernel(Bf16Kernel::avx512_bf16, "avx512_bf16");
}

TEST(GemmBf16, OneDnnMatchesOracle) {
    if (!bf16_onednn_available()) GTEST_SKIP() << "not a oneDNN build";
    if (!bf16_fast_available()) GTEST_SKIP() << "no AVX512-BF16 usable: " << bf16_description();
    check_kernel(Bf16Kernel::onednn, "onednn");
}

TEST(GemmBf16, Avx512Bf16WithoutTheCpuIsAnError) {
    if (bf16_fast_available()) GTEST_SKIP() << "this CPU has AVX512-BF16";
    std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 0.0f);
    EXPECT_THROW(gemm_bf16_on(Bf16Kernel::avx512_bf16, false, false, 2, 2, 2, 1.0f, a.data(), 2,
                              b.data(), 2, 0.0f, c.data(), 2),
                 Error);
}

TEST(GemmBf16, ParsesPrecision) {
    EXPECT_EQ(parse_gemm_precision("fp32"), GemmPrecision::fp32);
    EXPECT_EQ(parse_gemm_precision("bf16"), GemmPrecision::bf16);
    EXPECT_THROW(parse_gemm_precision("fp16"), UsageError);
    EXPECT_STREQ(precision_name(GemmPrecision::bf16), "bf16");
}

// Inside a bf16 scope gemm_raw runs the products that pay through gemm_bf16 (the same bits,
// with op(B) packed once when it is constant memory), leaves small ones in fp32, and after the
// scope fp32 is exactly as before.
TEST(GemmBf16, ScopeSwitchesGemm) {
    const Case big{false, true, 64, 96, 300, 1.0f, 0.0f},
        small{false, true, 4, 96, 300, 1.0f, 0.0f};
    const Mats m = make(big, 7), s = make(small, 8);
    const auto raw = [](const Mats& x, std::vector<float>& c) {
        gemm_raw(x.c.ta, x.c.tb, x.c.M, x.c.N, x.c.K, x.c.alpha, x.A.data(), x.lda, x.B.data(),
                 x.ldb, x.c.beta, c.data(), x.ldc);
    };
    std::vector<float> fp32 = m.C, fp32_small = s.C, want = m.C;
    raw(m, fp32);
    raw(s, fp32_small);
    gemm_bf16(big.ta, big.tb, big.M, big.N, big.K, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f,
              want.data(), m.ldc);
    EXPECT_EQ(gemm_precision(), GemmPrecision::fp32);
    {
        GemmPrecisionScope scope(GemmPrecision::bf16, {{m.B.data(), m.B.size()}});
        EXPECT_EQ(gemm_precision(), GemmPrecision::bf16);
        EXPECT_TRUE(bf16_product_pays(big.M, big.N, big.K));
        EXPECT_FALSE(bf16_product_pays(small.M, small.N, small.K));
        for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the packed B
            std::vector<float> got = m.C;
            raw(m, got);
            EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0) << "rep " << rep;
        }
        std::vector<float> got_small = s.C;
        raw(s, got_small);
        EXPECT_EQ(std::memcmp(got_small.data(), fp32_small.data(), 4 * got_small.size()), 0);
    }
    EXPECT_EQ(gemm_precision(), GemmPrecision::fp32);
    std::vector<float> again = m.C;
    raw(m, again);
    EXPECT_EQ(std::memcmp(again.data(), fp32.data(), 4 * again.size()), 0);
    expect_close(m, want, true, "scope");
}

}  // namespace
}  // namespace test_gemm_bf16
}  // namespace nazar
