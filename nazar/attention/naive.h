// The oracle: attention written straight from docs/spec.md §3-5 in double precision, one score at a
// time from the parameters (no precomputed keys, no fused kernels, no windows bookkeeping
// beyond the definition), forward and backward. Slow by design; the tests and bench_attention
// compare against it. Shares no code with the production path (attention.cpp, row_equations.*).
#pragma once

#include "nazar/attention/attention.h"

namespace nazar::attn::naive {

// Monotonic attention's per-step inputs (cfg.monotonic; monotonic.h), by source position (B, S):
// α_{t−1}, the pre-sigmoid noise (or empty), whether the step is hard (decoding; forward only),
// and where the backward writes d α_{t−1} (OVERWRITTEN; or empty). With MoChA (cfg.mocha_chunk
// > 0) the forward's weights are the chunkwise β (naive_mocha.h) and `alpha`, when given, gets
// the step's monotonic α (OVERWRITTEN), the state carried to the next step.
struct MonotonicStep {
    ConstTensorView previous;
    ConstTensorView noise;
    bool hard = false;
    TensorView d_previous;
    TensorView alpha;
};

// Same inputs as Attention::precompute + forward; outputs dense weights and the context.
void attention_forward(const Attention& att,
                       ConstTensorView query,         // (B, H)
                       ConstTensorView enc_out,       // (B, S, C)
                       std::span<const int> lengths,  // (B)
                       int t,
                       TensorView weights,  // (B, S)  out: α at source positions
                       TensorView context,  // (B, C)  out
                       const MonotonicStep* monotonic = nullptr);  // required when monotonic

// The gradient of Σ d_context ⊙ c for the c of attention_forward (same inputs), every
// derivative taken from the definitions in double: d_query, d_enc_out and, in `grad` (shaped
// like att.params, absent parameters (0)-shaped), every parameter's. All OVERWRITTEN (not +=).
// The window choice of local-p (the rounding of p_t) is piecewise constant: no gradient.
void attention_backward(const Attention& att,
                        ConstTensorView query,         // (B, H)
                        ConstTensorView enc_out,       // (B, S, C)
                        std::span<const int> lengths,  // (B)
                        int t,
                        ConstTensorView d_context,                  // (B, C)
                        TensorView d_query,                         // (B, H)     out
                        TensorView d_enc_out,                       // (B, S, C)  out
                        AttentionParams& grad,                      // out
                        const MonotonicStep* monotonic = nullptr);  // required when monotonic

}  // namespace nazar::attn::naive
