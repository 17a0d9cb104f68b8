// The BLAS library behind nazar's large products: OpenBLAS through CBLAS (NAZAR_BLAS=OpenBLAS),
// or the naive loops (NAZAR_BLAS=Naive). The only file that sees cblas.h.
#include "nazar/core/blas.h"
#include "nazar/core/gemm/internal.h"

#include <fmt/format.h>

#if NAZAR_BLAS_OPENBLAS
#include <cblas.h>
#endif

namespace nazar::gemm_detail {

void backend_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
#if NAZAR_BLAS_OPENBLAS
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void backend_sgemv(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
                   float beta, float* y) {
#if NAZAR_BLAS_OPENBLAS
    cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, M, N, alpha, A, lda, x, 1, beta, y,
                1);
#else
    // op(A) x as a gemm with one column: y (rows x 1)
    const int rows = ta ? N : M, inner = ta ? M : N;
    gemm_naive(ta, false, rows, 1, inner, alpha, A, lda, x, 1, beta, y, 1);
#endif
}

void backend_set_threads(int n) {
#if NAZAR_BLAS_OPENBLAS
    openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

std::string backend_description() {
#if NAZAR_BLAS_OPENBLAS
    return fmt::format("OpenBLAS {} [{}], {} thread(s)", openblas_get_config(),
                       openblas_get_corename(), openblas_get_num_threads());
#else
    return "naive loops (NAZAR_BLAS=Naive)";
#endif
}

}  // namespace nazar::gemm_detail
