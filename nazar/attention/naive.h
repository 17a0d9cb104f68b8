// The oracle: attention written straight from SPEC §3-5 in double precision, one score at a
// time from the parameters (no precomputed keys, no fused kernels, no windows bookkeeping
// beyond the definition). Slow by design; the tests and bench_attention compare against it.
#pragma once

#include "nazar/attention/attention.h"

namespace nazar::attn::naive {

// Same inputs as Attention::precompute + forward; outputs dense weights and the context.
void attention_forward(const Attention& att,
                       TensorView query,              // (B, H)
                       TensorView enc_out,            // (B, S, C)
                       std::span<const int> lengths,  // (B)
                       int t,
                       TensorView weights,   // (B, S)  out: α at source positions
                       TensorView context);  // (B, C)  out

}  // namespace nazar::attn::naive
