// Reduced-precision weight products (nazar/core/gemm/packed.h) against an fp64 oracle, on the
// portable path everywhere and on the AVX512-BF16 / AVX512-VNNI kernels where the CPU has them
// (skipped with a message otherwise). Stated bounds, per output element c = alpha Σ_k a_k w_k:
//   bf16: against the fp64 sum of the bf16-ROUNDED inputs, |err| <= 2 K 2^-24 Σ|a_k w_k| (fp32
//         accumulation only), and against the exact inputs |err| <= 2^-7 Σ|a_k w_k| + that.
//   int8: against the exact inputs, |err| <= 0.5 s_n Σ|a_k| + 0.5 r_m Σ|w_k| + 0.25 k r_m s_n
//         (half a quantization step on each side, s_n = max|w_n·| / 127 per row of W,
//         r_m = max|a_m·| / 127 per row of A's block), plus 1e-5 relative for the fp32
//         epilogue; and fast == portable bit for bit (the int32 sums are exact either way).
// Sub-blocks of W (rows n0..n1, columns k0..k0+k, unaligned), alpha/beta, padded ldc (columns
// outside the block untouched), thread counts, and the registry behind gemm_raw / gemm_xwt.
#include "nazar/core/blas.h"
#include "nazar/core/check.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace nazar {
namespace test_gemm_packed {
namespace {

struct FastGuard {
    ~FastGuard() { set_packed_fast(true); }
};
struct ThreadGuard {
    int saved = num_threads();
    ~ThreadGuard() { set_num_threads(saved); }
};

// Row magnitudes spread over three decades, so per-row scales matter.
std::vector<float> random_rows(int rows, int cols, uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), mag(-3.0f, 0.0f);
    std::vector<float> v(static_cast<std::size_t>(rows) * cols);
    for (int r = 0; r < rows; ++r) {
        const float s = std::pow(10.0f, mag(g));
        for (int c = 0; c < cols; ++c) v[static_cast<std::size_t>(r) * cols + c] = s * u(g);
    }
    return v;
}

double rnd_bf16(float x) {
    return bf16_to_float(float_to_bf16(x));
}

struct Case {
    int M, N, K;        // A: M rows, W: N x K
    int n0, n1, k0, k;  // the block of W
    float alpha, beta;
};

// Runs one case on the current path, checks every element against its bound, returns C.
std::vector<float> check_case(Precision p, const Case& c, uint32_t seed) {
    const int lda = c.k + 3, NB = c.n1 - c.n0, ldc = NB + 5;
    const std::vector<float> W = random_rows(c.N, c.K, seed);
    const std::vector<float> A = random_rows(c.M, lda, seed + 1);
    std::vector<float> C = random_rows(c.M, ldc, seed + 2);
    const std::vector<float> C0 = C;
    const PackedMatrix pm = PackedMatrix::pack(W.data(), c.N, c.K, c.K, p);
    gemm_packed(c.M, c.n0, c.n1, c.k0, c.k, c.alpha, A.data(), lda, pm, c.beta, C.data(), ldc);
    int bad = 0;
    for (int m = 0; m < c.M; ++m) {
        const float* a = A.data() + static_cast<std::size_t>(m) * lda;
        double amax = 0;
        for (int i = 0; i < c.k; ++i) amax = std::max(amax, std::fabs(double{a[i]}));
        const double r = amax / 127;
        for (int j = 0; j < ldc; ++j) {
            const std::size_t at = static_cast<std::size_t>(m) * ldc + j;
            if (j >= NB) {  // padding columns: untouched
                EXPECT_EQ(C[at], C0[at]) << "m " << m << " padding column " << j;
                continue;
            }
            const float* w = W.data() + static_cast<std::size_t>(c.n0 + j) * c.K + c.k0;
            double exact = 0, rounded = 0, mag = 0, sa = 0, sw = 0, wmax = 0;
            for (int n = 0; n < c.K; ++n)
                wmax = std::max(wmax,
                                std::fabs(double{W[static_cast<std::size_t>(c.n0 + j) * c.K + n]}));
            for (int i = 0; i < c.k; ++i) {
                exact += double{a[i]} * w[i];
                rounded += rnd_bf16(a[i]) * rnd_bf16(w[i]);
                mag += std::fabs(double{a[i]} * w[i]);
                sa += std::fabs(double{a[i]});
                sw += std::fabs(double{w[i]});
            }
            const double s = wmax / 127, base = c.beta * double{C0[at]};
            const double got = C[at];
            double want, bound;
            if (p == Precision::bf16) {
                const double acc = 2.0 * c.k * std::ldexp(1.0, -24) * mag;
                want = c.alpha * rounded + base;
                bound = std::fabs(c.alpha) * acc + 1e-6 * std::fabs(base) + 1e-30;
                const double exact_bound =
                    std::fabs(c.alpha) * (std::ldexp(1.0, -7) * mag + acc) + bound;
                if (std::fabs(got - (c.alpha * exact + base)) > exact_bound && ++bad < 5)
                    ADD_FAILURE() << "bf16 vs exact inputs, m " << m << " n " << j << ": got "
                                  << got << " want " << c.alpha * exact + base;
            } else {
                want = c.alpha * exact + base;
                bound = std::fabs(c.alpha) * (0.5 * s * sa + 0.5 * r * sw + 0.25 * c.k * r * s) *
                            1.0001 +
                        1e-5 * (std::fabs(c.alpha) * mag + std::fabs(base)) + 1e-30;
            }
            if (std::fabs(got - want) > bound && ++bad < 5)
                ADD_FAILURE() << precision_name(p) << " m " << m << " n " << j << " (M " << c.M
                              << " N " << c.N << " K " << c.K << " block " << c.n0 << ".." << c.n1
                              << " x " << c.k0 << "+" << c.k << "): got " << got << " want " << want
                              << " bound " << bound;
        }
    }
    EXPECT_EQ(bad, 0);
    return C;
}

const std::vector<Case>& cases() {
    static const std::vector<Case> v = {
        {1, 16, 32, 0, 16, 0, 32, 1.0f, 0.0f},        // one panel, one row
        {5, 1536, 768, 0, 1536, 0, 768, 1.0f, 1.0f},  // a beam-5 step, bias already in C
        {7, 50, 37, 0, 50, 0, 37, 0.5f, 0.0f},        // ragged N and K, 7 rows (6 + 1)
        {13, 100, 301, 3, 97, 5, 290, -1.25f, 0.5f},  // unaligned block of rows and columns
        {64, 96, 512, 16, 80, 256, 256, 1.0f, 1.0f},  // W_ih's second column block
        {2, 33, 9, 1, 32, 1, 7, 2.0f, -1.0f},         // tiny, odd offsets everywhere
        {320, 200, 130, 0, 200, 0, 130, 1.0f, 0.0f},  // many rows, split over the pool
    };
    return v;
}

void run_all(Precision p, bool fast) {
    FastGuard keep;
    set_packed_fast(fast);
    ASSERT_STREQ(packed_kernel(p),
                 fast ? (p == Precision::int8 ? "avx512-vnni" : "avx512-bf16") : "portable");
    uint32_t seed = 11;
    for (const Case& c : cases()) check_case(p, c, seed += 7);
}

TEST(GemmPacked, Bf16Portable) {
    run_all(Precision::bf16, false);
}
TEST(GemmPacked, Int8Portable) {
    run_all(Precision::int8, false);
}
TEST(GemmPacked, Bf16Fast) {
    if (!packed_fast_available(Precision::bf16))
        GTEST_SKIP() << "this CPU lacks AVX512-BF16 (with AVX-512 F/BW/VL/DQ): portable path only";
    run_all(Precision::bf16, true);
}
TEST(GemmPacked, Int8Fast) {
    if (!packed_fast_available(Precision::int8))
        GTEST_SKIP() << "this CPU lacks AVX512-VNNI (with AVX-512 F/BW/VL/DQ): portable path only";
    run_all(Precision::int8, true);
}

// int8: the fast kernel's int32 sums and epilogue equal the portable path's bit for bit.
TEST(GemmPacked, Int8FastEqualsPortable) {
    if (!packed_fast_available(Precision::int8))
        GTEST_SKIP() << "this CPU lacks AVX512-VNNI (with AVX-512 F/BW/VL/DQ): portable path only";
    FastGuard keep;
    uint32_t seed = 5;
    for (const Case& c : cases()) {
        set_packed_fast(true);
        const std::vector<float> fast = check_case(Precision::int8, c, seed);
        set_packed_fast(false);
        const std::vector<float> slow = check_case(Precision::int8, c, seed);
        ASSERT_EQ(fast, slow) << "M " << c.M << " N " << c.N << " K " << c.K;
        seed += 3;
    }
}

// int8 on AMX tiles: the same int32 sums and epilogue as AVX512-VNNI, so the same bits, for row
// counts that fill 16-row tiles, leave a partial block or take one tile, and K that ends in a
// partial chunk of 16 groups or not.
TEST(GemmPacked, Int8AmxEqualsVnni) {
    if (!packed_amx_available(Precision::int8))
        GTEST_SKIP() << "this CPU (or Linux) gives no AMX-INT8 tiles: AVX512-VNNI only";
    struct AmxGuard {
        ~AmxGuard() { set_packed_amx(true); }
    } keep;
    std::vector<Case> all = cases();
    all.push_back({40, 70, 1000, 0, 70, 0, 1000, 1.0f, 0.0f});  // 16 + 16 + 8 rows; 250 groups
    all.push_back({16, 64, 256, 0, 64, 0, 256, 1.0f, 0.5f});    // one full tile, whole chunks
    all.push_back({33, 48, 64, 5, 43, 3, 60, 0.75f, 0.0f});     // odd block, one partial chunk
    uint32_t seed = 9;
    for (const Case& c : all) {
        set_packed_amx(true);
        ASSERT_STREQ(
            packed_kernel(Precision::int8, std::max(c.M, packed_amx_min_rows(Precision::int8))),
            "amx-int8");
        const std::vector<float> amx = check_case(Precision::int8, c, seed);
        set_packed_amx(false);
        ASSERT_STREQ(packed_kernel(Precision::int8, c.M), "avx512-vnni");
        const std::vector<float> vnni = check_case(Precision::int8, c, seed);
        if (c.M >= packed_amx_min_rows(Precision::int8)) {
            ASSERT_EQ(amx, vnni) << "M " << c.M << " N " << c.N << " K " << c.K;
        }
        seed += 5;
    }
}

// bf16 on AMX tiles: every element within the bf16 bounds of check_case (another summation order
// than AVX512-BF16), on the same shapes.
TEST(GemmPacked, Bf16Amx) {
    if (!packed_amx_available(Precision::bf16))
        GTEST_SKIP() << "this CPU (or Linux) gives no AMX-BF16 tiles: AVX512-BF16 only";
    uint32_t seed = 13;
    for (const Case& c : cases()) {
        ASSERT_STREQ(packed_kernel(Precision::bf16, c.M),
                     c.M >= packed_amx_min_rows(Precision::bf16) ? "amx-bf16" : "avx512-bf16");
        check_case(Precision::bf16, c, seed += 3);
    }
}

// Each output is computed by one thread: the result does not depend on the thread count.
TEST(GemmPacked, ThreadCountInvariant) {
    ThreadGuard keep;
    const Case c{320, 512, 256, 0, 512, 0, 256, 1.0f, 0.0f};
    for (Precision p : {Precision::bf16, Precision::int8}) {
        set_num_threads(1);
        const std::vector<float> one = check_case(p, c, 99);
        set_num_threads(2);
        const std::vector<float> two = check_case(p, c, 99);
        EXPECT_EQ(one, two) << precision_name(p);
    }
}

// Quantized file contents round-trip: from_int8 / from_bf16 hold what pack made.
TEST(GemmPacked, FromStoredValues) {
    const int N = 21, K = 19;
    const std::vector<float> W = random_rows(N, K, 3);
    const PackedMatrix q = PackedMatrix::pack(W.data(), N, K, K, Precision::int8);
    std::vector<int8_t> qs(static_cast<std::size_t>(N) * K);
    std::vector<uint16_t> bs(qs.size());
    for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k) {
            qs[static_cast<std::size_t>(n) * K + k] = q.q(n, k);
            bs[static_cast<std::size_t>(n) * K + k] = float_to_bf16(W[n * K + k]);
            // per-row symmetric scale: max |w| maps to ±127
            EXPECT_LE(std::abs(q.q(n, k)), 127);
        }
    const PackedMatrix q2 = PackedMatrix::from_int8(qs.data(), q.scales(), N, K);
    const PackedMatrix b2 = PackedMatrix::from_bf16(bs.data(), N, K);
    std::vector<float> r1(K), r2(K);
    for (int n = 0; n < N; ++n) {
        q.dequantize_row(n, r1.data());
        q2.dequantize_row(n, r2.data());
        EXPECT_EQ(r1, r2);
        b2.dequantize_row(n, r2.data());
        for (int k = 0; k < K; ++k) {
            EXPECT_EQ(r2[k], static_cast<float>(rnd_bf16(W[n * K + k])));
            EXPECT_NEAR(r1[k], W[n * K + k], 0.5 * q.scales()[n] * 1.0001);
        }
    }
}

// adopt_rows (a quantized file's matrices at load) makes the matrix from_int8 / from_bf16 make,
// byte for byte, with a partial last panel and with K that does not fill whole groups (copied),
// and in the bytes it was given when they have room for the padded panels (no second copy).
TEST(GemmPacked, AdoptRowsPacksInPlaceAsFromStoredValues) {
    struct Case {
        Precision p;
        int N, K;
        bool in_place;
    };
    for (const Case c : {Case{Precision::int8, 21, 20, true}, Case{Precision::int8, 32, 16, true},
                         Case{Precision::int8, 7, 19, false}, Case{Precision::bf16, 21, 6, true},
                         Case{Precision::bf16, 16, 5, false}}) {
        const bool int8 = c.p == Precision::int8;
        const std::size_t row_bytes = static_cast<std::size_t>(c.K) * (int8 ? 1 : 2);
        std::string rows(c.N * row_bytes, '\0');
        Rng rng(static_cast<uint64_t>(c.N * 100 + c.K));
        for (char& b : rows) b = static_cast<char>(rng.next_u64() & 0xff);
        std::vector<float> scales(c.N);
        for (int n = 0; n < c.N; ++n) scales[n] = 0.01f * static_cast<float>(n + 1);
        const PackedMatrix want =
            int8
                ? PackedMatrix::from_int8(reinterpret_cast<const int8_t*>(rows.data()),
                                          scales.data(), c.N, c.K)
                : PackedMatrix::from_bf16(reinterpret_cast<const uint16_t*>(rows.data()), c.N, c.K);
        std::string given = rows;
        given.reserve((c.N + 15) / 16 * 16 * row_bytes);
        const char* const where = given.data();
        const PackedMatrix got = PackedMatrix::adopt_rows(c.p, std::move(given),
                                                          int8 ? scales.data() : nullptr, c.N, c.K);
        const std::string what = fmt::format("{} {} x {}", precision_name(c.p), c.N, c.K);
        ASSERT_EQ(got.groups(), want.groups()) << what;
        ASSERT_EQ(got.bytes(), want.bytes()) << what;
        const std::size_t panel_bytes = static_cast<std::size_t>(want.groups()) * 64;
        for (int q = 0; q < (c.N + 15) / 16; ++q)
            EXPECT_EQ(std::memcmp(got.panel(q), want.panel(q), panel_bytes), 0)
                << what << " panel " << q;
        if (int8) {
            EXPECT_EQ(std::memcmp(got.scales(), want.scales(), c.N * sizeof(float)), 0) << what;
        }
        EXPECT_EQ(reinterpret_cast<const char*>(got.panel(0)) == where, c.in_place) << what;
    }
    EXPECT_THROW(PackedMatrix::adopt_rows(Precision::int8, std::string(10, '\0'), nullptr, 3, 4),
                 Error);
}

// gemm_raw / gemm_xwt on a registered matrix (or a block of it) run the packed product; once
// the PackedWeights object is gone the same call is fp32 again.
TEST(GemmPacked, RegistryRoutesProducts) {
    const int M = 9, N = 70, K = 40;
    const std::vector<float> W = random_rows(N, K, 8), A = random_rows(M, K, 9);
    std::vector<float> fp32(M * N), packed(M * N), want(M * N), after(M * N);
    gemm_raw(false, true, M, N, K, 1.0f, A.data(), K, W.data(), K, 0.0f, fp32.data(), N);
    {
        PackedWeights pw;
        pw.add(W.data(), N, K, Precision::int8);
        EXPECT_EQ(pw.count(), 1u);
        const PackedMatrix pm = PackedMatrix::pack(W.data(), N, K, K, Precision::int8);
        gemm_packed(M, 0, N, 0, K, 1.0f, A.data(), K, pm, 0.0f, want.data(), N);
        gemm_raw(false, true, M, N, K, 1.0f, A.data(), K, W.data(), K, 0.0f, packed.data(), N);
        EXPECT_EQ(packed, want);
        EXPECT_NE(packed, fp32);
        // a block: rows 16..47, columns 8..31 of W
        std::vector<float> blk(M * 32), blk_want(M * 32);
        gemm_xwt(M, 32, 24, 1.0f, A.data(), K, W.data() + 16 * K + 8, K, {}, 0.0f, blk.data(), 32);
        gemm_packed(M, 16, 48, 8, 24, 1.0f, A.data(), K, pm, 0.0f, blk_want.data(), 32);
        EXPECT_EQ(blk, blk_want);
    }
    gemm_raw(false, true, M, N, K, 1.0f, A.data(), K, W.data(), K, 0.0f, after.data(), N);
    EXPECT_EQ(after, fp32);
}

TEST(GemmPacked, ParsePrecision) {
    EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
    EXPECT_EQ(parse_precision("int8"), Precision::int8);
    EXPECT_EQ(parse_precision("fp32"), Precision::fp32);
    EXPECT_THROW(parse_precision("fp16"), Error);
}

}  // namespace
}  // namespace test_gemm_packed
}  // namespace nazar
