// A decoded hypothesis and the GNMT ranking score (Wu et al. 2016, §7) that beam search sorts by.
//
//   score(Y) = log p(Y | X) / lp(Y) + cp(X; Y)
//   lp(Y)    = ((5 + |Y|) / 6)^α                         length normalisation (α = 0: none)
//   cp(X; Y) = β Σ_{i < S_b} log(min(Σ_t a_{t,i}, 1))     coverage penalty (β = 0: none)
// |Y| counts every emitted token including the final </s>; a_{t,i} is the attention weight of
// output token t on source position i (the rows of Hypothesis::attention). A source position
// never attended (Σ_t a = 0) contributes β·log(1e-10) instead of −∞, as the PyTorch reference
// (python/nazar_torch.py coverage_penalty) does.
#pragma once

#include "nazar/core/tensor.h"

#include <cstdint>
#include <vector>

namespace nazar {

struct Hypothesis {
    std::vector<int32_t> tokens;  // (n) emitted ids, ending with </s> when finished
    bool finished = false;        // false: cut at the maximum length
    double log_prob = 0;          // Σ log p of the emitted tokens (raw, unnormalised)
    double score = 0;             // log_prob / lp + cp: what n-best lists are sorted by
    Tensor attention;             // (n, S_b) attention weights of each emitted token
    std::vector<float> p_gen;     // (n) copy attention: p_gen of each emitted token; else empty
    std::vector<int> read;        // (n) streaming (stream.h): source tokens read when each token
                                  // was emitted; else empty
    int steps = 0;                // decoder steps its sentence ran (>= n: beams go on after it)
    bool constraints_met = true;  // every include constraint placed (constraints.h); a search
                                  // cut at the maximum length may return one without
};

// ((5 + n) / 6)^alpha.
double length_penalty(int n, float alpha);
// beta · Σ_i log(clamp(Σ_t attention[t, i], 1e-10, 1)); 0 when beta == 0 or S_b == 0.
double coverage_penalty(ConstTensorView attention,  // (n, S_b)
                        float beta);
// log_prob / length_penalty(n, alpha) + coverage_penalty(attention, beta), n = attention rows.
double ranking_score(double log_prob, ConstTensorView attention,  // (n, S_b)
                     float alpha, float beta);

}  // namespace nazar
