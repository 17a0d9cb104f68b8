// Seq2Seq::set_precision (seq2seq.h): the weight matrices a loaded model's products read,
// packed once in bf16 or int8 and registered for gemm (core/gemm/packed.h).
#include "nazar/models/quantized_file.h"
#include "nazar/models/seq2seq.h"

namespace nazar {

Seq2Seq::~Seq2Seq() = default;

void Seq2Seq::set_precision(Precision p) {
    packed_.reset();
    precision_ = Precision::fp32;
    if (p == Precision::fp32) return;
    auto packed = std::make_unique<PackedWeights>();
    const float* generator = generator_weight().data();
    for (const ParamRef& r : parameters()) {
        const Tensor& w = *r.value;
        // the matrices a quantized file stores quantized, and a tied generator's embedding
        if (!quantized_param(r.name, w.shape()) && (w.numel() == 0 || w.data() != generator))
            continue;
        packed->add(w.data(), w.dim(0), w.dim(1), p);
    }
    packed_ = std::move(packed);
    precision_ = p;
}

std::size_t Seq2Seq::packed_bytes() const {
    return packed_ ? packed_->bytes() : 0;
}

}  // namespace nazar
