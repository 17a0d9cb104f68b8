// The oracle of coverage attention (coverage.h): T decoder steps of global additive/concat
// attention with the coverage recurrence and the coverage loss, in double precision, straight
// from docs/spec.md §5b: one score at a time from the parameters, no precomputed keys, no fused
// kernels, no shared code with the production path. Its gradients are checked against central
// differences of this forward in double (tests/unit/test_coverage_oracle.cpp).
#pragma once

#include "nazar/attention/attention.h"

#include <span>
#include <vector>

namespace nazar::attn::naive {

struct CoverageRun {
    std::vector<double> weights;   // (T, B, S)  α_t
    std::vector<double> coverage;  // (T, B, S)  cov_t (the coverage step t read)
    std::vector<double> contexts;  // (T, B, C)  c_t
    double loss = 0;  // Σ_t Σ R_t ⊙ c_t + λ Σ_{t, b: real[t·B + b]} Σ_i min(α_ti, cov_ti)
};

// queries (T, B, H), enc_out (B, S, C), R (T, B, C); real (T·B) marks the target steps the
// coverage loss counts. Global attention only.
CoverageRun coverage_forward(const Attention& att, ConstTensorView queries, ConstTensorView enc_out,
                             std::span<const int> lengths, ConstTensorView R,
                             std::span<const bool> real, double lambda);

}  // namespace nazar::attn::naive
