// Internal to nazar/core/gemm/ (and its tests and benchmarks): nazar's own AVX-512 kernel for
// C = alpha A B + beta C with A (M x K) and B (K x N) both row-major and untransposed, for the
// per-step products of the recurrences (M = the batch's rows, 16..256; B = a weight matrix).
//
// Why: OpenBLAS copies ("packs") all of B into its own panel layout on every call. A step of the
// standard model multiplies 64 rows by a 1536 x 512 weight, so the 3 MB copy is paid for 64 rows
// of work, every step (docs/performance-log.md for the share it took). Here B
// needs no copy: its rows are already what the kernel reads, a 32-column strip k = 0..K-1 of
// 128-byte pieces (one strip of a K block stays in L1 while every row block of A passes over it).
// A forward product against Wᵀ becomes this NN product once per batch by keeping Wᵀ (see
// blas.h, refresh_weight_t / gemm_xwt).
//
// Each C entry is accumulated in k order within K blocks of kKc, blocks added in order: the
// result depends on the thread count only through which columns each thread owns, never on it.
#pragma once

#include <cstdint>

namespace nazar::detail {

// True when the CPU (and OS) support AVX-512F and the kernel is switched on (default; off when
// NAZAR_NN512=0 is in the environment: OpenBLAS then does every product, for comparison).
bool nn512_available();
// Switches the kernel on (where the CPU supports it) or off; returns nn512_available().
// For tests and benchmarks: weights transposed while it was on stay usable (gemm_xwt).
bool set_nn512(bool on);

// Columns [n0, n1) of C (M x N, ldc) = alpha A (M x K, lda) B (K x N, ldb) + beta C.
// Requires nn512_available(). Single-threaded; callers split columns in multiples of 32.
void gemm_nn512(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                int ldb, float beta, float* C, int ldc);

// The same with B (K x N) strip-packed: strip s (columns 32 s .. 32 s + 31, zero past N) is
// rows of 32 floats, strips strip_stride floats apart (32 K for a whole packed matrix; rows
// k0.. of a taller one: Bp advanced by 32 k0, the stride of the whole). Each strip is then one
// contiguous 4 KB-per-32-rows stream, which the hardware prefetcher follows; in place, a
// 1536-column B puts every 128-byte row piece of a strip on a different page. n0 must be a
// multiple of 32. The arithmetic is the same as gemm_nn512's (bit-identical results).
void gemm_nn512_packed(int M, int n0, int n1, int K, float alpha, const float* A, int lda,
                       const float* Bp, int64_t strip_stride, float beta, float* C, int ldc);

}  // namespace nazar::detail
