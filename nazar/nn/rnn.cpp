#include "nazar/nn/rnn.h"

namespace nazar {
RNN::RNN(Config c, Rng&) : cfg(c) { NZ_FAIL("not yet"); }
RNNState RNN::zero_state(int) const { NZ_FAIL("not yet"); }
void RNN::forward(TensorView, std::span<const int>, const RNNState&, TensorView, RNNState&, RNNCache&, Rng&,
                  Mode) const {
    NZ_FAIL("not yet");
}
void RNN::backward(TensorView, const RNNState&, const RNNCache&, TensorView, RNNState&) { NZ_FAIL("not yet"); }
}  // namespace nazar
