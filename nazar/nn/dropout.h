// Inverted dropout (Srivastava et al. 2014; PyTorch's nn.Dropout):
//
//   training:  out = x ⊙ m,  m_i = 1/(1−p) with probability 1−p, else 0  (drawn from an Rng)
//   eval:      out = x       (identity; also when p = 0)
// The mask is kept in a DropoutCache the caller owns, so backward is d_x += d_out ⊙ m.
// p = 1 drops everything (m = 0), as PyTorch does.
//
// `Mode` is the training/evaluation switch every nn layer with train-only behaviour takes.
// inference is eval with the promise that no backward follows (decoding): a layer may then keep
// only what its forward needs, not what a backward would read (nn/rnn.h).
// Gradients: backward ACCUMULATES (+=) into d_x.
#pragma once

#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

namespace nazar {

enum class Mode { train, eval, inference };

struct DropoutCache {
    Tensor mask{Shape{0}};  // same numel as x: 0 or 1/(1−p). Empty = identity (eval mode or p = 0).
};

class Dropout {
public:
    struct Config {
        float p = 0.0f;  // drop probability, in [0, 1]
    };

    Dropout() = default;
    explicit Dropout(Config cfg);  // checks 0 <= p <= 1

    // Draws one uniform per element from `rng` in train mode (p > 0); eval mode draws nothing.
    // out may alias x.
    void forward(ConstTensorView x,    // any shape
                 TensorView out,       // same numel as x; overwritten
                 DropoutCache& cache,  // out: the mask (resized; empty when identity)
                 Rng& rng, Mode mode) const;

    // d_x += d_out ⊙ m  (d_x += d_out when the cache is empty).
    void backward(ConstTensorView d_out,  // same numel as x
                  const DropoutCache& cache,
                  TensorView d_x) const;  // +=; must not alias d_out

    Config cfg;
};

// ---- masks drawn ahead of a forward (the seq2seq dropout sites, docs/models.md) ----
// Fills `mask` with 1/(1−p) (kept, probability 1−p) or 0 (dropped), one uniform per drawn element
// from `rng` in row-major order; p = 1 gives 0 everywhere. shared_axis >= 0: variational
// (per-sequence) dropout: one draw per element of the shape with that axis removed, the same
// value repeated along the axis (Gal & Ghahramani 2016: one mask per sequence, reused at every
// step); -1: one draw per element. p = 0 draws nothing and fills 1.
void draw_dropout_mask(TensorView mask, float p, Rng& rng, int shared_axis = -1);
// x ⊙= mask elementwise (same numel): forward out = x ⊙ m and backward d_x = d_out ⊙ m.
void apply_dropout_mask(TensorView x, ConstTensorView mask);

}  // namespace nazar
