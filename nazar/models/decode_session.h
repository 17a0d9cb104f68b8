// One decoding thread's view of a model: the incremental step API that greedy and beam search
// build on (decode/), over a Seq2Seq that it only reads, with every per-call buffer its own.
//
//   const Seq2Seq& model = ...;           // loaded once, never written while decoding
//   DecodeSession a(model), b(model);     // one per thread: a and b may run at the same time
//   a.encode(src, lengths, S, enc);  a.init_state(enc, st);  a.step(prev, enc, st, lp, {});
//
// encode() once -> init_state() -> step() repeatedly; select_rows() / select_state() gather
// rows (expand a batch to beams, reorder beams). Eval mode: no dropout, no gradients. The
// weights are the model's, shared by every session over it (Translator replicas, nazar serve's
// workers, ensembles, Python threads): a session adds only its buffers, sized by the batch it
// decodes (batch_size · beam_size rows) and reused. Sessions over one model may run at once from
// any threads; one session runs one call at a time. The model must outlive its sessions and
// must not change while they decode (set_precision, training steps, loading weights).
#pragma once

#include "nazar/models/seq2seq.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nazar {

class PackedWeights;  // core/gemm/packed.h (an internal header: not installed)

class DecodeSession {
public:
    explicit DecodeSession(const Seq2Seq& model);
    ~DecodeSession();
    DecodeSession(DecodeSession&&) noexcept;
    DecodeSession& operator=(DecodeSession&&) noexcept;

    const Seq2Seq& model() const { return *model_; }
    const ModelConfig& config() const { return model_->config(); }

    // src (N·S) row-major, lengths (N) in [0, S]. S = 0 (every source empty) is allowed:
    // enc_out (N, 0, C), attention rows of width 0, context 0 (as for any empty sentence).
    // rows_per_sentence: decoder rows per sentence in the steps that follow (the beam size), so
    // that the per-step weights are transposed for the batch only when that pays (blas.h).
    void encode(std::span<const int32_t> src, std::span<const int> lengths, int S,
                EncodedSource& out, int rows_per_sentence = 1);
    // out row n = in row rows[n] (any N'; repeats allowed): expand sentences to beams. The
    // encoder states and attention keys are not copied: out reads them from the encoding `in`
    // came from (EncodedSource::shared), which must outlive out and stay unchanged.
    void select_rows(const EncodedSource& in, std::span<const int> rows, EncodedSource& out) const;
    // The bridge's initial state for every row of `src`; t = 0, feed = 0.
    void init_state(const EncodedSource& src, DecoderState& state) const;
    // One step: prev tokens (N) -> log-probs (N, V), attention weights (N, S) (dense, zero at
    // padding / outside local windows); state advances to t + 1 in place.
    void step(std::span<const int32_t> prev,  // (N)
              const EncodedSource& src, DecoderState& state,
              TensorView log_probs,   // (N, V) out
              TensorView attention);  // (N, S) out; empty view = not needed
    // step() without the log-softmax (beam search's fused path): logits (N, V) = the output
    // layer's X Wᵀ, its bias not added (step_logits_bias(): null when absent), so that
    // log p = fl(fl(z + b) − logsumexp) is the value step() writes. Not for copy attention.
    void step_logits(std::span<const int32_t> prev, const EncodedSource& src, DecoderState& state,
                     TensorView logits, TensorView attention);
    const float* step_logits_bias() const;
    // Monotonic attention (attention/monotonic.h): true (the default) decodes hard, as search
    // does; false steps with the expected alignment, as training and `nazar score` do (forced
    // alignment: its scores and weights are then the teacher-forced ones).
    void set_hard_monotonic(bool hard) { hard_monotonic_ = hard; }
    bool has_step_logits() const { return !config().copy_attention; }
    // step_logits() in two parts (beam search's grouped output): step_hidden advances the state
    // and writes the attention; then step_logits_rows writes rows [r0, r1) of the step's logits
    // (r1 − r0, V), for any row ranges, in any order, from any threads at once (const: it only
    // reads the step's hidden rows), until this session's next step. Not for copy attention.
    void step_hidden(std::span<const int32_t> prev, const EncodedSource& src, DecoderState& state,
                     TensorView attention);
    void step_logits_rows(int r0, int r1, TensorView logits) const;
    // Whether a logits row of step_logits_rows is the same bits whatever row range it is
    // computed in, and as in step_logits' one product of the step's `rows` rows of src, for
    // ranges of at least min_rows rows (0: not for this step). See decode_session.cpp.
    int step_logits_group_min_rows(const EncodedSource& src, int rows) const;
    // out row n = in row rows[n] (reorder/select beams). out must not be in.
    void select_state(const DecoderState& in, std::span<const int> rows, DecoderState& out) const;

    // ---- an output shortlist (decode/shortlist.h) ----
    // Restricts the output layer to the target ids `ids` (increasing, < V): step(),
    // step_logits() and step_logits_rows() then write M = ids.size() columns, column j for id
    // ids[j] (step()'s log-probs normalised over them), with the output layer's rows gathered
    // once here (bf16 / int8 weights: their packed rows, the same values). Empty: the whole
    // vocabulary again. Not for copy attention.
    void restrict_output(std::span<const int32_t> ids);
    std::span<const int32_t> output_ids() const { return out_ids_; }  // empty: all V

    // ---- copy attention (models/copy.h) ----
    // A copy model's steps need the sources' extended ids: set_copy_source after encode (ids
    // (N·S) row-major, < ext_vocab; select_rows carries them); step() then writes log-probs over
    // step_vocab(src) = V + max_b X_b columns, reads previous ids >= V as <unk>, and
    // last_p_gen() holds each row's p_gen of that step.
    void set_copy_source(EncodedSource& src, std::span<const int32_t> ids, int ext_vocab) const;
    int step_vocab(const EncodedSource& src) const;
    std::span<const float> last_p_gen() const { return p_gen_; }

    // ---- what a search keeps from one batch to the next (decode/beam_search.cpp) ----
    // The batch's encoding, its rows selected for the beams, the decoder states and the step's
    // outputs, reused by every batch this session decodes: it then holds the largest batch's
    // buffers once, where fresh ones per batch left a freed block of every size it had decoded
    // in the block cache (core/block_cache.h), per decoding thread. The search drops the
    // per-batch weights they refer to (release_weights) before it returns.
    struct SearchBuffers {
        EncodedSource enc, rows_enc;
        DecoderState state, next_state;
        Tensor log_probs, attention;
        void release_weights();
    };
    SearchBuffers& search_buffers() { return search_; }
    // The search is over (decode/beam_search.cpp, even by a throw): drops the per-batch weights
    // (SearchBuffers::release_weights) and gives the pages of the batch's buffers back to the
    // system (Tensor::discard_pages: the search's and the steps', all dead until the next batch
    // writes them). A session decoding batch after batch then holds at any time either a
    // batch's encoder scratch or its step buffers (the logits above all), not both: four
    // decoding threads at 32 x 5 rows hold about 5 MB less each.
    void end_search();
    // The smallest buffer whose pages a search's end (and the encoder) gives back: 16 pages, whose
    // faults when the next batch writes them again cost far less than its products over them.
    static constexpr int64_t kScratchDiscardBytes = int64_t{64} << 10;

private:
    const Seq2Seq* model_;
    bool hard_monotonic_ = true;

    // step() / step_logits() before and after the output layer
    void step_decoder(std::span<const int32_t> prev, const EncodedSource& src, DecoderState& state);
    void step_attention(const EncodedSource& src, DecoderState& state, TensorView attn) const;
    void copy_step_log_probs(const EncodedSource& src, ConstTensorView s_top,  // (N, H) s_t
                             TensorView log_probs);                            // step()'s

    // ---- buffers (sized per call, reused) ----
    EncoderCache enc_cache_;
    BridgeCache bridge_cache_;
    Tensor emb_;                 // (N, E)      e_t
    Tensor out_;                 // (N, d_out)  o_t, the output layer's input
    WeightT step_generator_t_;   // step_hidden's src.generator_t, for step_logits_rows
    DecoderStepCache cache_;     // the step's cells, context and attention
    std::vector<int32_t> prev_;  // (N) previous ids, extended ones as <unk> (copy attention)
    std::vector<float> p_gen_;   // (N) p_gen of the last step (copy attention)
    Tensor copy_alpha_;          // (N, S)          dense α
    Tensor copy_in_, copy_g_;    // (N, C + H + E)  gate inputs, (N) g
    Tensor logits_;              // (N, V)          the generator's log-probs (copy attention)
    // restrict_output: the ids, the gathered output rows (M, d_out) and bias (M), and their
    // packed form registered for gemm (bf16 / int8 models)
    std::vector<int32_t> out_ids_;
    Tensor sub_w_, sub_b_;
    std::unique_ptr<PackedWeights> sub_packed_;
    SearchBuffers search_;
    ConstTensorView output_weight() const;
    ConstTensorView output_bias() const;
};

}  // namespace nazar
