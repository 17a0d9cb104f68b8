// nazar's AVX512-BF16 kernel (bf16_internal.h): packing fp32 into bf16 pairs, rounded to nearest
// even with integer AVX-512F arithmetic (bit-identical to bf16_bits), and 12 x 32 register tiles
// of vdpbf16ps. Compiled with target attributes: the build stays x86-64-v3 and bf16.cpp calls
// here only when bf16_fast_available().
#include "nazar/core/gemm/bf16_internal.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cstring>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NZ_BF16_KERNEL 1
#endif

namespace nazar::bf16_detail {

#ifdef NZ_BF16_KERNEL
namespace {

constexpr int kNr = 32;   // columns per tile: two zmm accumulators per row
constexpr int kMr = 12;   // rows per tile: 24 accumulators, 2 B loads + 12 broadcasts per 24 ops
constexpr int kKc = 128;  // pairs per K block: a strip block of B is 16 KB and stays in L1
constexpr int kMc = 192;  // rows per M block: 96 KB of packed A stays in L2 across the strips

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define NZ_AVX512F __attribute__((target("avx512f")))
#define NZ_AVX512BF16 __attribute__((target("avx512f,avx512bf16")))

// 16 floats -> 16 dwords holding their bf16 bits (round to nearest even, NaN quieted).
NZ_AVX512F inline __m512i round16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb));
    r = _mm512_srli_epi32(r, 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
}

NZ_AVX512F inline __mmask16 first_n(int n) {
    return n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// n contiguous floats -> n bf16 (uint16), in order.
NZ_AVX512F void round_row(const float* x, int n, uint16_t* out) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                            _mm512_cvtepi32_epi16(round16(_mm512_loadu_ps(x + i))));
    if (i < n) {
        alignas(32) uint16_t tail[16];
        _mm256_store_si256(
            reinterpret_cast<__m256i*>(tail),
            _mm512_cvtepi32_epi16(round16(_mm512_maskz_loadu_ps(first_n(n - i), x + i))));
        std::memcpy(out + i, tail, sizeof(uint16_t) * static_cast<size_t>(n - i));
    }
}

// out[j] = pair (x0[j], x1[j]) for j < n (x1 null: high halves 0).
NZ_AVX512F void pair_rows(const float* x0, const float* x1, int n, uint32_t* out) {
    for (int j = 0; j < n; j += 16) {
        const __mmask16 m = first_n(n - j);
        const __m512i lo = round16(_mm512_maskz_loadu_ps(m, x0 + j));
        const __m512i hi = x1 ? _mm512_slli_epi32(round16(_mm512_maskz_loadu_ps(m, x1 + j)), 16)
                              : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(out + j, m, _mm512_or_si512(lo, hi));
    }
}

// Rows [m0, m1) of op(A), A stored K x M (ta): blocks of 64 rows so the packed rows stay in cache.
NZ_AVX512F void pack_a_t(int m0, int m1, int K, const float* A, int lda, PackedA& out) {
    uint32_t tmp[64];
    for (int b = m0; b < m1; b += 64) {
        const int nb = std::min(64, m1 - b);
        for (int kk = 0; kk < out.Kp; ++kk) {
            const float* r0 = A + static_cast<int64_t>(2 * kk) * lda + b;
            const float* r1 = 2 * kk + 1 < K ? r0 + lda : nullptr;
            pair_rows(r0, r1, nb, tmp);
            for (int j = 0; j < nb; ++j)
                out.data[static_cast<size_t>(b + j) * out.Kp + kk] = tmp[j];
        }
    }
}

// Strip s of op(B), B stored N x K (tb): 32 rows rounded in place order, then transposed.
NZ_AVX512F void pack_b_strip_t(int s, int K, int N, const float* B, int ldb, PackedB& out,
                               std::vector<uint32_t>& tmp) {
    const int Kp = out.Kp, n0 = s * kNr, nc = std::min(kNr, N - n0);
    tmp.assign(static_cast<size_t>(kNr) * Kp, 0u);
    for (int j = 0; j < nc; ++j)
        round_row(B + static_cast<int64_t>(n0 + j) * ldb, K,
                  reinterpret_cast<uint16_t*>(tmp.data() + static_cast<size_t>(j) * Kp));
    uint32_t* dst = out.data.data() + static_cast<size_t>(s) * Kp * kNr;
    for (int kk = 0; kk < Kp; ++kk)
        for (int j = 0; j < kNr; ++j) dst[kk * kNr + j] = tmp[static_cast<size_t>(j) * Kp + kk];
}

// Strip s of op(B), B stored K x N: each pair of B's rows interleaved.
NZ_AVX512F void pack_b_strip_n(int s, int K, int N, const float* B, int ldb, PackedB& out) {
    const int Kp = out.Kp, n0 = s * kNr, nc = std::min(kNr, N - n0);
    uint32_t* dst = out.data.data() + static_cast<size_t>(s) * Kp * kNr;
    for (int kk = 0; kk < Kp; ++kk) {
        const float* r0 = B + static_cast<int64_t>(2 * kk) * ldb + n0;
        const float* r1 = 2 * kk + 1 < K ? r0 + ldb : nullptr;
        pair_rows(r0, r1, nc, dst + kk * kNr);
        std::fill(dst + kk * kNr + nc, dst + (kk + 1) * kNr, 0u);
    }
}

// Rows [0, MR) of packed A (row stride lda pairs) times kc pairs of a strip into C (masks m0, m1
// for a short last strip): C = alpha acc + beta C on the first K block, C += alpha acc after.
template <int MR>
NZ_AVX512BF16 void tile(int kc, const uint32_t* A, int lda, const uint32_t* B, float* C, int ldc,
                        float alpha, float beta, bool first, __mmask16 m0, __mmask16 m1) {
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int kk = 0; kk < kc; ++kk) {
        const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(B + kk * kNr));
        const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(B + kk * kNr + 16));
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const __m512bh a = reinterpret_cast<__m512bh>(
                _mm512_set1_epi32(static_cast<int>(A[static_cast<int64_t>(r) * lda + kk])));
            c0[r] = _mm512_dpbf16_ps(c0[r], a, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], a, b1);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
        float* c = C + static_cast<int64_t>(r) * ldc;
        __m512 o0 = _mm512_mul_ps(va, c0[r]), o1 = _mm512_mul_ps(va, c1[r]);
        if (!first || beta != 0.0f) {
            const __m512 s = first ? vb : _mm512_set1_ps(1.0f);
            o0 = _mm512_fmadd_ps(s, _mm512_maskz_loadu_ps(m0, c), o0);
            o1 = _mm512_fmadd_ps(s, _mm512_maskz_loadu_ps(m1, c + 16), o1);
        }
        _mm512_mask_storeu_ps(c, m0, o0);
        _mm512_mask_storeu_ps(c + 16, m1, o1);
    }
}

using TileFn = void (*)(int, const uint32_t*, int, const uint32_t*, float*, int, float, float, bool,
                        __mmask16, __mmask16);
constexpr TileFn kTiles[kMr + 1] = {nullptr, tile<1>, tile<2>, tile<3>,  tile<4>,  tile<5>, tile<6>,
                                    tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

// Rows [r0, r1) x strips [s0, s1) of the product.
NZ_AVX512BF16 void block(const PackedA& a, const PackedB& b, int r0, int r1, int s0, int s1,
                         float alpha, float beta, float* C, int ldc) {
    const int Kp = a.Kp;
    for (int kb = 0; kb < Kp; kb += kKc) {
        const int kc = std::min(kKc, Kp - kb);
        for (int mb = r0; mb < r1; mb += kMc) {
            const int me = std::min(r1, mb + kMc);
            for (int s = s0; s < s1; ++s) {
                const int nc = std::min(kNr, b.N - s * kNr);
                const __mmask16 m0 = first_n(nc), m1 = first_n(std::max(0, nc - 16));
                const uint32_t* bs = b.data.data() + (static_cast<size_t>(s) * Kp + kb) * kNr;
                for (int m = mb; m < me; m += kMr) {
                    const int mr = std::min(kMr, me - m);
                    kTiles[mr](kc, a.data.data() + static_cast<size_t>(m) * Kp + kb, Kp, bs,
                               C + static_cast<int64_t>(m) * ldc + s * kNr, ldc, alpha, beta,
                               kb == 0, m0, m1);
                }
            }
        }
    }
}

#pragma GCC diagnostic pop

}  // namespace

void pack_a(bool ta, int M, int K, const float* A, int lda, PackedA& out) {
    out.M = M;
    out.K = K;
    out.Kp = (K + 1) / 2;
    out.data.resize(static_cast<size_t>(M) * out.Kp);
    parallel_for((M + 63) / 64, 1, [&](int64_t u0, int64_t u1) {
        const int m0 = static_cast<int>(u0) * 64, m1 = std::min(M, static_cast<int>(u1) * 64);
        if (ta) return pack_a_t(m0, m1, K, A, lda, out);
        for (int m = m0; m < m1; ++m) {
            uint32_t* row = out.data.data() + static_cast<size_t>(m) * out.Kp;
            row[out.Kp - 1] = 0;  // the high half of an odd K's last pair
            round_row(A + static_cast<int64_t>(m) * lda, K, reinterpret_cast<uint16_t*>(row));
        }
    });
}

void pack_b(bool tb, int K, int N, const float* B, int ldb, PackedB& out) {
    out.N = N;
    out.K = K;
    out.Kp = (K + 1) / 2;
    out.strips = (N + kNr - 1) / kNr;
    out.data.resize(static_cast<size_t>(out.strips) * out.Kp * kNr);
    parallel_for(out.strips, 1, [&](int64_t u0, int64_t u1) {
        std::vector<uint32_t> tmp;
        for (int s = static_cast<int>(u0); s < u1; ++s) {
            if (tb)
                pack_b_strip_t(s, K, N, B, ldb, out, tmp);
            else
                pack_b_strip_n(s, K, N, B, ldb, out);
        }
    });
}

void round_matrix(const float* x, int rows, int cols, int ld, uint16_t* out) {
    parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) round_row(x + r * ld, cols, out + r * cols);
    });
}

void gemm_packed(const PackedA& a, const PackedB& b, float alpha, float beta, float* C, int ldc) {
    const int M = a.M, S = b.strips, T = num_threads();
    if (T < 2 || 2.0 * M * b.N * a.K < 1.5e6) return block(a, b, 0, M, 0, S, alpha, beta, C, ldc);
    if (S >= 2 * T) {
        parallel_for(S, 1, [&](int64_t u0, int64_t u1) {
            block(a, b, 0, M, static_cast<int>(u0), static_cast<int>(u1), alpha, beta, C, ldc);
        });
        return;
    }
    parallel_for((M + kMr - 1) / kMr, 1, [&](int64_t u0, int64_t u1) {
        block(a, b, static_cast<int>(u0) * kMr, std::min(M, static_cast<int>(u1) * kMr), 0, S,
              alpha, beta, C, ldc);
    });
}

#else  // no x86 intrinsics: bf16.cpp never calls these (bf16_fast_available() is false)

void pack_a(bool, int, int, const float*, int, PackedA&) {}
void pack_b(bool, int, int, const float*, int, PackedB&) {}
void round_matrix(const float*, int, int, int, uint16_t*) {}
void gemm_packed(const PackedA&, const PackedB&, float, float, float*, int) {}

#endif

}  // namespace nazar::bf16_detail
