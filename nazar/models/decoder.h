// The attention decoders (SPEC.md §3 Bahdanau, §4 Luong, §5 local), one step at a time.
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
// Gradients: step_backward ACCUMULATES (+=) into every d_* argument and into the params' grads.
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
#include <functional>
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
    // Shared, not copied, by Seq2Seq::select_rows.
    std::vector<WeightT> wih_t, whh_t;
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
};

class Decoder {
public:
    Decoder() = default;
    Decoder(const ModelConfig& cfg,
            Rng& rng);  // init order: embedding, rnn layers, combine/deep output

    int feed_size() const { return feed_; }     // F
    int output_size() const { return d_out_; }  // d_out
    bool timing_before() const { return before_; }

    // One step for N rows. h_prev/c_prev are all layers' states before the step; h_new/c_new
    // receive them after (must not alias h_prev/c_prev in train mode; may alias in eval mode).
    // feed_prev: s̃_{t-1} with input feeding (N, H), else empty. out: o_t (N, d_out); for luong
    // it is s̃_t (the next step's feed_prev). c_prev/c_new: LSTM only (empty views for GRU).
    // Makes src.wih_t / whh_t from the current weights when the steps will have more than
    // kSmallGemmRows rows (`step_rows`), clears them otherwise. Call once per batch, after any
    // change to the weights (as for the attention keys).
    void prepare_steps(EncodedSource& src, int step_rows) const;
    void step_forward(int t,
                      TensorView emb,        // (N, E)     e_t
                      TensorView h_prev,     // (L, N, H)
                      TensorView c_prev,     // (L, N, H)  LSTM
                      TensorView feed_prev,  // (N, H)     s̃_{t-1} (luong input feeding), else empty
                      const EncodedSource& src,  // N rows
                      const Attention& attention,
                      TensorView h_new,         // (L, N, H)  out
                      TensorView c_new,         // (L, N, H)  out (LSTM)
                      TensorView out,           // (N, d_out) out: o_t
                      DecoderStepCache& cache,  // out
                      Rng& rng, Mode mode,
                      TensorView gi0 = {});  // (N, G·H) e_t W_eᵀ + b_ih from project_embeddings, or
                                             // empty (computed here); += f_t W_fᵀ in place

    // Teacher forcing (inputs known in advance): the embedding half of layer 0's input
    // projection for all T steps as one GEMM (W_ih = [W_e | W_f] column blocks):
    //   gi0[t] = e_t W_eᵀ + b_ih;  step_forward(t, ..., gi0[t]) then adds only f_t W_fᵀ.
    int gate_size() const { return (cell == CellType::gru ? 3 : 4) * H; }  // G·H
    void project_embeddings(TensorView emb,                                // (T, N, E)
                            TensorView gi0) const;  // (T, N, G·H) overwritten

    // Backward of step_forward. d_h_new/d_c_new: gradient w.r.t. h_new/c_new (read; the direct
    // terms of this step are added into them); d_h_prev/d_c_prev += gradient w.r.t. h_prev/c_prev.
    // d_out: gradient w.r.t. o_t (complete: the caller adds the next step's d_feed_prev first).
    void step_backward(int t,
                       TensorView d_out,   // (N, d_out)
                       TensorView emb,     // (N, E)     same tensors forward saw
                       TensorView h_prev,  // (L, N, H)
                       TensorView c_prev,  // (L, N, H)
                       TensorView h_new,   // (L, N, H)
                       TensorView c_new,   // (L, N, H)
                       TensorView out,     // (N, d_out)
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

    // Whole-sequence backward (the training step). Between begin_backward and finish_backward,
    // step_backward(t) does only the per-step data gradients the recurrence needs (d_x,
    // d_h_prev, d_query, ...) and stores the step's pre-activation gradients (cell gates,
    // Luong's combine, the attention's query side) in chunk buffers of ≈ chunk_rows rows; when a
    // chunk of steps is complete (steps go T−1 … 0), each weight gradient of the chunk is ONE
    // GEMM with K = chunk·N rows, each bias one row sum, and layer 0's d_emb += d_gi W_e one
    // GEMM too. Same terms as the per-step sums, in another order (float rounding only; padded
    // steps contribute exact zeros either way). Every t in [0, T) must be stepped back once in
    // between. The deep output's weights stay per step.
    // With batch_weight_grads false (test hook) begin/finish do nothing and step_backward
    // accumulates every gradient per step, as it does outside begin/finish.
    int chunk_rows = 512;  // rows per chunk (≈; whole steps, at least one)
    void begin_backward(
        std::span<const DecoderStepCache> steps,  // [T] what step_forward wrote (kept)
        TensorView h_all,                         // (T+1, L, N, H) s_0 … s_T (kept)
        Attention& attention,                     // (kept)
        TensorView d_emb);                        // (T, N, E) += (kept)
    void finish_backward();
    bool batch_weight_grads = true;

    // Luong without input feeding, attention after the step (query s_t): the recurrence does
    // not depend on attention, so a teacher-forced sequence runs every step's cells first
    // (step_forward with split outputs on) and then attention + combine for all T steps
    // (outputs_forward: combine is one GEMM over T·N rows). Backward mirrors it:
    // outputs_backward (inside begin/finish_backward) gives d s_t of every step from the
    // combine (one GEMM) and attention (per step, t = T−1 … 0), then step_backward with split
    // outputs on reads its d_out argument as that d s_t and steps back only the cells.
    bool can_split_outputs() const { return kind == DecoderKind::luong && feed_ == 0 && !before_; }
    void set_split_outputs(bool on);
    void outputs_forward(TensorView h_all,  // (T+1, L, N, H) s_0 … s_T
                         const EncodedSource& src, const Attention& attention,
                         std::span<DecoderStepCache> steps,  // [T] context and attention written
                         TensorView out);                    // (T, N, H) out: s̃_t
    void outputs_backward(TensorView d_out,                  // (T, N, H)  d s̃_t (complete)
                          TensorView out,                    // (T, N, H)  s̃_t
                          TensorView h_all,                  // (T+1, L, N, H)
                          const EncodedSource& src, Attention& attention,
                          std::span<const DecoderStepCache> steps,
                          TensorView d_s,        // (T, N, H)  written: d s_t of the outputs
                          TensorView d_enc_out,  // (N, S, C)  +=
                          TensorView d_keys);    // (N, S, K)  +=

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
    int feed_ = 0, d_out_ = 0;
    bool before_ = true;
    // backward scratch (sized per call; no allocation once warm)
    Tensor d_ctx_, d_x0_, d_layer_, d_pre_, d_cat_, tmp_;
    // deferred weight gradients (begin_backward .. finish_backward)
    bool deferred_ = false;
    int def_T_ = 0, def_N_ = 0, chunk_ = 1;  // chunk_: steps per flush
    std::span<const DecoderStepCache> def_steps_;
    TensorView def_h_all_, def_d_emb_;
    Attention* def_attn_ = nullptr;
    std::vector<Tensor> d_gi_all_,
        d_gh_all_;                     // [L] (chunk, N, G·H) gate gradients (LSTM: d_gi_all_ only)
    Tensor d_z_all_;                   // (chunk, N, H)  Luong combine: d (W_c [s; c])
    Tensor d_u_all_, d_pre_all_;       // (chunk, N, A), (chunk, N, P)  attention query side
    Tensor gather_;                    // (chunk, N, w)  per-step inputs made contiguous
    void flush_cells(int t0, int t1);  // weight gradients (and d_emb rows) of steps [t0, t1)
    void flush_attention(int t0, int t1);  // W_q / W_p gradients of steps [t0, t1)
    TensorView gather_steps(int t0, int t1,
                            const std::function<TensorView(int)>& at_step);  // (n·N, w)
    TensorView states(int l, int t0, int t1);  // s^l_t, t in [t0, t1), as ((t1−t0)·N, H)
    // split outputs (can_split_outputs)
    bool split_ = false;       // step_forward / step_backward: cells only
    bool split_grad_ = false;  // outputs_backward ran: W_c's input is comb_all_
    Tensor comb_all_;          // (T, N, H + C)  [s_t ; c_t] of every step
    Tensor d_z_seq_;           // (T, N, H)      d (W_c [s; c]) of every step
    Tensor d_ctx_seq_;         // (T, N, C)      d c_t from the combine
    Tensor q_seq_;             // (T, N, H)      s_t of the top layer, gathered when L > 1
    Tensor ctx_seq_;           // (T, N, C)      c_t of every step (Attention::forward_steps)
    std::vector<AttentionStepCache*> att_ptrs_;  // [T] the steps' attention caches (forward_steps)
    TensorView top_states(
        TensorView h_all);  // (T, N, H) s_1 .. s_T of layer L−1 (a view when L = 1)
};

}  // namespace nazar
