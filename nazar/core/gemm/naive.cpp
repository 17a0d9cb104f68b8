// gemm_naive (blas.h): a plain triple loop accumulated in double, the tests' oracle and the
// whole of the naive build (NAZAR_BLAS=Naive).
#include "nazar/core/blas.h"

namespace nazar {

void gemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k) {
                const float av = ta ? A[k * lda + i] : A[i * lda + k];
                const float bv = tb ? B[j * ldb + k] : B[k * ldb + j];
                acc += static_cast<double>(av) * bv;
            }
            float& cv = C[i * ldc + j];
            cv = static_cast<float>(alpha * acc +
                                    (beta == 0.0f ? 0.0 : static_cast<double>(beta) * cv));
        }
}

}  // namespace nazar
