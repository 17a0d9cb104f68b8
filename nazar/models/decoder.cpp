#include "nazar/models/decoder.h"

namespace nazar {
Decoder::Decoder(const ModelConfig&, Rng&) { NZ_FAIL("not yet"); }
void Decoder::step_forward(int, TensorView, TensorView, TensorView, TensorView, const EncodedSource&,
                           const Attention&, TensorView, TensorView, TensorView, DecoderStepCache&, Rng&, Mode) {
    NZ_FAIL("not yet");
}
void Decoder::step_backward(int, TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, TensorView,
                            const EncodedSource&, Attention&, const DecoderStepCache&, TensorView, TensorView,
                            TensorView, TensorView, TensorView, TensorView, TensorView, TensorView) {
    NZ_FAIL("not yet");
}
void Decoder::collect(const std::string&, ParamList&) { NZ_FAIL("not yet"); }
}  // namespace nazar
