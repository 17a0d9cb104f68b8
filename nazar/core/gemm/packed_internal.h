// What packed.cpp (the gemm_packed driver, portable path) shares with the fast kernels
// (packed_int8.cpp: AVX512-VNNI, packed_bf16.cpp: AVX512-BF16; both built from the register
// block of packed_block.h) and the registry (packed_registry.cpp). Not part of the API.
#pragma once

#include "nazar/core/gemm/packed.h"

#include <cstdint>
#include <vector>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NZ_PACKED_X86 1
#endif

// NZ_PACKED_TARGET_BEGIN("avx512f,...") ... NZ_PACKED_TARGET_END: the functions between them
// (packed_block.h's templates included) are compiled for those instruction sets — gcc by its
// target pragma, clang (which ignores that pragma) by an attribute on each function — with
// gcc's uninitialized-variable warnings off (false positives on the register block's
// accumulator arrays). packed_int8.cpp and packed_bf16.cpp open one region each.
#define NZ_PACKED_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define NZ_PACKED_TARGET_PUSH(features) \
    NZ_PACKED_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define NZ_PACKED_TARGET_POP NZ_PACKED_PRAGMA(clang attribute pop)
#else
#define NZ_PACKED_TARGET_PUSH(features) \
    NZ_PACKED_PRAGMA(GCC push_options) NZ_PACKED_PRAGMA(GCC target(features))
#define NZ_PACKED_TARGET_POP NZ_PACKED_PRAGMA(GCC pop_options)
#endif
#define NZ_PACKED_TARGET_BEGIN(features)                             \
    NZ_PACKED_TARGET_PUSH(features)                                  \
    NZ_PACKED_PRAGMA(GCC diagnostic push)                            \
    NZ_PACKED_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized") \
    NZ_PACKED_PRAGMA(GCC diagnostic ignored "-Wuninitialized")
#define NZ_PACKED_TARGET_END NZ_PACKED_PRAGMA(GCC diagnostic pop) NZ_PACKED_TARGET_POP

namespace nazar::packed_detail {

// Activations, made once per call: rows of 4-byte groups covering W's groups [g0, g0 + ng);
// column k of the block sits at position off + k, off = k0 % per_group (positions outside the
// block hold a neutral value: bf16 0, int8 unsigned 128 = signed 0).
struct Activations {
    std::vector<uint8_t> data;  // M x (4 ng) bytes
    std::vector<float> scale;   // int8: r_m per row
    int stride = 0;             // bytes per row
};

// What one product needs besides the activations.
struct Job {
    Precision p;
    const PackedMatrix* W;
    const Activations* act;
    int g0, ng;          // W's groups
    const int32_t* sum;  // int8: Σ w_q over the groups, per row of W
    int n0, n1;          // rows of W = columns of C
    float alpha, beta;
    float* C;
    int ldc;
};

// One 16-wide output value set: C[m][n - n0] for the in-range n of panel p, from v[16] (int32
// sums for int8, fp32 sums for bf16). The portable path and the fast kernels both end here
// (the fast kernels only when the panel is partial), so the epilogues agree.
void store_scalar(const Job& j, int m, int p, const void* v);

#ifdef NZ_PACKED_X86
// The fast kernels; call only where the CPU has the instructions (packed.cpp, use_fast).
// Activation row of k values from a into out at position off (int8: its scale r_m into *r);
// the same values as the portable rounding (same IEEE operations, round to nearest even).
void prepare_row_int8(const float* a, int k, int off, uint8_t* out, float* r);
void prepare_row_bf16(const float* a, int k, int off, uint8_t* out);
// Panels [p0, p1) of the product for all M rows.
void panels_int8(const Job& j, int p0, int p1, int M);
void panels_bf16(const Job& j, int p0, int p1, int M);
// The same products on AMX tiles (packed_amx.cpp): int8 the same bits as panels_int8, bf16
// within the same bounds as panels_bf16; call only where cpu_features().amx_int8 / amx_bf16.
void panels_amx_int8(const Job& j, int p0, int p1, int M);
void panels_amx_bf16(const Job& j, int p0, int p1, int M);
#endif

}  // namespace nazar::packed_detail
