#include "nazar/models/encoder.h"

namespace nazar {
Encoder::Encoder(const ModelConfig&, Rng&) { NZ_FAIL("not yet"); }
void Encoder::forward(std::span<const int32_t>, std::span<const int>, TensorView, EncoderCache&, Rng&, Mode) const {
    NZ_FAIL("not yet");
}
void Encoder::backward(std::span<const int32_t>, TensorView, const RNNState&, EncoderCache&) { NZ_FAIL("not yet"); }
void Encoder::collect(const std::string&, ParamList&) { NZ_FAIL("not yet"); }
Bridge::Bridge(const ModelConfig&, Rng&) { NZ_FAIL("not yet"); }
void Bridge::forward(TensorView, const RNNState&, std::span<const int>, TensorView, BridgeCache&) const {
    NZ_FAIL("not yet");
}
void Bridge::backward(TensorView, TensorView, const RNNState&, std::span<const int>, BridgeCache&, TensorView,
                      RNNState&) {
    NZ_FAIL("not yet");
}
void Bridge::collect(const std::string&, ParamList&) { NZ_FAIL("not yet"); }
}  // namespace nazar
