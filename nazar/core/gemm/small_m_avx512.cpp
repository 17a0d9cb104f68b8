// The small-M blocks of small_m_avx2.cpp on AVX-512, chosen at run time (the build's baseline
// stays x86-64-v3). Same contract (small_m_avx2.cpp): each C entry is hsum8(even + odd) + tail,
// `even` the 8-lane accumulator of the 8-float blocks k = 0, 16, 32, ... and `odd` that of
// k = 8, 24, 40, ... Here one zmm register per entry holds both, even in its low half and odd
// in its high half, so 16 floats of a row of A and of a row of B are plain 512-bit loads (B's
// rows start 64-byte aligned: one cache line per load); a last block at k = K8 - 8 with no odd
// partner goes to the low half alone (a masked FMA), and the halves are added before hsum8.
// Same FMAs in the same order per lane as the AVX2 path: bit-identical to it.
#include "nazar/core/gemm/internal.h"
#include "nazar/core/simd.h"

namespace nazar::gemm_detail {

#ifdef NZ_SIMD_AVX512
namespace {

// GCC 12's AVX-512 intrinsic headers: see simd.h (here _mm512_castps512_ps256 trips the
// definite -Wuninitialized too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// MB rows of A (m0 ..) against J rows of B (n ..): MB·J accumulators, MB + J loads per MB·J
// FMAs per 16 floats of K. The panel of abt_panel512 is 8 rows of B, 8 / J blocks. kPrefetch:
// the J rows that follow (the next block's) are prefetched, one line per row and step.
template <int MB, int J, bool kPrefetch>
NZ_TARGET_AVX512 void abt_block512(int m0, int n, int K, float alpha, const float* A, int lda,
                                   const float* B, int ldb, float beta, float* C, int ldc) {
    const int K8 = K & ~7, K16 = K & ~15;
    __m512 acc[MB][J];
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < J; ++j) acc[i][j] = _mm512_setzero_ps();
    const float* x[MB];
    const float* w[J];
    for (int i = 0; i < MB; ++i) x[i] = A + static_cast<int64_t>(m0 + i) * lda;
    for (int j = 0; j < J; ++j) w[j] = B + static_cast<int64_t>(n + j) * ldb;
    const int64_t ahead = static_cast<int64_t>(J) * ldb;
    for (int k = 0; k < K16; k += 16) {
        if (kPrefetch)
            for (int j = 0; j < J; ++j)
                _mm_prefetch(reinterpret_cast<const char*>(w[j] + ahead + k), _MM_HINT_T0);
        __m512 wv[J];
        for (int j = 0; j < J; ++j) wv[j] = _mm512_loadu_ps(w[j] + k);
        for (int i = 0; i < MB; ++i) {
            const __m512 xv = _mm512_loadu_ps(x[i] + k);
            for (int j = 0; j < J; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (K8 > K16) {  // the last 8-float block: even, the low half only
        const __mmask16 lo = 0x00ff;
        for (int i = 0; i < MB; ++i) {
            const __m512 xv = _mm512_maskz_loadu_ps(lo, x[i] + K16);
            for (int j = 0; j < J; ++j)
                acc[i][j] =
                    _mm512_mask3_fmadd_ps(xv, _mm512_maskz_loadu_ps(lo, w[j] + K16), acc[i][j], lo);
        }
    }
    // hsum8(even + odd) of the J entries of each row of A at once, the same additions in the
    // same pairs as hsum8's: even + odd, then lanes 0-3 + 4-7, then (0 + 2) + (1 + 3).
    const __m512i gather = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
    const __mmask16 row = static_cast<__mmask16>((1u << J) - 1);
    for (int i = 0; i < MB; ++i) {
        __m512 y[J / 2], u[J / 4];
        for (int p = 0; p < J / 2; ++p) {  // [even + odd of entry 2p | of entry 2p + 1]
            const __m512 a = acc[i][2 * p], b = acc[i][2 * p + 1];
            y[p] =
                _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
        }
        for (int q = 0; q < J / 4; ++q) {  // lanes 0-3 + lanes 4-7 of four entries
            const __m512 a = y[2 * q], b = y[2 * q + 1];
            const __m512 s =
                _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd));
            const __m512 t = _mm512_add_ps(s, _mm512_permute_ps(s, 0x4e));  // (0 + 2), (1 + 3)
            u[q] = _mm512_add_ps(t, _mm512_permute_ps(t, 0xb1));  // lane 0 of each 4: the sum
        }
        __m512 v = J == 4 ? _mm512_permutexvar_ps(gather, u[0])
                          : _mm512_permutex2var_ps(u[0], gather, u[J / 4 - 1]);
        if (K8 < K) {
            alignas(64) float tail[16] = {};
            for (int j = 0; j < J; ++j) tail[j] = dot_tail(x[i], w[j], K8, K);
            v = _mm512_add_ps(v, _mm512_load_ps(tail));
        } else {
            v = _mm512_add_ps(v, _mm512_setzero_ps());  // hsum8 + a zero tail, as the AVX2 path
        }
        float* c = C + static_cast<int64_t>(m0 + i) * ldc + n;
        const __m512 av = _mm512_mul_ps(_mm512_set1_ps(alpha), v);  // scale_add
        _mm512_mask_storeu_ps(c, row,
                              beta == 0.0f ? av
                                           : _mm512_fmadd_ps(_mm512_set1_ps(beta),
                                                             _mm512_maskz_loadu_ps(row, c), av));
    }
}
#pragma GCC diagnostic pop

// The 8 rows of B of a panel in blocks of J, MB·J + J + 1 <= 32 zmm registers. A block
// prefetches the rows of the next block (J rows on: the next panel's at J = 8, the other half
// of this panel or the first half of the next at J = 4), one cache line per row and step, while
// it reads its own: short row streams that restart every block, too short for the hardware
// prefetcher to catch when B (the 16 MB generator) has been pushed out of L3 by the rest of the
// step. One block ahead, not one panel: at J = 4 (3 to 5 rows of A) the 8-row distance made the
// step's four products take 8-21% longer on Zen 5 (docs/performance-log.md, "small-M
// prefetch distance"); 16 rows ahead at J = 8 was slower too. Only the first block of rows of A
// prefetches (a second one finds the rows in L1), and only rows below n_next (the end of this
// thread's range). Prefetches change no arithmetic.
template <int MB, int J>
void panel(int m0, int n, int n_next, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    for (int j = 0; j < 8; j += J)
        if (m0 == 0 && n + j + 2 * J <= n_next)
            abt_block512<MB, J, true>(m0, n + j, K, alpha, A, lda, B, ldb, beta, C, ldc);
        else
            abt_block512<MB, J, false>(m0, n + j, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

void abt_panel512(int mb, int m0, int n, int n_next, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
    switch (mb) {
        case 1:
            return panel<1, 8>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 2:
            return panel<2, 8>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 3:
            return panel<3, 4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 4:
            return panel<4, 4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        default:
            return panel<5, 4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}
#else
void abt_panel512(int, int, int, int, int, float, const float*, int, const float*, int, float,
                  float*, int) {}
#endif

}  // namespace nazar::gemm_detail
