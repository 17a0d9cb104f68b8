// The one GEMM of nazar, implemented in nazar/core/gemm/ (dispatch.cpp decides which kernel or
// library runs each product; gemm/internal.h lists the files). Nothing else sees a BLAS library.
//
//   gemm(a, ta, b, tb, c, alpha, beta):   C = alpha * op(A) * op(B) + beta * C
// exactly as BLAS means it: op(X) = X or Xᵀ, row-major, 2-D views. gemm_batched does the same
// for N independent (strided) matrices held as 3-D views (N, rows, cols). gemm_raw takes
// leading dimensions, for sub-blocks of a larger matrix (e.g. one gate's columns).
// gemm_naive is a plain triple loop with the gemm_raw signature: the tests' oracle.
#pragma once

#include "nazar/core/tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace nazar {

void gemm(ConstTensorView a, bool ta, ConstTensorView b, bool tb, TensorView c, float alpha = 1.0f,
          float beta = 0.0f);

void gemm_batched(ConstTensorView a, bool ta, ConstTensorView b, bool tb, TensorView c,
                  float alpha = 1.0f, float beta = 0.0f);

void gemm_raw(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc);

void gemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);

// y = alpha * op(A) x + beta * y, A (M, N) row-major with leading dimension lda.
void gemv_raw(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
              float beta, float* y);

// "oneDNN 2.6.3 sgemm [avx512_core_bf16], 1 thread(s) per call, ..." or "naive loops ...".
std::string blas_description();

// Who runs the threads of a large gemm: nazar's pool (default; the GEMM library single-threaded,
// products cut into blocks, one per pool thread) or the library's own threads.
enum class GemmThreading { pool, blas };
void set_gemm_threading(GemmThreading t);
GemmThreading gemm_threading();

// The small-M kernel (M <= 8 rows, C = alpha A Bᵀ + beta C: decoding's per-step products) uses
// AVX-512 where the CPU has it, AVX2 otherwise; both give bit-identical results. Turns the
// AVX-512 path on (if supported) or off; returns whether it is on. Default: on if supported,
// off when NAZAR_SMALL_GEMM=avx2 is in the environment.
bool set_small_gemm_avx512(bool on);
bool small_gemm_avx512();  // whether it is on now (tests save and restore it)

// Products of many steps against one weight W (N x K): x Wᵀ, once per step of a recurrence.
// A BLAS library re-packs W on every call; instead Wᵀ (K x N) is made once per batch by
// refresh_weight_t, strip-packed (gemm/nn512.h: 32-column strips, each K rows of 32 floats),
// and the step product runs on nazar's own AVX-512 kernel. Where that kernel cannot run (no
// AVX-512, NAZAR_NN512=0, the naive BLAS build) refresh_weight_t leaves wt empty and gemm_xwt
// is the plain NT gemm. wt is a snapshot: it must be refreshed whenever W changes (per batch:
// the callers refresh it where they compute the batch's attention keys, which capture the
// weights the same way).
using WeightT = std::shared_ptr<Tensor>;  // shape (ceil(N / 32), K, 32)
// Products of at most this many rows (decoding at batch 1) use the small-M kernel, which reads
// W directly: a transposed copy only pays for more rows.
inline constexpr int kSmallGemmRows = 8;
// wt = Wᵀ of W (N x K, leading dimension ldw: a column block of a wider matrix is allowed),
// strip-packed; reuses wt's memory when it is the only owner, never writes into a shared copy.
void refresh_weight_t(WeightT& wt, const float* w, int N, int K, int ldw);
void refresh_weight_t(WeightT& wt, ConstTensorView w);  // all of W (N x K)
// wt = Wᵀ (all of W) for products of `rows` rows when they gain from it (> kSmallGemmRows), else
// none (wt reset).
inline void refresh_weight_t_for_rows(WeightT& wt, ConstTensorView w, int64_t rows) {
    if (rows > kSmallGemmRows)
        refresh_weight_t(wt, w);
    else
        wt.reset();
}
// Rows k0.. of a packed Wᵀ (the columns k0.. of W), or nothing.
struct WeightTRows {
    const float* data = nullptr;  // strip 0, row k0
    int64_t strip_stride = 0;     // floats from one strip to the next (32 · K of the whole)
    explicit operator bool() const { return data != nullptr; }
};
inline WeightTRows weight_t_rows(const WeightT& wt, int k0 = 0) {
    if (!wt) return {};
    return {wt->data() + int64_t{k0} * 32, int64_t{wt->dim(1)} * 32};
}
// C (M x N) = alpha A (M x K) Wᵀ + beta C: through wt (rows k0 .. k0 + K of a packed Wᵀ whose
// W has N rows) when it is given and kSmallGemmRows < M <= 512; else the NT product against
// W (N x K, ldw).
void gemm_xwt(int M, int N, int K, float alpha, const float* A, int lda, const float* W, int ldw,
              WeightTRows wt, float beta, float* C, int ldc);
// Whether gemm_xwt of M rows through a packed Wᵀ (W with no reduced-precision copy registered)
// runs nazar's NN kernel, which sums each entry of C in one order whatever the rows computed
// with it (nn512.h): then any split of the rows into products of such sizes gives the same bits.
bool xwt_rows_independent(int M);
// C (M x N) = A Wᵀ + bias (N floats, on every row; null: none), summed as gemm_xwt with beta = 1
// onto C filled with 0 + bias (bit for bit: a −0 bias counts as +0). Through the packed Wᵀ each
// pool thread fills its own columns just before multiplying them, so the product is not
// preceded by a serial pass over C on the calling thread.
void gemm_xwt_bias(int M, int N, int K, const float* A, int lda, const float* W, int ldw,
                   WeightTRows wt, const float* bias, float* C, int ldc);

// ---- Which kernels run (docs/performance.md, "Kernel choice by CPU features") ----
// Chosen from the CPU's feature bits (cpu_features.h), never from a table of CPU models.
struct GemmPath {
    std::string kernel;  // "nazar small-M", "nazar NN", "oneDNN sgemm", "OpenBLAS", "naive loops"
    std::string isa;     // tier of its widest kernels: "avx512", "avx2", "below-avx2", "naive"
    std::string detail;  // e.g. "16 lanes", "avx512_core_bf16" (oneDNN), "SkylakeX" (OpenBLAS)
};
// The path gemm_raw takes for this product; packed_wt: gemm_xwt with a packed Wᵀ (ta = tb = false
// is then read as A Wᵀ).
GemmPath gemm_path(bool ta, bool tb, int M, int N, int K, bool packed_wt = false);
// What the CPU's feature bits call for from the large-product path: "avx512" (AVX-512
// F/DQ/BW/VL usable), "avx2" (AVX2 + FMA) or "below-avx2".
std::string gemm_expected_isa();
struct GemmPathRow {
    std::string shape_class;  // e.g. "A Bᵀ, M <= 8 (decoding steps)"
    int M = 0, N = 0, K = 0;  // the example product the path is reported for
    GemmPath path;
};
// One row per shape class nazar uses, with the path each takes on this machine now.
std::vector<GemmPathRow> gemm_paths();

// Sets the BLAS thread count. Use nazar::set_num_threads (threads.h), which also sizes our pool.
void blas_set_num_threads(int n);

}  // namespace nazar
