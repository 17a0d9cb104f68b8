// What bf16.cpp, bf16_kernel.cpp and bf16_onednn.cpp share; not part of nazar's API (bf16.h is).
//
// Packed forms of the nazar AVX512-BF16 kernel. A pair is one uint32: the bf16 of an even k in
// its low half, of k + 1 in its high half (0 past K), which is what vdpbf16ps multiplies.
//   PackedA: op(A) (M x K) as M rows of Kp = ceil(K / 2) pairs.
//   PackedB: op(B) (K x N) as ceil(N / 32) strips of 32 columns, each Kp rows of 32 pairs (the
//            columns past N are 0), one strip after another.
#pragma once

#include <cstdint>
#include <vector>

namespace nazar::bf16_detail {

struct PackedA {
    int M = 0, K = 0, Kp = 0;
    std::vector<uint32_t> data;
};
struct PackedB {
    int N = 0, K = 0, Kp = 0, strips = 0;
    std::vector<uint32_t> data;
};

// Packs op(A) / op(B), over nazar's pool when large. Need AVX-512F (bf16_fast_available()).
void pack_a(bool ta, int M, int K, const float* A, int lda, PackedA& out);
void pack_b(bool tb, int K, int N, const float* B, int ldb, PackedB& out);
// C = alpha op(A) op(B) + beta C from the packed forms, over nazar's pool. Needs AVX512-BF16.
// rows x cols floats (leading dimension ld) -> the same matrix in plain bf16 (cols apart), over
// nazar's pool. Needs AVX-512F.
void round_matrix(const float* x, int rows, int cols, int ld, uint16_t* out);
void gemm_packed(const PackedA& a, const PackedB& b, float alpha, float beta, float* C, int ldc);

// C = alpha op(A) op(B) + beta C with A and B converted to plain bf16 and run on oneDNN's bf16
// matmul primitive (cached per shape). Throws nazar::Error in a build without oneDNN.
void gemm_onednn_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc);
bool onednn_bf16_built();

}  // namespace nazar::bf16_detail
