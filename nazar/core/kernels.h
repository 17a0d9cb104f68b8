// Elementwise and row-wise kernels, written as plain loops that GCC vectorises (AVX2/FMA at
// the x86-64-v3 baseline). exp/tanh/sigmoid use simd.h's Cephes polynomials (≈1-2 ulp) instead of
// libm calls, which would not vectorise. kernels_naive.cpp has libm-based versions: the oracle
// the unit tests compare against.
//
// Every function takes `out` last; `out` may alias the input unless stated otherwise.
// Softmax rows are "masked" by a length: entries at and beyond len[r] get weight exactly 0
// (docs/spec.md §6: padding gets score −∞, hence weight 0). A row with len 0 is all zeros.
#pragma once

#include "nazar/core/tensor.h"

#include <cstdint>
#include <span>

namespace nazar::kernels {

float exp1(float x);  // scalar versions of the vector kernels (same polynomials)
float tanh1(float x);
float sigmoid1(float x);

void exp(const float* x, float* y, int64_t n);
void tanh(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);

// y = a * x + y
void axpy(int64_t n, float a, const float* x, float* y);
// out[r, :] += bias (rows, cols) + (cols)
void add_bias_rows(TensorView out, ConstTensorView bias);
// d_bias += Σ_r d_out[r, :]
void sum_rows_into(ConstTensorView d_out, TensorView d_bias);

// out[r, :len[r]] = softmax(x[r, :len[r]]), out[r, len[r]:] = 0. `len` empty = full rows.
//   x, out: (R, S)   len: (R)
void masked_softmax(ConstTensorView x, std::span<const int> len, TensorView out);
// Softmax backward for one or many rows (a = softmax output, zeros outside the mask):
//   d_x = a ⊙ (d_a − Σ_s a ⊙ d_a), written (accumulate = false) or added (accumulate = true).
//   a, d_a, d_x: (R, S)
void softmax_backward(ConstTensorView a, ConstTensorView d_a, TensorView d_x, bool accumulate);
// out[r, :] = x[r, :] − logsumexp(x[r, :]);  x, out: (R, V)
void log_softmax(ConstTensorView x, TensorView out);

// The same, on one contiguous row of n entries (used by attention windows and decoders).
void softmax_row(const float* x, int n, float* out);
float logsumexp_row(const float* x, int n);
// z[i] += b[i] (b null: no bias), then logsumexp_row(z, n), bit for bit, in two passes over z
// (AVX-512 where cpu_features.h allows it; kernels_avx512.cpp). Beam search's output rows.
// next (optional): the row processed after this one, prefetched into L2 during the second pass.
float add_bias_logsumexp_row(float* z, const float* b, int n, const float* next = nullptr);
// Σ_i exp(z[i] − mx) in logsumexp_row's order, bit for bit (its second pass; exported for tests).
float sum_exp_shifted(const float* z, int n, float mx);
// Tests: allow (true, where the CPU has it) or forbid the AVX-512 path; returns whether it runs.
bool set_kernels_avx512(bool on);

namespace naive {
void exp(const float* x, float* y, int64_t n);
void tanh(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void masked_softmax(ConstTensorView x, std::span<const int> len, TensorView out);
void log_softmax(ConstTensorView x, TensorView out);
}  // namespace naive

}  // namespace nazar::kernels
