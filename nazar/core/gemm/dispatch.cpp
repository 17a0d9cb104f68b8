// Which path runs each product of nazar::gemm (blas.h): the small-M kernel for decoding's
// per-step products, nazar's NN AVX-512 kernel for the recurrences' steps, and the BLAS library
// for the rest, split over nazar's pool (docs/performance.md, "Kernel choice by CPU
// features").
#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/gemm/nn512.h"
#include "nazar/core/gemm/packed.h"

#include <fmt/format.h>

#include <atomic>

namespace nazar {

namespace {

using namespace gemm_detail;

// GemmThreading::pool: OpenBLAS runs single-threaded in whichever thread calls it, and a large
// gemm is cut into column (or row) blocks run by nazar's own pool (threads.h), so one set of
// threads serves BLAS and our loops and nothing spins against anything. GemmThreading::blas:
// OpenBLAS's own pthreads pool (the measured alternative; NAZAR_GEMM_THREADS=blas at start-up).
std::atomic<GemmThreading>& threading() {
    static std::atomic<GemmThreading> t{switches().gemm_threads_blas ? GemmThreading::blas
                                                                     : GemmThreading::pool};
    return t;
}
std::atomic<int> g_blas_threads{1};

void check_matrix(const char* what, ConstTensorView v) {
    NZ_CHECK(v.ndim() == 2, "gemm: {} must be 2-D, got {}", what, v.shape().str());
}

// C = beta C (K = 0); BLAS would do this too, but some builds read A/B anyway
void scale_c(int M, int N, float beta, float* C, int ldc) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

// Columns [c0, c1) of rows [0, M) of C = 0 + bias: a −0 bias is written as +0, so the product
// accumulated onto it sums exactly as into a zeroed C with the bias added (gemm_xwt_bias).
void fill_bias_rows(int M, int c0, int c1, const float* bias, float* C, int ldc) {
    for (int i = 0; i < M; ++i) {
        float* c = C + static_cast<int64_t>(i) * ldc;
        for (int j = c0; j < c1; ++j) c[j] = 0.0f + bias[j];
    }
}

// Rows M <= kSmallGemmRows of C = alpha A Bᵀ + beta C on the small-M kernel, 16-row units of B
// over the pool above kSplitFlops or kSplitBytesB.
void small_m(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             float beta, float* C, int ldc) {
    if (num_threads() < 2 ||
        (2.0 * M * N * K < kSplitFlops && sizeof(float) * N * K < kSplitBytesB)) {
        small_m_abt(M, 0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    parallel_for((N + kBlock - 1) / kBlock, 1, [&](int64_t u0, int64_t u1) {
        small_m_abt(M, static_cast<int>(u0) * kBlock, std::min(N, static_cast<int>(u1) * kBlock), K,
                    alpha, A, lda, B, ldb, beta, C, ldc);
    });
}

// The GEMM library: one call with its own threads (GemmThreading::blas) or below kSplitFlops;
// else the longer side cut into `threads` blocks of whole kBlock units (fixed for a given
// thread count, so results stay deterministic), each an independent single-threaded sgemm.
void on_library(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    check_library_once();
    const auto one = [&](int m0, int m1, int n0, int n1) {
        const float* a = ta ? A + m0 : A + static_cast<int64_t>(m0) * lda;
        const float* b = tb ? B + static_cast<int64_t>(n0) * ldb : B + n0;
        backend_sgemm(ta, tb, m1 - m0, n1 - n0, K, alpha, a, lda, b, ldb, beta,
                      C + static_cast<int64_t>(m0) * ldc + n0, ldc);
    };
    if (threading().load(std::memory_order_relaxed) == GemmThreading::blas || num_threads() < 2 ||
        2.0 * M * N * K < kSplitFlops) {
        one(0, M, 0, N);
        return;
    }
    const bool by_cols = N >= M;
    const int len = by_cols ? N : M, units = (len + kBlock - 1) / kBlock;
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) {
        const int b0 = static_cast<int>(u0) * kBlock,
                  b1 = std::min(len, static_cast<int>(u1) * kBlock);
        if (by_cols)
            one(0, M, b0, b1);
        else
            one(b0, b1, 0, N);
    });
}

void gemm_dispatch(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    if (K == 0) return scale_c(M, N, beta, C, ldc);
    if (!kHaveBlas) return gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (!ta && tb && M <= kSmallGemmRows)
        return small_m(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    // NN products of up to kNn512Rows rows behind OpenBLAS: our kernel, B read in place
    // (nn512.h). Otherwise the library's cache blocking wins (internal.h).
    if (!ta && !tb && nn512_takes(M) && detail::nn512_available()) {
        by_strips(M, N, K, [&](int c0, int c1) {
            detail::gemm_nn512(M, c0, c1, K, alpha, A, lda, B, ldb, beta, C, ldc);
        });
        return;
    }
    on_library(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Whether this product runs in bf16 now (a bf16 GemmPrecisionScope, bf16.h): one relaxed load
// outside a scope, so fp32 runs exactly as before.
bool in_bf16(int M, int N, int K) {
    return gemm_precision() == GemmPrecision::bf16 && bf16_product_pays(M, N, K);
}

}  // namespace

void gemm_detail::gemm_fp32(bool ta, bool tb, int M, int N, int K, float alpha, const float* A,
                            int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void set_gemm_threading(GemmThreading t) {
    threading().store(t);
    blas_set_num_threads(g_blas_threads.load());
}

GemmThreading gemm_threading() {
    return threading().load();
}

void gemm(ConstTensorView a, bool ta, ConstTensorView b, bool tb, TensorView c, float alpha,
          float beta) {
    check_matrix("A", a);
    check_matrix("B", b);
    check_matrix("C", c);
    const int M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
    const int Kb = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
    NZ_CHECK(K == Kb && c.dim(0) == M && c.dim(1) == N,
             "gemm: op(A) {}x{} times op(B) {}x{} into C {} (A {}{}, B {}{})", M, K, Kb, N,
             c.shape().str(), a.shape().str(), ta ? "ᵀ" : "", b.shape().str(), tb ? "ᵀ" : "");
    gemm_raw(ta, tb, M, N, K, alpha, a.data(), a.dim(1), b.data(), b.dim(1), beta, c.data(),
             c.dim(1));
}

void gemm_batched(ConstTensorView a, bool ta, ConstTensorView b, bool tb, TensorView c, float alpha,
                  float beta) {
    NZ_CHECK(a.ndim() == 3 && b.ndim() == 3 && c.ndim() == 3,
             "gemm_batched: 3-D views expected, got {} {} {}", a.shape().str(), b.shape().str(),
             c.shape().str());
    const int n = a.dim(0);
    NZ_CHECK(b.dim(0) == n && c.dim(0) == n, "gemm_batched: batch sizes {} {} {}", n, b.dim(0),
             c.dim(0));
    for (int i = 0; i < n; ++i) gemm(a.select(i), ta, b.select(i), tb, c.select(i), alpha, beta);
}

void gemm_raw(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc) {
    // a loaded model's reduced-precision weights (packed.h)
    if (!ta && tb && try_packed(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    check_fp32_operands(A, B);
    GemmProfile* p = profile();
    const bool bf16 = in_bf16(M, N, K);
    const auto run = [&] {
        if (bf16)
            gemm_bf16_scoped(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        else
            gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    };
    if (!p) return run();
    const ProfileStart t0 = profile_start();
    run();
    profile_add(p, ta, tb, M, N, K, t0, false, bf16);
}

void gemv_raw(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
              float beta, float* y) {
    check_fp32_operands(A, x);
    backend_sgemv(ta, M, N, alpha, A, lda, x, beta, y);
}

namespace {

// Whether gemm_xwt runs this product on nn512's kernel through the packed Wᵀ (no reduced-precision
// copy of W registered, M in (kSmallGemmRows, kNn512Rows], the kernel on, not in a bf16 scope).
bool through_weight_t(int M, int N, int K, const float* W, int ldw, WeightTRows wt) {
    int n0 = 0, k0 = 0;
    return wt && M > kSmallGemmRows && M <= kNn512Rows && detail::nn512_available() &&
           !in_bf16(M, N, K) && !(any_packed() && find_packed(W, ldw, &n0, &k0));
}

}  // namespace

bool xwt_rows_independent(int M) {
    return M > kSmallGemmRows && M <= kNn512Rows && detail::nn512_available() &&
           gemm_precision() != GemmPrecision::bf16;
}

namespace {

// (The profile's time of a biased product includes its bias fill.)
void xwt_packed(int M, int N, int K, float alpha, const float* A, int lda, WeightTRows wt,
                const float* bias, float beta, float* C, int ldc) {
    GemmProfile* p = profile();
    const ProfileStart t0 = p ? profile_start() : ProfileStart{};
    by_strips(M, N, K, [&](int c0, int c1) {
        if (bias) fill_bias_rows(M, c0, c1, bias, C, ldc);
        detail::gemm_nn512_packed(M, c0, c1, K, alpha, A, lda, wt.data, wt.strip_stride, beta, C,
                                  ldc);
    });
    if (p) profile_add(p, false, true, M, N, K, t0, true, false);
}

}  // namespace

void gemm_xwt(int M, int N, int K, float alpha, const float* A, int lda, const float* W, int ldw,
              WeightTRows wt, float beta, float* C, int ldc) {
    if (!through_weight_t(M, N, K, W, ldw, wt))
        return gemm_raw(false, true, M, N, K, alpha, A, lda, W, ldw, beta, C, ldc);
    xwt_packed(M, N, K, alpha, A, lda, wt, nullptr, beta, C, ldc);
}

void gemm_xwt_bias(int M, int N, int K, const float* A, int lda, const float* W, int ldw,
                   WeightTRows wt, const float* bias, float* C, int ldc) {
    if (bias == nullptr) return gemm_xwt(M, N, K, 1.0f, A, lda, W, ldw, wt, 0.0f, C, ldc);
    if (M == 0 || N == 0) return;
    // Each thread writes the bias into its own columns just before its product: no serial pass
    // over C first (2 MB at 320 rows x 1536, a quarter of a millisecond on one core, long
    // enough for the pool's worker to fall asleep), and C's lines are already in the cache of
    // the thread that accumulates onto them.
    if (K > 0 && through_weight_t(M, N, K, W, ldw, wt))
        return xwt_packed(M, N, K, 1.0f, A, lda, wt, bias, 1.0f, C, ldc);
    // Elsewhere the rows are filled first (over the pool when large), then the product added.
    for_rows(M, N, [&](int64_t r0, int64_t r1) {
        fill_bias_rows(static_cast<int>(r1 - r0), 0, N, bias, C + r0 * ldc, ldc);
    });
    gemm_raw(false, true, M, N, K, 1.0f, A, lda, W, ldw, 1.0f, C, ldc);
}

std::string blas_description() {
    if (!kHaveBlas) return backend_description();
    return fmt::format(
        "{}{}{}", backend_description(),
        threading().load() == GemmThreading::pool ? ", large products split over nazar's pool" : "",
        detail::nn512_available() ? ", NN products on nazar's AVX-512 kernel" : "");
}

void blas_set_num_threads(int n) {
    g_blas_threads.store(n);
    backend_set_threads(threading().load() == GemmThreading::pool ? 1 : n);
}

}  // namespace nazar
