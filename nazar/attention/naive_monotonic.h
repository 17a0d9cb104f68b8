// The oracle of monotonic attention's alignment (Raffel et al. 2017, "Online and Linear-Time
// Attention by Enforcing Monotonic Alignments"; docs/spec.md §5.6), one sentence row of one decoder
// step, in double precision, straight from the definitions. The decoder reads the source left to
// right: at step t, from the position where step t − 1 stopped, it moves on past position j with
// probability 1 − p_j and stops there (attends to h_j) with probability p_j, p_j = σ(e_j) the
// selection probability of the step's energy e_j. The expected alignment α_t (the probability that
// step t stops at j) follows from α_{t−1}:
//
//   α_t[j] = p_j · Σ_{l ≤ j} α_{t−1}[l] · Π_{l ≤ k < j} (1 − p_k)
//
// computed two ways, both kept (the issue asks for both, and the tests hold them equal):
//   recursive  q_0 = α_{t−1}[0],  q_j = (1 − p_{j−1}) q_{j−1} + α_{t−1}[j],  α_t[j] = p_j q_j
//              O(S), sequential in j; the form nazar's kernels use (monotonic.h)
//   parallel   with L_j = Σ_{k<j} log(1 − p_k) (so Π_{l ≤ k < j} (1 − p_k) = exp(L_j − L_l)):
//              α_t = p ⊙ (M α_{t−1}),  M[j][l] = exp(L_j − L_l) for l ≤ j, else 0
//              every entry of M is in [0, 1] (L falls with j), so nothing overflows or divides by
//              a vanishing product, as the cumprod / cumsum form of the paper does (it clamps
//              the product to [1e-10, 1]); O(S²), every position independent of the others
// α_t sums to at most Σ α_{t−1}: the rest is the probability of running off the end of the source
// without stopping (no context at that step). Step 0 starts from α_{−1} = (1, 0, …, 0).
// At test time the decoding is hard: hard_stop() is the position step t attends to.
// The model option (monotonic: true) is monotonic.h; naive.h's attention_forward/backward take
// a step's monotonic inputs and use this oracle for the alignment.
#pragma once

#include <span>
#include <vector>

namespace nazar::attn::naive {

// α_t from p (S) and α_{t−1} (S), each in [0, 1]; recursive form.
std::vector<double> monotonic_alignment(std::span<const double> p, std::span<const double> prev);
// The same, parallel form (the log-space triangular product above).
std::vector<double> monotonic_alignment_parallel(std::span<const double> p,
                                                 std::span<const double> prev);
// The gradients of Σ_j d_alpha[j] α_t[j] (α_t as above) with respect to p and α_{t−1},
// OVERWRITTEN, by reverse-mode through the recursive form:
//   d q_j = d α_j p_j + (1 − p_j) d q_{j+1}      (d q_S = 0)
//   d p_j = d α_j q_j − q_j d q_{j+1}            (q_{j+1} reads (1 − p_j) q_j)
//   d α_{t−1}[j] = d q_j
void monotonic_alignment_backward(std::span<const double> p, std::span<const double> prev,
                                  std::span<const double> d_alpha, std::span<double> d_p,
                                  std::span<double> d_prev);
// Hard monotonic decoding: the first position j >= from with p_j >= 0.5 (the step attends to h_j
// and the next step starts there), or -1 when none (no context; the next step starts at the end).
int hard_stop(std::span<const double> p, int from);

}  // namespace nazar::attn::naive
