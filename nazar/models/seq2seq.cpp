// Seq2Seq (seq2seq.h): construction, the parameter list and the shared step weights; the
// training pass is TrainPass's (train_pass.cpp), decoding steps DecodeSession's.
#include "nazar/models/seq2seq.h"

#include "nazar/core/blas.h"
#include "nazar/core/gemm/packed.h"

#include <mutex>

namespace nazar {

namespace {

const ModelConfig& checked(const ModelConfig& cfg) {
    validate(cfg);
    return cfg;
}

}  // namespace

Seq2Seq::Seq2Seq(const ModelConfig& cfg, uint64_t seed, ParamMode mode)
    : Seq2Seq(checked(cfg), Rng(seed), mode) {}

Seq2Seq::Seq2Seq(const ModelConfig& cfg, Rng&& rng, ParamMode mode)
    : encoder(cfg, rng, mode),
      bridge(cfg, rng, mode),
      decoder(cfg, rng, mode),
      attention(attention_config(cfg), rng, mode),
      generator({.in_features = generator_input_size(cfg), .out_features = cfg.tgt_vocab_size}, rng,
                mode),
      mode_(mode),
      cfg_(cfg) {
    if (cfg.tie_target_embeddings) {  // generator.weight IS decoder.embedding.weight
        generator.params.weight = Tensor(Shape{0});
        generator.grad.weight = Tensor(Shape{0});
    }
    if (cfg.copy_attention)  // drawn last: every other parameter as without copy
        copy_gate = CopyGate(encoder_output_size(cfg), decoder.H, decoder.E, rng);
}

ParamList Seq2Seq::parameters() {
    ParamList out;
    encoder.collect("encoder.", out);
    bridge.collect("bridge.", out);
    decoder.collect("decoder.", out);
    collect_params(attention.params, attention.grad, "attention.", out);
    collect_params(generator.params, generator.grad, "generator.", out);
    if (copy_gate.enabled()) copy_gate.collect("copy.gate.", out);
    if (mode_ == ParamMode::training)
        for (const ParamRef& p : out)
            NZ_CHECK(p.grad, "Seq2Seq: parameter '{}' has no gradient in a training model", p.name);
    return out;
}

ConstTensorView Seq2Seq::generator_weight() const {
    return cfg_.tie_target_embeddings ? decoder.embedding.params.weight.view()
                                      : generator.params.weight.view();
}

std::shared_ptr<const Seq2Seq::StepWeightsT> Seq2Seq::step_weights_t() const {
    if (mode_ != ParamMode::inference) return nullptr;
    const std::lock_guard lock(step_t_mutex_);
    if (!step_t_) {
        auto w = std::make_shared<StepWeightsT>();
        const int rows = kSmallGemmRows + 1;  // what the snapshots are made for
        AttentionKeys keys;
        attention.prepare_steps(keys, rows);
        w->query = keys.query_t;
        EncodedSource layers;
        decoder.prepare_steps(layers, rows);
        w->wih = layers.wih_t;
        w->whh = layers.whh_t;
        refresh_weight_t(w->generator, generator_weight());
        step_t_ = std::move(w);
    }
    return step_t_;
}

}  // namespace nazar
