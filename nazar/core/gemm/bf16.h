// bf16 x bf16 -> fp32 products (docs/performance.md, "bf16 products"; docs/training.md,
// "Precision").
//
//   gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
// computes C = alpha op(A) op(B) + beta C exactly as gemm_raw (blas.h) means it, except that
// every element of A and B is first rounded to bfloat16 (round to nearest, ties to even; NaN
// stays NaN) and the products are summed in fp32. C, alpha and beta stay fp32. All four
// transpose combinations are supported. The caller passes fp32 pointers; the conversion (and the
// packing the kernel wants) happens inside and is part of its cost.
//
// Kernels, chosen at run time from the CPU's feature bits (bf16_auto_kernel): oneDNN's bf16
// matmul primitive where AMX-BF16 is usable; nazar's own AVX512-BF16 kernel (vdpbf16ps: two bf16
// products per fp32 lane per instruction) where AVX512-BF16 is; otherwise a fallback that rounds
// the inputs to bf16 values held in fp32 and runs the fp32 product (correct, slower than plain
// fp32; reported once on stderr). `nazar bench gemm --precision bf16` measures each; the
// measurements behind the choice are in docs/performance-log.md ("bf16 products").
//
// The precision switch: inside a GemmPrecisionScope(GemmPrecision::bf16, ...) every product of
// gemm / gemm_raw / gemm_xwt large enough to pay for its conversion runs through gemm_bf16
// instead of fp32 (bf16_product_pays). Layers do not branch on it: the trainer sets the scope
// around a training step. The scope also names the memory that stays constant while it lasts
// (the model's parameters): a product whose op(B) lies inside it converts and packs that matrix
// once per scope, not once per call.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/precision.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nazar {

// bf16 bits of x rounded to nearest even (NaN -> a quiet NaN); and back (exact).
uint16_t bf16_bits(float x);
float bf16_value(uint16_t bits);
// x rounded to the nearest bf16, as a float.
inline float bf16_round(float x) {
    return bf16_value(bf16_bits(x));
}

void gemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc);

// Which kernel gemm_bf16 runs. automatic (bf16_auto_kernel): onednn where AMX-BF16 is usable
// (oneDNN's matmul dispatches to AMX tiles; nazar has no AMX kernel), else avx512_bf16 where
// AVX512-BF16 is usable, else fallback.
enum class Bf16Kernel { automatic, avx512_bf16, fallback, onednn };
Bf16Kernel bf16_auto_kernel();
// The same product on a named kernel (tests and benchmarks). avx512_bf16 on a CPU without
// AVX512-BF16 and onednn in a build without oneDNN throw nazar::Error.
void gemm_bf16_on(Bf16Kernel kernel, bool ta, bool tb, int M, int N, int K, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);
// Whether the AVX512-BF16 kernel can run here (the CPU has it and NAZAR_ISA does not cap at avx2).
bool bf16_fast_available();
// Whether gemm_bf16_on(Bf16Kernel::onednn, ...) can run (a oneDNN build).
bool bf16_onednn_available();
// "nazar AVX512-BF16 (vdpbf16ps)" or "fallback: fp32 arithmetic on bf16-rounded inputs (...)".
std::string bf16_description();

// ---- the precision switch of gemm ----
// "fp32" | "bf16"; parse throws nazar::Error naming the choices.
const char* precision_name(GemmPrecision p);
GemmPrecision parse_gemm_precision(const std::string& s);

// Whether bf16 products run faster than fp32 ones on this CPU: where AMX-BF16 is usable
// (oneDNN's matmul on tiles), and where AVX512-BF16 keeps up with the FMAs (AMD Zen 4 and 5:
// vdpbf16ps does two products per lane at the FMA's rate). Not on Intel CPUs that have
// AVX512-BF16 without AMX (vdpbf16ps at half the fp32 FMA rate: bf16 training measured at 0.54x
// fp32 there), nor where only the fallback runs. `why`: one line saying which.
struct Bf16Verdict {
    bool pays = false;
    std::string why;
};
Bf16Verdict bf16_verdict();
// The products' precision of training's `precision` choice (docs/training.md, "Precision"):
// fp32; bf16 where this CPU runs bf16 products faster (bf16_verdict), else fp32 (bf16 is never
// a slowdown); bf16-always: bf16 on any CPU (its rounding, whatever the speed). Anything else
// throws nazar::UsageError naming the choices.
GemmPrecision training_gemm_precision(const std::string& choice);
// The precision gemm runs in now (process-wide: products split over the pool see it too).
GemmPrecision gemm_precision();
// Whether a product of this shape runs in bf16 under a bf16 scope: at least 16 rows, 32 columns
// and 32 inner terms, and at least 1 MFLOP (below that the conversion does not pay; decoding's
// per-step products of <= 8 rows stay fp32).
bool bf16_product_pays(int M, int N, int K);

// Sets the process-wide precision for its lifetime, restoring the previous one after.
// constant: [begin, begin + count) ranges that do not change while the scope lives (the model's
// parameters; the trainer passes them), whose bf16 packing is then cached for the scope. Scopes
// nest; only one thread may open or close them (the trainer's).
struct ConstantRange {
    const float* begin;
    std::size_t count;
};
class GemmPrecisionScope {
public:
    explicit GemmPrecisionScope(GemmPrecision p, std::vector<ConstantRange> constant = {});
    ~GemmPrecisionScope();
    GemmPrecisionScope(const GemmPrecisionScope&) = delete;
    GemmPrecisionScope& operator=(const GemmPrecisionScope&) = delete;

private:
    struct Saved;
    Saved* saved_;
};

// The memory of a model's parameters, for a scope around a training step (forward and backward:
// the weights change only in the optimizer's step, after the scope).
std::vector<ConstantRange> constant_ranges(const ParamList& params);

// Counters since start (benchmarks report them): products run in bf16 and their flops.
struct Bf16Counters {
    int64_t products = 0;
    double flops = 0;
    double seconds = 0;  // wall time inside those products, conversions included
};
Bf16Counters bf16_counters();

}  // namespace nazar
