#include "nazar/core/gemm/nn512.h"

#include "nazar/core/cpu_features.h"

#include <algorithm>
#include <atomic>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NZ_NN512 1
#endif

namespace nazar::detail {

#ifdef NZ_NN512
namespace {

constexpr int kNr = 32;  // columns per tile: two zmm registers
constexpr int kMr =
    12;  // rows per tile: 2 x 12 = 24 accumulators, 2 B loads + 12 broadcasts feed 24 FMAs
constexpr int kKc =
    256;  // K block: a 256 x 32 strip of B is 32 KB and stays in L1 across A's row blocks

// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports once inlined: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Rows [0, MR) of A (from A, lda) times the strip B[k0..k0+kc) x [n, n+32) (masks m0, m1 for a
// short last strip) into C: C = alpha acc + beta C on the first K block, C += alpha acc after.
// pf: the strip to prefetch meanwhile (pf_rows rows of one or, with pf_wide, two cache lines).
template <int MR>
__attribute__((target("avx512f"))) void tile(int kc, const float* A, int lda, const float* B,
                                             int ldb, float* C, int ldc, float alpha, float beta,
                                             __mmask16 m0, __mmask16 m1, const float* pf,
                                             int pf_rows, bool pf_wide) {
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
    const bool full = m0 == 0xFFFF && m1 == 0xFFFF;
    for (int k = 0; k < kc; ++k) {
        const float* b = B + static_cast<int64_t>(k) * ldb;
        if (k < pf_rows) {
            _mm_prefetch(reinterpret_cast<const char*>(pf + static_cast<int64_t>(k) * ldb),
                         _MM_HINT_T0);
            if (pf_wide)
                _mm_prefetch(reinterpret_cast<const char*>(pf + static_cast<int64_t>(k) * ldb + 16),
                             _MM_HINT_T0);
        }
        const __m512 b0 = full ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(m0, b);
        const __m512 b1 = full ? _mm512_loadu_ps(b + 16) : _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const __m512 a = _mm512_set1_ps(A[static_cast<int64_t>(r) * lda + k]);
            c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
        float* c = C + static_cast<int64_t>(r) * ldc;
        __m512 r0 = _mm512_mul_ps(va, c0[r]), r1 = _mm512_mul_ps(va, c1[r]);
        if (beta != 0.0f) {  // beta = 0 must not read C (it may hold NaN)
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), r1);
        }
        _mm512_mask_storeu_ps(c, m0, r0);
        _mm512_mask_storeu_ps(c + 16, m1, r1);
    }
}

#pragma GCC diagnostic pop

using TileFn = void (*)(int, const float*, int, const float*, int, float*, int, float, float,
                        __mmask16, __mmask16, const float*, int, bool);
constexpr TileFn kTiles[kMr + 1] = {nullptr, tile<1>, tile<2>, tile<3>,  tile<4>,  tile<5>, tile<6>,
                                    tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

__mmask16 lanes(int n) {
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1u);
}

// The kernel needs AVX-512F only; NAZAR_ISA=avx2 caps it off like the other 16-lane kernels.
bool cpu_allows() {
    return cpu_features().avx512f && switches().isa != "avx2";
}

// Decided on the first call (cpu_features.h), unless NAZAR_NN512=0.
std::atomic<bool>& on_flag() {
    static std::atomic<bool> on{cpu_allows() && !switches().nn512_off};
    return on;
}

}  // namespace

bool nn512_available() {
    return on_flag().load(std::memory_order_relaxed);
}

bool set_nn512(bool on) {
    on_flag().store(on && cpu_allows());
    return on_flag().load();
}

namespace {

// Columns [n0, n1) of C: Bs points at column n0's strip, row k of a strip is ldb floats after
// row k - 1, and the strip of columns n0 + 32 s starts strip_stride floats after Bs's.
// In place: Bs = B + n0, strip_stride = 32. Strip-packed: ldb = 32, strip_stride = 32 K.
void run(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* Bs,
         int ldb, int64_t strip_stride, float beta, float* C, int ldc) {
    if (K == 0 || alpha == 0.0f) {  // C = beta C, A and B unread (as BLAS)
        for (int i = 0; i < M; ++i)
            for (int j = n0; j < n1; ++j) {
                float& c = C[static_cast<int64_t>(i) * ldc + j];
                c = beta == 0.0f ? 0.0f : beta * c;
            }
        return;
    }
    // Rows in blocks of 12, the last ones balanced (64 = 12·4 + 8 + 8, not 12·5 + 4): a tile of
    // 4 rows still loads the whole strip of B for a third of the work.
    int blocks[64], nb = 0;
    for (int m = M; m > 0;) {
        const int r = m <= kMr ? m : (m < 2 * kMr ? (m + 1) / 2 : kMr);
        blocks[nb++] = r;
        m -= r;
        if (nb == 64) break;  // M > 64·12 rows: the caller loops (see below)
    }
    for (int k0 = 0; k0 < K; k0 += kKc) {
        const int kc = std::min(kKc, K - k0);
        const float b_here = k0 == 0 ? beta : 1.0f;
        for (int n = n0; n < n1; n += kNr) {
            const __mmask16 mk0 = lanes(n1 - n), mk1 = lanes(n1 - n - 16);
            const float* b = Bs + (n - n0) / kNr * strip_stride + static_cast<int64_t>(k0) * ldb;
            // The first row block prefetches the next strip (or the next K block's first strip):
            // in place, B's rows are 128-byte pieces a row length apart (a page apart for a 1536-
            // column B), which the hardware prefetcher does not follow when B comes from memory.
            const float* next = nullptr;
            int next_rows = 0, next_cols = 0;
            if (n + kNr < n1) {
                next = b + strip_stride, next_rows = kc, next_cols = n1 - n - kNr;
            } else if (k0 + kKc < K) {
                next = Bs + static_cast<int64_t>(k0 + kKc) * ldb;
                next_rows = std::min(kKc, K - k0 - kKc), next_cols = n1 - n0;
            }
            int m = 0;
            for (int i = 0; i < nb; m += blocks[i++])
                kTiles[blocks[i]](kc, A + static_cast<int64_t>(m) * lda + k0, lda, b, ldb,
                                  C + static_cast<int64_t>(m) * ldc + n, ldc, alpha, b_here, mk0,
                                  mk1, next, i == 0 ? next_rows : 0, next_cols > 16);
        }
    }
    int done = 0;
    for (int i = 0; i < nb; ++i) done += blocks[i];
    if (done < M)
        run(M - done, n0, n1, K, alpha, A + static_cast<int64_t>(done) * lda, lda, Bs, ldb,
            strip_stride, beta, C + static_cast<int64_t>(done) * ldc, ldc);
}

}  // namespace

void gemm_nn512(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                int ldb, float beta, float* C, int ldc) {
    run(M, n0, n1, K, alpha, A, lda, B + n0, ldb, kNr, beta, C, ldc);
}

void gemm_nn512_packed(int M, int n0, int n1, int K, float alpha, const float* A, int lda,
                       const float* Bp, int64_t strip_stride, float beta, float* C, int ldc) {
    run(M, n0, n1, K, alpha, A, lda, Bp + n0 / kNr * strip_stride, kNr, strip_stride, beta, C, ldc);
}

#else

bool nn512_available() {
    return false;
}
bool set_nn512(bool) {
    return false;
}
void gemm_nn512(int, int, int, int, float, const float*, int, const float*, int, float, float*,
                int) {}
void gemm_nn512_packed(int, int, int, int, float, const float*, int, const float*, int64_t, float,
                       float*, int) {}

#endif

}  // namespace nazar::detail
