// The attention decoders (docs/spec.md §3 Bahdanau, §4 Luong, §5 local), one step at a time.
// One class serves both kinds: they share the stacked cells, the embedding, the attention and
// the backward bookkeeping, and differ only in where attention sits and what reaches the output.
// Per step t (e_t = Emb_tgt(y_{t-1}), s^l = state of layer l, s = top layer, L layers):
//
//   bahdanau (timing before):  c_t  = attn(query = s_{t-1})
//                              s_t  = cell([e_t ; c_t], s_{t-1})                 (always feeds c_t)
//                              o_t  = s_t,  or deep output  tanh(L_s s_t + L_y e_t + L_c c_t)
//   luong    (timing after):   s_t  = cell(x_t, s_{t-1}),  x_t = e_t  or  [e_t ; s̃_{t-1}] (input
//                                     feeding, s̃_{-1} = 0)
//                              c_t  = attn(query = s_t)      (timing before: query = s_{t-1})
//                              o_t  = s̃_t = tanh(W_c [s_t ; c_t])              (no bias)
//   p(y_t | ...) = softmax(W_o o_t + b_o)   — the generator lives in Seq2Seq (fused loss).
// Stacked layers: layer 0 reads x_t, layer l > 0 reads dropout(s^{l-1}_t) (train mode only).
// Attention keys are computed once per batch (Attention::precompute, in Seq2Seq).
//
// Parameters (visit names relative to "decoder."; the attention's are under "attention."):
//   embedding.weight (V, E);  rnn.weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}
//   (layer 0 input size E + F, F = C for bahdanau, H with input feeding, else 0);
//   combine.weight (H, H + C) (luong);  deep_output.state.weight (D_o, H),
//   deep_output.prev.weight (D_o, E), deep_output.context.weight (D_o, C) (bahdanau deep output).
//
// Two backward paths, same terms: step_backward is the plain per-step reference (every gradient
// accumulated per step); SequenceBackward (sequence_backward.h) is the training step's
// whole-sequence backward (weight gradients one GEMM per chunk of steps).
// Gradients: both ACCUMULATE (+=) into every d_* argument and into the params' grads.
// Not thread-safe: scratch buffers are members (no allocation inside the time loop).
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/core/blas.h"
#include "nazar/core/params.h"
#include "nazar/models/config.h"
#include "nazar/nn/dropout.h"
#include "nazar/nn/embedding.h"
#include "nazar/nn/gru_cell.h"
#include "nazar/nn/linear.h"
#include "nazar/nn/lstm_cell.h"

#include <cstdint>
#include <span>
#include <vector>

namespace nazar {

// What attention reads: the encoder outputs of N decoder rows and their keys (once per batch).
struct EncodedSource {
    int N = 0, S = 0;
    std::vector<int> lengths;  // (N)  real source lengths S_b
    Tensor enc_out;            // (N, S, C)
    AttentionKeys keys;        // (N, S, K)
    Tensor init_h;             // (L, N, H) the bridge's initial decoder state s_0 (step API)
    // The decoder's per-step weights transposed for this batch (Decoder::prepare_steps; blas.h):
    // [L] W_ihᵀ, W_hhᵀ of each layer, empty when the steps have too few rows to gain from them.
    // Shared, not copied, by DecodeSession::select_rows.
    std::vector<WeightT> wih_t, whh_t;
    // The generator's Wᵀ for this batch's steps (DecodeSession::encode), empty at <= kSmallGemmRows
    // rows and for bf16 / int8 weights. Shared by DecodeSession::select_rows.
    WeightT generator_t;
    // Copy attention (models/copy.h): the extended ids x̂ of the source positions (N·S,
    // row-major; DecodeSession::set_copy_source) and the extended vocabulary size V + max_b X_b.
    std::vector<int32_t> copy_ids;
    int copy_vocab = 0;
    // DecodeSession::select_rows: step row n reads row shared_rows[n] of shared->enc_out and
    // shared->keys (the encoding it was selected from, not copied; it must outlive this one),
    // and enc_out, keys here stay empty. Null: this source's own. Decoder steps only.
    const EncodedSource* shared = nullptr;
    std::vector<int> shared_rows;
    const EncodedSource& states() const { return shared ? *shared : *this; }
    // What the first n decoder rows read: a training step's active rows are a prefix of the
    // batch (TrainPass::decoder_forward). With `shared`, n is N and the shared states are whole.
    ConstTensorView enc_out_rows(int n) const {
        return shared ? shared->enc_out.view() : enc_out.slice(0, n);
    }
    std::span<const int> length_rows(int n) const {
        return std::span<const int>(lengths).first(static_cast<std::size_t>(n));
    }
};

// Everything one step's backward needs; the training loop keeps T of them, inference one.
struct DecoderStepCache {
    Tensor x0;                          // (N, E + F)  layer-0 input [e_t ; feed]
    std::vector<Tensor> layer_in;       // [L]  (N, H) dropout(s^{l-1}_t) for l > 0 ([0] unused)
    std::vector<DropoutCache> dropout;  // [L]
    std::vector<GRUStepCache> gru;      // [L]  (GRU)
    std::vector<LSTMStepCache> lstm;    // [L]  (LSTM)
    AttentionStepCache attention;
    Tensor context;     // (N, C)      c_t
    Tensor combine_in;  // (N, H + C)  [s_t ; c_t] (luong)
    Tensor deep_term;   // (N, d_out)  deep output: one product's rows before they are summed
};

// What outputs_forward keeps for SequenceBackward::outputs_backward (split outputs).
struct DecoderOutputsCache {
    Tensor comb;                           // (T, N, H + C)  [s_t ; c_t] of every step
    Tensor q;                              // (T, N, H)  scratch: s_t of the top layer (L > 1)
    Tensor ctx;                            // (T, N, C)  scratch: Attention::forward_steps' c_t
    std::vector<AttentionStepCache*> att;  // [T] scratch: the steps' attention caches
    // Active rows (outputs_forward's `active`): the combine ran on step t's first rows[t] rows
    // only, packed in time order: packed = those rows of comb (R, H + C), R = Σ rows[t].
    // Empty: every row, comb whole.
    std::vector<int> rows;
    Tensor packed;      // (R, H + C)
    Tensor packed_out;  // (R, H)  scratch: tanh(W_c [s; c]) of the packed rows
};

// A SequenceBackward's storage (sequence_backward.h). The pass owns it while it runs; the
// Decoder keeps it between passes only so that it stops allocating after the first batch.
struct SequenceBackwardBuffers {
    std::vector<Tensor> d_gi, d_gh;  // [L] (chunk, N, G·H) gate gradients (LSTM w/o LN: d_gi)
    Tensor d_z;                      // (chunk, N, H)  Luong combine: d (W_c [s; c])
    Tensor d_u, d_pre;               // (chunk, N, A), (chunk, N, P)  attention query side
    Tensor gather;                   // (chunk, N, w)  per-step inputs made contiguous
    Tensor d_z_seq;                  // (T, N, H)  split outputs: d (W_c [s; c]) of every step
    Tensor d_ctx_seq;                // (T, N, C)  split outputs: d c_t from the combine
    Tensor d_s_seq;                  // (T, N, H)  split outputs: d s_t from combine + attention
    Tensor q_seq;                    // (T, N, H)  s_t of the top layer, gathered when L > 1
    std::vector<const AttentionStepCache*> att;  // [T] the steps' attention caches
    Tensor d_z_packed;  // (R, H)  split outputs with active rows: d_z_seq's active rows, packed
};

// Where one step's weight-side gradients go inside a SequenceBackward: the step's rows of the
// pass's chunk buffers. The step writes its pre-activation gradients there and computes only
// the data gradients the recurrence needs; the pass turns the rows into weight gradients.
struct DeferredStep {
    std::span<Tensor> d_gi, d_gh;         // [L] (chunk, N, G·H) gate gradients (d_gh: GRU, LN)
    int row = 0;                          // this step's row of the chunk buffers (its first n)
    TensorView d_z;                       // (N, H)  Luong combine: d (W_c [s; c]) of this step
    AttentionQueryGrad* query = nullptr;  // query-side rows, or null (no query weights)
};

class SequenceBackward;

class Decoder {
public:
    Decoder() = default;
    // init order: embedding, rnn layers, combine/deep output; inference: core/params.h
    Decoder(const ModelConfig& cfg, Rng& rng, ParamMode mode = ParamMode::training);

    int feed_size() const { return feed_; }     // F
    int output_size() const { return d_out_; }  // d_out
    bool timing_before() const { return before_; }

    // One step for N rows: the source's first N (N <= src.N; src.N without `shared`).
    // h_prev/c_prev are all layers' states before the step; h_new/c_new
    // receive them after (must not alias h_prev/c_prev in train mode; may alias in eval mode).
    // feed_prev: s̃_{t-1} with input feeding (N, H), else empty. out: o_t (N, d_out); for luong
    // it is s̃_t (the next step's feed_prev). c_prev/c_new: LSTM only (empty views for GRU).
    // Makes src.wih_t / whh_t from the current weights when the steps will have more than
    // kSmallGemmRows rows (`step_rows`), clears them otherwise. Call once per batch, after any
    // change to the weights (as for the attention keys).
    void prepare_steps(EncodedSource& src, int step_rows) const;
    void step_forward(
        int t,
        ConstTensorView emb,        // (N, E)     e_t
        ConstTensorView h_prev,     // (L, N, H)
        ConstTensorView c_prev,     // (L, N, H)  LSTM
        ConstTensorView feed_prev,  // (N, H)     s̃_{t-1} (luong input feeding), else empty
        const EncodedSource& src,   // N rows
        const Attention& attention,
        TensorView h_new,         // (L, N, H)  out
        TensorView c_new,         // (L, N, H)  out (LSTM)
        TensorView out,           // (N, d_out) out: o_t
        DecoderStepCache& cache,  // out
        Rng& rng, Mode mode,
        TensorView gi0 = {}) const;  // (N, G·H) e_t W_eᵀ + b_ih from project_embeddings, or
                                     // empty (computed here); += f_t W_fᵀ in place (layer
                                     // norm: e_t W_eᵀ, then normalised and biased in place)

    // Teacher forcing (inputs known in advance): the embedding half of layer 0's input
    // projection for all T steps as one GEMM (W_ih = [W_e | W_f] column blocks):
    //   gi0[t] = e_t W_eᵀ + b_ih;  step_forward(t, ..., gi0[t]) then adds only f_t W_fᵀ.
    int gate_size() const { return (cell == CellType::gru ? 3 : 4) * H; }  // G·H
    bool layer_norm() const {                                              // layer-normalised cells
        return (cell == CellType::gru ? gru[0].params : lstm[0].params).layer_norm();
    }
    void project_embeddings(ConstTensorView emb,    // (T, N, E)
                            TensorView gi0) const;  // (T, N, G·H) overwritten

    // Backward of step_forward, the per-step reference: every gradient, weights included, is
    // accumulated here. d_h_new/d_c_new: gradient w.r.t. h_new/c_new (read; the direct terms of
    // this step are added into them); d_h_prev/d_c_prev += gradient w.r.t. h_prev/c_prev.
    // d_out: gradient w.r.t. o_t (complete: the caller adds the next step's d_feed_prev first).
    void step_backward(int t,
                       ConstTensorView d_out,   // (N, d_out)
                       ConstTensorView emb,     // (N, E)     same tensors forward saw
                       ConstTensorView h_prev,  // (L, N, H)
                       ConstTensorView c_prev,  // (L, N, H)
                       ConstTensorView h_new,   // (L, N, H)
                       ConstTensorView c_new,   // (L, N, H)
                       ConstTensorView out,     // (N, d_out)
                       const EncodedSource& src, Attention& attention,
                       const DecoderStepCache& cache,
                       TensorView d_h_new,      // (L, N, H)  read and modified (scratch)
                       TensorView d_c_new,      // (L, N, H)  LSTM; read and modified
                       TensorView d_h_prev,     // (L, N, H)  +=
                       TensorView d_c_prev,     // (L, N, H)  +=  (LSTM)
                       TensorView d_feed_prev,  // (N, H)     += (input feeding; else empty)
                       TensorView d_emb,        // (N, E)     +=
                       TensorView d_enc_out,    // (N, S, C)  +=
                       TensorView d_keys);      // (N, S, K)  +=

    // Split outputs. Luong without input feeding, attention after the step (query s_t): the
    // recurrence does not depend on attention, so a teacher-forced sequence can run every
    // step's cells first (cells_forward, t = 0 … T−1) and then attention + combine for all T
    // steps at once (outputs_forward: the combine is one GEMM over T·N rows). The backward is
    // SequenceBackward::outputs_backward then SequenceBackward::cells_step.
    bool can_split_outputs() const { return kind == DecoderKind::luong && feed_ == 0 && !before_; }
    // step_forward's cells alone: s_t = cell(e_t, s_{t-1}) for every layer; cache.context,
    // cache.attention and out are left to outputs_forward. Needs can_split_outputs().
    void cells_forward(ConstTensorView emb,     // (N, E)     e_t
                       ConstTensorView h_prev,  // (L, N, H)
                       ConstTensorView c_prev,  // (L, N, H)  LSTM
                       const EncodedSource& src,
                       TensorView h_new,            // (L, N, H)  out
                       TensorView c_new,            // (L, N, H)  out (LSTM)
                       DecoderStepCache& cache,     // out: x0, layer inputs, cells
                       Rng& rng, Mode mode,         // dropout between layers (train mode)
                       TensorView gi0 = {}) const;  // (N, G·H) as step_forward's
    // c_t = attn(query = s_t), s̃_t = tanh(W_c [s_t ; c_t]) for t = 0 … T−1 (after cells_forward).
    // active (T entries, or empty = all N): the combine runs on step t's first active[t] rows
    // only (packed, one GEMM) and out is 0 on the others; the attention runs on every row.
    void outputs_forward(ConstTensorView h_all,  // (T+1, L, N, H) s_0 … s_T
                         const EncodedSource& src, const Attention& attention,
                         std::span<DecoderStepCache> steps,  // [T] context and attention written
                         DecoderOutputsCache& cache,         // out: what the backward reads
                         TensorView out,                     // (T, N, H) out: s̃_t
                         std::span<const int> active = {}) const;

    void collect(const std::string& prefix, ParamList& out);  // prefix "decoder."

    DecoderKind kind = DecoderKind::bahdanau;
    CellType cell = CellType::gru;
    int E = 0, H = 0, C = 0, L = 1;
    Embedding embedding;
    std::vector<GRUCell> gru;    // [L] when cell == gru
    std::vector<LSTMCell> lstm;  // [L] when cell == lstm
    Dropout dropout;
    Linear combine;                              // luong: (H + C) -> H, no bias
    Linear deep_state, deep_prev, deep_context;  // bahdanau deep output, no bias
    bool deep = false;

private:
    friend class SequenceBackward;
    int feed_ = 0, d_out_ = 0;
    bool before_ = true;
    // backward scratch (sized per call; no allocation once warm)
    Tensor d_ctx_, d_x0_, d_layer_, d_pre_, d_cat_;
    // storage a SequenceBackward takes for its pass and hands back (reused across batches)
    SequenceBackwardBuffers seq_buffers_;

    // step_forward's parts: layer 0's input, the stacked cells, the step's output
    void assemble_x0(ConstTensorView emb, ConstTensorView feed_prev, DecoderStepCache& cache) const;
    void cells_step_forward(ConstTensorView h_prev, ConstTensorView c_prev,
                            const EncodedSource& src, TensorView h_new, TensorView c_new,
                            DecoderStepCache& cache, Rng& rng, Mode mode, TensorView gi0) const;
    void output_step_forward(int t, ConstTensorView emb, ConstTensorView h_new,
                             const EncodedSource& src, const Attention& attention, TensorView out,
                             DecoderStepCache& cache) const;
    // step_backward's parts, shared with SequenceBackward (`def` null: the per-step reference)
    void output_step_backward(ConstTensorView d_out, ConstTensorView emb, ConstTensorView h_new,
                              ConstTensorView out, const EncodedSource& src, Attention& attention,
                              const DecoderStepCache& cache, TensorView d_h_new, TensorView d_ctx,
                              TensorView d_emb, TensorView d_enc_out, TensorView d_keys,
                              const DeferredStep* def);
    void cells_step_backward(ConstTensorView h_prev, ConstTensorView c_prev,
                             const EncodedSource& src, Attention& attention,
                             const DecoderStepCache& cache, TensorView d_h_new, TensorView d_c_new,
                             TensorView d_ctx, TensorView d_h_prev, TensorView d_c_prev,
                             TensorView d_feed_prev, TensorView d_emb, TensorView d_enc_out,
                             TensorView d_keys, const DeferredStep* def);
};

}  // namespace nazar
