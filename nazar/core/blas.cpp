#include "nazar/core/blas.h"

#include "nazar/core/threads.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#if NAZAR_BLAS_OPENBLAS
#include <cblas.h>
#endif

namespace nazar {

namespace {
// GemmThreading::pool: OpenBLAS runs single-threaded in whichever thread calls it, and a large
// gemm is cut into column (or row) blocks run by nazar's own pool (threads.h), so one set of
// threads serves BLAS and our loops and nothing spins against anything. GemmThreading::blas:
// OpenBLAS's own pthreads pool (the measured alternative; docs/performance.md).
// NAZAR_GEMM_THREADS=blas in the environment selects the latter at start-up.
std::atomic<GemmThreading> g_threading{[] {
    const char* e = std::getenv("NAZAR_GEMM_THREADS");
    return e && std::strcmp(e, "blas") == 0 ? GemmThreading::blas : GemmThreading::pool;
}()};
std::atomic<int> g_blas_threads{1};
// Below this many flops one thread does the whole product (waking the pool costs ~10 µs).
constexpr double kSplitFlops = 4e6;
constexpr int kBlock = 16;  // split points are multiples of the kernels' register blocking
}  // namespace

void set_gemm_threading(GemmThreading t) {
    g_threading.store(t);
    blas_set_num_threads(g_blas_threads.load());
}

GemmThreading gemm_threading() { return g_threading.load(); }

namespace {
void check_matrix(const char* what, TensorView v) {
    NZ_CHECK(v.ndim() == 2, "gemm: {} must be 2-D, got {}", what, v.shape().str());
}
}  // namespace

void gemm(TensorView a, bool ta, TensorView b, bool tb, TensorView c, float alpha, float beta) {
    check_matrix("A", a);
    check_matrix("B", b);
    check_matrix("C", c);
    const int M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
    const int Kb = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
    NZ_CHECK(K == Kb && c.dim(0) == M && c.dim(1) == N,
             "gemm: op(A) {}x{} times op(B) {}x{} into C {} (A {}{}, B {}{})", M, K, Kb, N, c.shape().str(),
             a.shape().str(), ta ? "ᵀ" : "", b.shape().str(), tb ? "ᵀ" : "");
    gemm_raw(ta, tb, M, N, K, alpha, a.data(), a.dim(1), b.data(), b.dim(1), beta, c.data(), c.dim(1));
}

void gemm_batched(TensorView a, bool ta, TensorView b, bool tb, TensorView c, float alpha, float beta) {
    NZ_CHECK(a.ndim() == 3 && b.ndim() == 3 && c.ndim() == 3, "gemm_batched: 3-D views expected, got {} {} {}",
             a.shape().str(), b.shape().str(), c.shape().str());
    const int n = a.dim(0);
    NZ_CHECK(b.dim(0) == n && c.dim(0) == n, "gemm_batched: batch sizes {} {} {}", n, b.dim(0), c.dim(0));
    for (int i = 0; i < n; ++i) gemm(a.select(i), ta, b.select(i), tb, c.select(i), alpha, beta);
}

void gemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                int ldb, float beta, float* C, int ldc) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k) {
                const float av = ta ? A[k * lda + i] : A[i * lda + k];
                const float bv = tb ? B[j * ldb + k] : B[k * ldb + j];
                acc += static_cast<double>(av) * bv;
            }
            float& cv = C[i * ldc + j];
            cv = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * cv));
        }
}

void gemm_raw(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
              int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    if (K == 0) {  // C = beta C; BLAS would do this too, but some builds read A/B anyway
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
#if NAZAR_BLAS_OPENBLAS
    const auto one = [&](int m0, int m1, int n0, int n1) {
        const float* a = ta ? A + m0 : A + static_cast<int64_t>(m0) * lda;
        const float* b = tb ? B + static_cast<int64_t>(n0) * ldb : B + n0;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m1 - m0, n1 - n0,
                    K, alpha, a, lda, b, ldb, beta, C + static_cast<int64_t>(m0) * ldc + n0, ldc);
    };
    const int threads = num_threads();
    if (g_threading.load(std::memory_order_relaxed) == GemmThreading::blas || threads < 2 ||
        2.0 * M * N * K < kSplitFlops) {
        one(0, M, 0, N);
        return;
    }
    // Cut the longer side into `threads` blocks of whole kBlock units (fixed for a given thread
    // count, so results stay deterministic); each block is an independent single-threaded sgemm.
    const bool by_cols = N >= M;
    const int len = by_cols ? N : M, units = (len + kBlock - 1) / kBlock;
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) {
        const int b0 = static_cast<int>(u0) * kBlock, b1 = std::min(len, static_cast<int>(u1) * kBlock);
        if (by_cols)
            one(0, M, b0, b1);
        else
            one(b0, b1, 0, N);
    });
#else
    gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void gemv_raw(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x, float beta, float* y) {
#if NAZAR_BLAS_OPENBLAS
    cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, M, N, alpha, A, lda, x, 1, beta, y, 1);
#else
    // op(A) x as a gemm with one column: y (rows x 1)
    const int rows = ta ? N : M, inner = ta ? M : N;
    gemm_naive(ta, false, rows, 1, inner, alpha, A, lda, x, 1, beta, y, 1);
#endif
}

std::string blas_description() {
#if NAZAR_BLAS_OPENBLAS
    return fmt::format("OpenBLAS {} [{}], {} thread(s){}", openblas_get_config(), openblas_get_corename(),
                       openblas_get_num_threads(),
                       g_threading.load() == GemmThreading::pool ? ", large products split over nazar's pool" : "");
#else
    return "naive loops (NAZAR_BLAS=Naive)";
#endif
}

void blas_set_num_threads(int n) {
    g_blas_threads.store(n);
#if NAZAR_BLAS_OPENBLAS
    openblas_set_num_threads(g_threading.load() == GemmThreading::pool ? 1 : n);
#else
    (void)n;
#endif
}

}  // namespace nazar
