// C = alpha A Bᵀ + beta C with at most 8 rows (kSmallGemmRows): decoding's per-step products,
// one row per sentence or beam. OpenBLAS packs all of B (e.g. the 8000 x 512 generator, 16 MB)
// on every call, which costs more than the product itself at M <= 8; here B is read once, row by
// row, straight from memory, and A's rows stay in L1.
//
// Every C entry is hsum8(even + odd) + its scalar tail, where `even` is one 8-lane accumulator
// over the 8-float blocks k = 0, 16, 32, ... in order and `odd` one over k = 8, 24, 40, ... (a
// last block with no odd partner goes to `even`), whatever the blocking, the row count or the
// lane width: results are bit-identical across all of them. small_m_avx512.cpp keeps both in
// one zmm register (16 floats of a row per load); here a block runs the even blocks of K first
// and the odd ones after, the second pass reading the block's rows of B from L1.
#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/simd.h"

#include <algorithm>
#include <atomic>

namespace nazar {
namespace gemm_detail {

namespace {

std::atomic<bool>& avx512_flag() {  // decided on the first call, unless NAZAR_SMALL_GEMM=avx2
    static std::atomic<bool> on{avx512_allowed() && !switches().small_gemm_avx2};
    return on;
}

#ifdef NZ_SIMD_AVX2
using simd::hsum8;

// The 8-lane accumulators acc[i][j] of rows x[i] of A against rows w[j] of B over the 8-float
// blocks k = k0, k0 + 16, ... below K8: the even (k0 = 0) or the odd (k0 = 8) blocks.
template <int MB, int J>
void abt_pass(const float* const (&x)[MB], const float* const (&w)[J], int k0, int K8, int np,
              int64_t ahead, __m256 (&acc)[MB][J]) {
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < J; ++j) acc[i][j] = _mm256_setzero_ps();
    for (int k = k0; k < K8; k += 16) {
        for (int j = 0; j < np; ++j)
            _mm_prefetch(reinterpret_cast<const char*>(w[j] + ahead + k), _MM_HINT_T0);
        __m256 wv[J];
        for (int j = 0; j < J; ++j) wv[j] = _mm256_loadu_ps(w[j] + k);
        for (int i = 0; i < MB; ++i) {
            const __m256 xv = _mm256_loadu_ps(x[i] + k);
            for (int j = 0; j < J; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
}

// MB rows of A (m0..m0+MB) against J rows of B (n..n+J), register-blocked: per 8-float step of
// K, MB + J loads feed MB·J FMAs (one row of A against 4 rows of B needed 5 loads per 4 FMAs and
// was load-bound).
template <int MB, int J>
void abt_block(int m0, int n, int n_next, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
    const int K8 = K & ~7;
    const float* x[MB];
    const float* w[J];
    for (int i = 0; i < MB; ++i) x[i] = A + static_cast<int64_t>(m0 + i) * lda;
    for (int j = 0; j < J; ++j) w[j] = B + static_cast<int64_t>(n + j) * ldb;
    // The even pass prefetches the same rows of the next 12-row group, one cache line per row
    // and step (see small_m_avx512.cpp); the odd pass finds the rows in L1.
    const int np = m0 == 0 ? std::clamp(n_next - n - 12, 0, J) : 0;  // rows j: n + 12 + j < n_next
    __m256 even[MB][J], odd[MB][J];
    abt_pass<MB, J>(x, w, 0, K8, np, 12 * static_cast<int64_t>(ldb), even);
    abt_pass<MB, J>(x, w, 8, K8, 0, 0, odd);
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < J; ++j) {
            float& c = C[static_cast<int64_t>(m0 + i) * ldc + n + j];
            const float v =
                hsum8(_mm256_add_ps(even[i][j], odd[i][j])) + dot_tail(x[i], w[j], K8, K);
            c = scale_add(alpha, v, beta, c);
        }
}

// (MB, J) blocks, MB·J + J + 1 <= 16 ymm registers: M = 1: 1x4, 2: 2x4, 3: 3x3, 4: 4x3, 5: 5x2
// (beam 5 at batch 1). Returns J, the rows of B done.
int block(int m0, int mb, int n, int n_next, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
    switch (mb) {
        case 1:
            abt_block<1, 4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return 4;
        case 2:
            abt_block<2, 4>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return 4;
        case 3:
            abt_block<3, 3>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return 3;
        case 4:
            abt_block<4, 3>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return 3;
        default:
            abt_block<5, 2>(m0, n, n_next, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return 2;
    }
}

// Rows [n, n4) of B, one at a time, every row of A: the 8-lane dot product and its tail.
void one_row_at_a_time(int M, int n, int n4, int K, float alpha, const float* A, int lda,
                       const float* B, int ldb, float beta, float* C, int ldc) {
    for (; n < n4; ++n)
        for (int m = 0; m < M; ++m) {
            const float* x = A + static_cast<int64_t>(m) * lda;
            const float* w = B + static_cast<int64_t>(n) * ldb;
            const int K8 = K & ~7;
            __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
            int k = 0;
            for (; k + 16 <= K8; k += 16) {
                even = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), even);
                odd = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), _mm256_loadu_ps(w + k + 8), odd);
            }
            if (k < K8)
                even = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), even);
            float& c = C[static_cast<int64_t>(m) * ldc + n];
            c = scale_add(alpha, hsum8(_mm256_add_ps(even, odd)) + dot_tail(x, w, K8, K), beta, c);
        }
}

// The vector part of small_m_abt; returns the first row of B left to the scalar loop.
int small_m_vector(int M, int n0, int n1, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    int n = n0;
    // 6 = 3+3, 7 = 4+3, 8 = 4+4 rows of A
    int mbs[2] = {M, 0};
    if (M == 6) mbs[0] = 3, mbs[1] = 3;
    if (M == 7) mbs[0] = 4, mbs[1] = 3;
    if (M == 8) mbs[0] = 4, mbs[1] = 4;
#ifdef NZ_SIMD_AVX512
    if (avx512_flag().load(std::memory_order_relaxed))
        for (; n + 8 <= n1; n += 8)
            for (int i = 0, m0 = 0; i < 2 && mbs[i] > 0; m0 += mbs[i], ++i)
                abt_panel512(mbs[i], m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
    // n advances by 12 (a multiple of every J), so each group of 12 rows of B is read from
    // memory once and from L1 after.
    for (; n + 12 <= n1; n += 12)
        for (int i = 0, m0 = 0; i < 2 && mbs[i] > 0; m0 += mbs[i], ++i)
            for (int nn = n; nn < n + 12;)
                nn += block(m0, mbs[i], nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
    // The rest: one row of B at a time up to a multiple of 4 rows past n0, scalar after.
    const int n4 = n0 + ((n1 - n0) & ~3);
    one_row_at_a_time(M, n, n4, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return std::max(n, n4);
}
#endif  // NZ_SIMD_AVX2

}  // namespace

bool small_m_avx512_on() {
    return avx512_flag().load(std::memory_order_relaxed);
}

void small_m_abt(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
    int n = n0;
#ifdef NZ_SIMD_AVX2
    n = small_m_vector(M, n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
    for (; n < n1; ++n)
        for (int m = 0; m < M; ++m) {
            float& c = C[static_cast<int64_t>(m) * ldc + n];
            const float v = dot_tail(A + static_cast<int64_t>(m) * lda,
                                     B + static_cast<int64_t>(n) * ldb, 0, K);
            c = scale_add(alpha, v, beta, c);
        }
}

}  // namespace gemm_detail

bool set_small_gemm_avx512(bool on) {
#ifdef NZ_SIMD_AVX512
    gemm_detail::avx512_flag().store(on && avx512_allowed());
    return gemm_detail::avx512_flag().load();
#else
    (void)on;
    return false;
#endif
}

bool small_gemm_avx512() {
#ifdef NZ_SIMD_AVX512
    return gemm_detail::avx512_flag().load();
#else
    return false;
#endif
}

}  // namespace nazar
