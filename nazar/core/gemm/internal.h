// What the files of nazar/core/gemm/ share; not part of nazar's API (that is core/blas.h).
//
//   dispatch.cpp        gemm, gemm_raw, gemm_xwt, gemv_raw: which path runs each product
//   backend_onednn.cpp  the GEMM library behind the large products: oneDNN (default)
//   backend_openblas.cpp  ... or OpenBLAS, or the naive loops
//   paths.cpp           which path each shape class takes, and the once-only check of the library
//   small_m_avx2.cpp    C = alpha A Bᵀ + beta C for M <= 8 rows, 8 lanes
//   small_m_avx512.cpp  the same blocks on 16 lanes (bit-identical)
//   nn512.cpp           NN products of up to 512 rows on AVX-512, B in place or strip-packed
//   weight_t.cpp        refresh_weight_t: the strip-packed Wᵀ that gemm_xwt reads
//   profile.cpp         NAZAR_GEMM_PROFILE=1: time per product shape
//   naive.cpp           gemm_naive: the triple loop, the tests' oracle
//   bf16.cpp            gemm_bf16 and the precision switch (bf16.h); bf16_internal.h lists the rest
//   packed.cpp          inference's packed bf16 / int8 weights (packed.h): PackedMatrix, the
//                       gemm_packed driver and portable path; packed_int8.cpp / packed_bf16.cpp
//                       the fast kernels (one register block, packed_block.h), packed_amx.cpp
//                       int8 on AMX tiles; packed_registry.cpp
//                       the weights gemm_raw runs packed; packed_rate.cpp the benchmarks' roofline
#pragma once

#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace nazar::gemm_detail {

// Below this many flops one thread does the whole product: waking a sleeping pool costs ~10 µs
// (the measurements behind the value: docs/performance-log.md, "Levers, each measured").
inline constexpr double kSplitFlops = 1.5e6;
// A product of a few rows streams B, and one core reads it at about half the rate two do: the
// small-M kernel splits B over the pool from this many bytes of B as well (a batch-1 decoding
// step's 512 x 512 attention query, the encoder's 768 x 256 recurrent product), however few the
// flops (docs/performance-log.md, "The pool's wait").
inline constexpr double kSplitBytesB = 256.0 * 1024;
// Split points of a product over the pool are multiples of the kernels' register blocking.
inline constexpr int kBlock = 16;
// NN products of up to this many rows run on nn512 with B read in place
// (docs/performance-log.md, "Levers, each measured", third round) -- behind OpenBLAS only.
// Behind oneDNN its packed kernels beat nn512's in-place reads on every NN shape of training
// (docs/performance-log.md, "Training on the Intel machine"), so there nn512 runs only x Wᵀ
// through the strip-packed per-batch Wᵀ (gemm_xwt), which still beats the library's A Bᵀ.
inline constexpr int kNn512Rows = 512;
#if NAZAR_BLAS_ONEDNN
inline constexpr bool kNn512InPlace = false;
#else
inline constexpr bool kNn512InPlace = true;
#endif
inline bool nn512_takes(int M) {
    return kNn512InPlace && M <= kNn512Rows;
}

// cols(c0, c1) for columns [c0, c1) of an M x N x K product on nazar's NN kernel: all of them
// on this thread below kSplitFlops (or with one thread), else 32-column strips over the pool.
template <class F>
void by_strips(int M, int N, int K, F&& cols) {
    if (num_threads() < 2 || 2.0 * M * N * K < kSplitFlops) {
        cols(0, N);
        return;
    }
    parallel_for((N + 31) / 32, 1, [&](int64_t u0, int64_t u1) {
        cols(static_cast<int>(u0) * 32, std::min(N, static_cast<int>(u1) * 32));
    });
}

// Scalar tail k in [k0, K), as explicit FMAs in order: the AVX2 and AVX-512 small-M kernels
// must agree bit for bit, and left to itself GCC contracts (or vectorises) this loop differently
// per target.
inline float dot_tail(const float* x, const float* w, int k0, int K) {
    float s = 0;
    for (int k = k0; k < K; ++k) s = std::fma(x[k], w[k], s);
    return s;
}

// alpha v + beta c of a C entry, beta = 0 not reading c, spelled out (the multiply rounded, then
// one FMA) so that no compiler contracts it differently in the scalar and the vector epilogues
// of the small-M kernels.
inline float scale_add(float alpha, float v, float beta, float c) {
    const float av = alpha * v;
    return beta == 0.0f ? av : std::fma(beta, c, av);
}

// ---- small-M kernel (small_m_avx2.cpp, small_m_avx512.cpp) ----
// rows [n0, n1) of C (M x N, ldc) = alpha A (M x K, lda) Bᵀ (B: N x K, ldb) + beta C, M <= 8
void small_m_abt(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc);
// Whether small_m_abt uses its 16-lane blocks (set_small_gemm_avx512 in blas.h changes it).
bool small_m_avx512_on();
// Rows [m0, m0 + mb) of A (1 <= mb <= 5) against rows n .. n + 7 of B, 16 lanes; n_next bounds
// the prefetch of the next panel. Requires the CPU's AVX-512F/DQ.
void abt_panel512(int mb, int m0, int n, int n_next, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc);

// ---- the GEMM library (backend_onednn.cpp or backend_openblas.cpp) ----
// C = alpha op(A) op(B) + beta C on the library, in the calling thread's share of its threads.
void backend_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc);
void backend_sgemv(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
                   float beta, float* y);
void backend_set_threads(int n);
// "oneDNN 2.6.3 sgemm [avx512_core_bf16], 1 thread(s) per call", "OpenBLAS ... [Haswell], ...".
std::string backend_description();
// The library's own name for the kernels it runs: "avx512_core_bf16", "SkylakeX", "naive".
std::string backend_isa();
enum class IsaTier { below_avx2, avx2, avx512, naive };
IsaTier backend_tier();
// What to do when backend_tier() is below what the CPU's features call for.
std::string backend_advice();
// Whether products go to a GEMM library (false: the naive build).
constexpr bool kHaveBlas =
#if NAZAR_BLAS_OPENBLAS || NAZAR_BLAS_ONEDNN
    true;
#else
    false;
#endif
constexpr const char* kLibraryName =
#if NAZAR_BLAS_ONEDNN
    "oneDNN sgemm";
#elif NAZAR_BLAS_OPENBLAS
    "OpenBLAS";
#else
        "naive loops";
#endif

// ---- paths.cpp ----
const char* tier_name(IsaTier t);
// The tier the CPU's feature bits call for from a GEMM library: avx512 with AVX-512 F/DQ/BW/VL
// usable, avx2 with AVX2 + FMA, else below_avx2 (NAZAR_ISA is not consulted: it is reported).
IsaTier expected_tier();
// On the first call: if the library (or NAZAR_ISA) runs below expected_tier(), one line on
// stderr saying so, why, and what to do. Later calls do nothing.
void check_library_once();

// ---- dispatch.cpp, bf16.cpp ----
// The fp32 product on the path dispatch.cpp picks (what gemm_raw runs outside a bf16 scope).
void gemm_fp32(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc);
// gemm_raw's product inside a bf16 GemmPrecisionScope (bf16.h): the AVX512-BF16 kernel, op(B)
// packed once per scope when it lies in the scope's constant memory; or the fallback.
void gemm_bf16_scoped(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc);

// ---- profile.cpp ----
// Non-null only with NAZAR_GEMM_PROFILE=1 (decided on the first call).
class GemmProfile;
GemmProfile* profile();
void profile_add(GemmProfile* p, bool ta, bool tb, int M, int N, int K, double seconds, bool packed,
                 bool bf16);
// Wall and process CPU time at the start of a profiled product; profile_add with it also tallies
// the CPU seconds the product took (all of the pool's threads: the caller waits meanwhile).
struct ProfileStart {
    double wall = 0, cpu = 0;
};
ProfileStart profile_start();
void profile_add(GemmProfile* p, bool ta, bool tb, int M, int N, int K, const ProfileStart& start,
                 bool packed, bool bf16);

}  // namespace nazar::gemm_detail
