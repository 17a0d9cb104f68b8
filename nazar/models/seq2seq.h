// The whole attention seq2seq model (docs/spec.md §2-7): its configuration and parameters
// (encoder, bridge, attention, decoder, generator, copy gate) and their precision. What runs it
// keeps its buffers apart: TrainPass (train_pass.h: the training step, evaluation loss and
// forced-decoding scores) and DecodeSession (decode_session.h: the incremental step API that
// greedy and beam search build on). The forward of either reads the model const, so any number
// of sessions and evaluation passes share one model; a training pass writes its gradients.
//
// Parameters (parameters(): docs/design.md §5 names, in this order):
//   encoder.embedding.weight, encoder.rnn.*, bridge.weight/bias (absent for zero),
//   decoder.embedding.weight, decoder.rnn.*, decoder.combine.weight (luong),
//   decoder.deep_output.{state,prev,context}.weight (deep output), attention.* (attention.h),
//   generator.weight (V, d_out) (absent when tied: it IS decoder.embedding.weight), generator.bias
//   (V).
// Determinism: same seed, same data, same thread count => bit-identical results.
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/core/params.h"
#include "nazar/core/precision.h"
#include "nazar/models/config.h"
#include "nazar/models/copy.h"
#include "nazar/models/decoder.h"
#include "nazar/models/encoder.h"
#include "nazar/nn/linear.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace nazar {

// Decoder state of N rows between steps.
struct DecoderState {
    int t = 0;        // steps taken (the next step's index; local-m centres on it)
    Tensor h;         // (L, N, H)
    Tensor c;         // (L, N, H)  LSTM only (else empty)
    Tensor feed;      // (N, H)     luong: s̃_{t-1} (0 before the first step); else empty
    Tensor coverage;  // (N, S) coverage attention: cov_t = Σ_{t'<t} α_t'; else empty
    Tensor previous;  // (N, S) monotonic attention: α_{t−1} (one-hot decoding hard); else empty
    int rows() const { return h.ndim() == 3 ? h.dim(1) : 0; }
};

class PackedWeights;  // core/gemm/packed.h
class PackedMatrix;

// What a model's parameters occupy (Seq2Seq::memory()).
struct ParamMemory {
    std::size_t values = 0;     // fp32 parameter values held in memory
    std::size_t gradients = 0;  // gradient tensors (none for ParamMode::inference)
    std::size_t packed = 0;     // bf16 / int8 packed weight matrices
    int packed_only = 0;        // matrices held only packed (fp32 value: a placeholder)
    std::size_t total() const { return values + gradients + packed; }
};

class Seq2Seq {
public:
    // Validates cfg (UsageError), initialises every parameter from Rng(seed) as PyTorch would.
    // ParamMode::inference (core/params.h; the model loader's choice for translate, score,
    // attention, serve, Translator): no gradients, and placeholders for values until loaded.
    explicit Seq2Seq(const ModelConfig& cfg, uint64_t seed = 1,
                     ParamMode mode = ParamMode::training);
    Seq2Seq(const Seq2Seq&) = delete;
    Seq2Seq& operator=(const Seq2Seq&) = delete;
    ~Seq2Seq();  // models/precision.cpp (PackedWeights is complete there)

    const ModelConfig& config() const { return cfg_; }
    ParamMode param_mode() const { return mode_; }
    // Names and order as above; pointers stay valid for the model's life (a set_precision of an
    // inference model replaces the packed matrices' placeholders). grad null in inference. An
    // inference model's values are written while it is loaded, before it decodes: its first
    // decode of more than kSmallGemmRows rows snapshots the step weights (step_weights_t).
    ParamList parameters();

    // Components (public for tests and the model file; use parameters() to walk them).
    Encoder encoder;
    Bridge bridge;
    Decoder decoder;
    Attention attention;
    Linear generator;    // weight empty when tied (decoder.embedding.weight is used)
    CopyGate copy_gate;  // copy attention (cfg.copy_attention): "copy.gate.*", else disabled

    // Copy attention (cfg.copy_attention; models/copy.h): a copy model's batches carry extended
    // ids (Batch::src_copy / tgt_copy): TrainPass's loss, scores and accuracy are the mixture's
    // (copy_loss.cpp; DecodeSession::set_copy_source for decoding steps).
    ConstTensorView generator_weight() const;  // (V, d_out): generator.weight or the tied embedding

    // Precision of the weight products (DESIGN §7; nazar/models/precision.cpp): bf16 / int8
    // pack every weight matrix a product reads and the two embedding tables (the tensors
    // quantized_file.h lists) once; gemm runs the products packed and the lookups dequantize
    // the rows they read; states, softmax, attention weights and accumulation stay fp32. fp32
    // drops the packed copies. Inference only: TrainPass::train_step refuses a model not in fp32,
    // and the fp32 weights must not change while packed. A training-mode model keeps its fp32
    // tensors beside the packed copies. An inference-mode model keeps only the packed form: each
    // fp32 value becomes a placeholder, so a later set_precision starts from the packed values
    // (dequantized; fp32: into new memory).
    void set_precision(Precision p);
    // The model loader (inference, a bf16 / int8 file): these matrices (by parameter name, each
    // of precision p) become the model's packed form as they are, then set_precision(p).
    void set_packed(Precision p, std::vector<std::pair<std::string, PackedMatrix>> given);
    Precision precision() const { return precision_; }
    std::size_t packed_bytes() const;  // memory of the packed copies
    ParamMemory memory();              // what the parameters occupy

    // The decoder steps' transposed weights (blas.h WeightT) for steps of more than
    // kSmallGemmRows rows: the attention's W_qᵀ, each decoder layer's W_ihᵀ and W_hhᵀ, the
    // generator's Wᵀ (each empty where not used: packed bf16 / int8 weights, copy attention).
    struct StepWeightsT {
        WeightT query, generator;
        std::vector<WeightT> wih, whh;
    };
    // An inference model's weights do not change after loading, so its transposed weights are
    // made once, on the first call, and shared by every DecodeSession (thread-safe); a training
    // model's change between batches: null, its sessions make them per batch. set_precision
    // and set_packed drop them.
    std::shared_ptr<const StepWeightsT> step_weights_t() const;

private:
    mutable std::mutex step_t_mutex_;
    mutable std::shared_ptr<const StepWeightsT> step_t_;
    Precision precision_ = Precision::fp32;
    std::unique_ptr<PackedWeights> packed_;
    ParamMode mode_ = ParamMode::training;

    // cfg already validated; rng draws the init (training)
    Seq2Seq(const ModelConfig& cfg, Rng&& rng, ParamMode mode);
    ModelConfig cfg_;
};

}  // namespace nazar
