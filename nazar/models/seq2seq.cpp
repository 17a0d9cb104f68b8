#include "nazar/models/seq2seq.h"

namespace nazar {
Seq2Seq::Seq2Seq(const ModelConfig& cfg, uint64_t seed) : Seq2Seq(cfg, Rng(seed)) {}
Seq2Seq::Seq2Seq(const ModelConfig& cfg, Rng&& rng) : attention(attention_config(cfg), rng) { NZ_FAIL("not yet"); }
ParamList Seq2Seq::parameters() { NZ_FAIL("not yet"); }
LossStats Seq2Seq::train_step(const Batch&, const TrainOptions&, Rng&) { NZ_FAIL("not yet"); }
LossStats Seq2Seq::eval_loss(const Batch&, float) { NZ_FAIL("not yet"); }
void Seq2Seq::score(const Batch&, std::span<double>) { NZ_FAIL("not yet"); }
void Seq2Seq::encode(std::span<const int32_t>, std::span<const int>, int, EncodedSource&) { NZ_FAIL("not yet"); }
void Seq2Seq::select_rows(const EncodedSource&, std::span<const int>, EncodedSource&) const { NZ_FAIL("not yet"); }
void Seq2Seq::init_state(const EncodedSource&, DecoderState&) { NZ_FAIL("not yet"); }
void Seq2Seq::step(std::span<const int32_t>, const EncodedSource&, DecoderState&, TensorView, TensorView) {
    NZ_FAIL("not yet");
}
void Seq2Seq::select_state(const DecoderState&, std::span<const int>, DecoderState&) const { NZ_FAIL("not yet"); }
TensorView Seq2Seq::generator_weight() const { NZ_FAIL("not yet"); }
}  // namespace nazar
