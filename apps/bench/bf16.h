// bf16 GEMM measurements of `nazar bench` (docs/performance.md, "bf16 products"): each kernel's
// rate on the training shapes, and the machine's bf16 GEMM peak (the roofline of bf16 training).
#pragma once

#include "apps/bench/util.h"

#include <nlohmann/json.hpp>

namespace nazar::bench {

// size³ NN product in fp32 and in bf16 on each bf16 kernel this machine runs, interleaved;
// "bf16_gflops" is the best bf16 kernel's wall rate (all threads), the roofline; "instructions":
// one thread's register-only rate of vdpbf16ps against vfmadd231ps (what bounds any bf16 kernel
// without AMX relative to fp32).
nlohmann::json bf16_gemm_peak(int size);
// `nazar bench gemm --precision bf16`: bf16_gemm_peak and the training shapes of preset p on
// every kernel (fp32, nazar AVX512-BF16, oneDNN bf16 matmul, and nazar's with the weight packed
// once as inside a training step), conversion included.
nlohmann::json bench_bf16_gemm(const Preset& p, int size);

}  // namespace nazar::bench
