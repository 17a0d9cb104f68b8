// The oracle of MoChA's chunkwise weights (Chiu & Raffel 2018, "Monotonic Chunkwise Attention"),
// one sentence row of one decoder step, in double precision, straight from the definitions. On
// top of monotonic attention (naive_monotonic.h), the step attends softly to a chunk of w
// positions ending where the monotonic reader stopped: with α the step's expected monotonic
// alignment and u_j the chunk energies (a second score, its own parameters),
//
//   β_j = Σ_{k=j}^{min(j+w−1, S−1)} α_k · exp(u_j) / Σ_{l=max(0, k−w+1)}^{k} exp(u_l)
//
// the expectation over the stop k of a softmax over the window [k − w + 1, k]: Σ_j β_j = Σ_k α_k
// (each window's softmax sums to 1), w = 1 gives β = α. At test time the stop is hard: k from
// the monotonic decoding (hard_stop), and the weights are that window's softmax (hard_chunk).
// The carried state from step to step stays α, not β.
// Backward (d_β given; D_k = Σ_{l in window(k)} exp(u_l), G_k = Σ_{j in window(k)} d_β_j exp(u_j)):
//   d α_k = G_k / D_k
//   d u_j = exp(u_j) (d_β_j Σ_{k=j}^{j+w−1} α_k / D_k − Σ_{k=j}^{j+w−1} α_k G_k / D_k²)
//
// The model option (AttentionConfig::mocha_chunk) runs monotonic.h's mocha_row, checked
// against this in tests/unit/test_mocha_attention.cpp.
#pragma once

#include <span>
#include <vector>

namespace nazar::attn::naive {

// β (S) from α (S, each in [0, 1]) and u (S); w >= 1.
std::vector<double> chunkwise_weights(std::span<const double> alpha, std::span<const double> u,
                                      int w);
// The gradients of Σ_j d_beta[j] β_j (β as above) with respect to α and u, OVERWRITTEN.
void chunkwise_weights_backward(std::span<const double> alpha, std::span<const double> u, int w,
                                std::span<const double> d_beta, std::span<double> d_alpha,
                                std::span<double> d_u);
// Hard: the softmax of u over [max(0, k − w + 1), k], zeros elsewhere; all zeros for k = −1 (the
// monotonic reader ran off the end).
std::vector<double> hard_chunk(std::span<const double> u, int k, int w);

}  // namespace nazar::attn::naive
