// The small-M blocks of small_m_avx2.cpp on AVX-512, chosen at run time (the build's baseline
// stays x86-64-v3): a zmm register holds two rows of B side by side ([B_j chunk | B_j+1 chunk])
// against a row chunk of A broadcast to both halves, so each 8-float half is exactly the 8-lane
// accumulator of the AVX2 kernel (same FMAs, same order) and the halves are reduced by the same
// hsum8: results are bit-identical to the AVX2 path, with half the FMA instructions and 32
// registers (MB x 4 pairs = 8 rows of B per block).
#include "nazar/core/gemm/internal.h"
#include "nazar/core/simd.h"

namespace nazar::gemm_detail {

#ifdef NZ_SIMD_AVX512
namespace {

// GCC 12's AVX-512 intrinsic headers: see simd.h.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int MB>
NZ_TARGET_AVX512 void abt_block512(int m0, int n, int n_next, int K, float alpha, const float* A,
                                   int lda, const float* B, int ldb, float beta, float* C,
                                   int ldc) {
    constexpr int P = 4;
    const int K8 = K & ~7;
    __m512 acc[MB][P];
    for (int i = 0; i < MB; ++i)
        for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
    const float* x[MB];
    const float* w[2 * P];
    for (int i = 0; i < MB; ++i) x[i] = A + static_cast<int64_t>(m0 + i) * lda;
    for (int j = 0; j < 2 * P; ++j) w[j] = B + static_cast<int64_t>(n + j) * ldb;
    // The next panel of B (rows n + 8 .. n + 15, the same K) is prefetched while this one is
    // used, one cache line per row every other k-step: eight short row streams restart every
    // panel, too short for the hardware prefetcher to catch when B (the 16 MB generator) has
    // been pushed out of L3 by the rest of the step. Prefetches change no arithmetic.
    const bool prefetch = m0 == 0 && n_next > n;
    for (int k = 0; k < K8; k += 8) {
        if (prefetch && (k & 15) == 0)
            for (int j = 0; j < 2 * P && n + 2 * P + j < n_next; ++j)
                _mm_prefetch(
                    reinterpret_cast<const char*>(w[j] + static_cast<int64_t>(2 * P) * ldb + k),
                    _MM_HINT_T0);
        __m512 wv[P];
        for (int p = 0; p < P; ++p)
            wv[p] = _mm512_insertf32x8(_mm512_zextps256_ps512(_mm256_loadu_ps(w[2 * p] + k)),
                                       _mm256_loadu_ps(w[2 * p + 1] + k), 1);
        for (int i = 0; i < MB; ++i) {
            const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x[i] + k));
            for (int p = 0; p < P; ++p) acc[i][p] = _mm512_fmadd_ps(xv, wv[p], acc[i][p]);
        }
    }
    for (int i = 0; i < MB; ++i)
        for (int p = 0; p < P; ++p)
            for (int h = 0; h < 2; ++h) {
                const int j = 2 * p + h;
                const __m256 half = h == 0 ? _mm512_castps512_ps256(acc[i][p])
                                           : _mm512_extractf32x8_ps(acc[i][p], 1);
                float& c = C[static_cast<int64_t>(m0 + i) * ldc + n + j];
                const float v = simd::hsum8(half) + dot_tail(x[i], w[j], K8, K);
                c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
            }
}
#pragma GCC diagnostic pop

}  // namespace

void abt_panel512(int mb, int m0, int n, int n_next, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
    switch (mb) {
        case 1:
            return abt_block512<1>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 2:
            return abt_block512<2>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 3:
            return abt_block512<3>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 4:
            return abt_block512<4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
        default:
            return abt_block512<5>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}
#else
void abt_panel512(int, int, int, int, int, float, const float*, int, const float*, int, float,
                  float*, int) {}
#endif

}  // namespace nazar::gemm_detail
