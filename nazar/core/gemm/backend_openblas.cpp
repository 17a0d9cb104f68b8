// OpenBLAS through CBLAS behind nazar's large products (NAZAR_BLAS=OpenBLAS, kept for
// comparison), or the naive loops (NAZAR_BLAS=Naive). The only file that sees cblas.h.
//
// OpenBLAS picks its kernels ("core") from a table of CPU models, in a library constructor that
// runs before main: on a CPU newer than the table (Debian's 0.3.21 on Intel family 6 model 207)
// it falls back to SSE3 "Prescott" kernels, 4-5x slower. nazar cannot change that core once the
// library is loaded; dispatch.cpp reports it once on stderr (backend_tier below the CPU's).
#include "nazar/core/blas.h"
#include "nazar/core/gemm/internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#if !NAZAR_BLAS_ONEDNN
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

std::string backend_isa() {
#if NAZAR_BLAS_OPENBLAS
    return openblas_get_corename();
#else
    return "naive";
#endif
}

// OpenBLAS's x86-64 cores by the widest vector kernels they run.
IsaTier backend_tier() {
#if NAZAR_BLAS_OPENBLAS
    std::string core = backend_isa();
    std::transform(core.begin(), core.end(), core.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* c : {"skylakex", "cooperlake", "sapphirerapids"})
        if (core == c) return IsaTier::avx512;
    for (const char* c : {"haswell", "zen", "skylake"})
        if (core == c) return IsaTier::avx2;
    return IsaTier::below_avx2;
#else
    return IsaTier::naive;
#endif
}

std::string backend_advice() {
    return "OpenBLAS chose its core from its CPU model table: set OPENBLAS_CORETYPE (SkylakeX "
           "for AVX-512, Haswell for AVX2) or build with NAZAR_BLAS=oneDNN";
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
#endif  // !NAZAR_BLAS_ONEDNN
