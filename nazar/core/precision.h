// The precision a loaded model runs its weight products in (DESIGN §7: chosen at load; the
// packed weights and kernels behind it: nazar/core/gemm/packed.h).
#pragma once

#include <string_view>

namespace nazar {

enum class Precision { fp32, bf16, int8 };
const char* precision_name(Precision p);  // "fp32", "bf16", "int8"
// "fp32" | "bf16" | "int8"; anything else: a one-line error naming the choices.
Precision parse_precision(std::string_view s);

// The inputs of training's large products (training.precision; core/gemm/bf16.h): fp32, or bf16
// with fp32 accumulation.
enum class GemmPrecision { fp32, bf16 };

}  // namespace nazar
