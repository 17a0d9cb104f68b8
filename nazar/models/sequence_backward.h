// The decoder's whole-sequence backward: the training step's. Decoder::step_backward is the
// per-step reference it must agree with (same terms, float rounding only; tests/unit/
// test_models_batched_grads.cpp).
//
// One SequenceBackward is one backward pass over the T steps of a forward. The recurrence runs
// step by step (t = T−1 … 0: d s_{t-1} needs d s_t), but the weight gradients need not: each
// step computes only the data gradients the recurrence needs (d_x, d_h_prev, d_query, …) and
// stores its pre-activation gradients (cell gates, Luong's combine, the attention's query side)
// in chunk buffers of ≈ chunk_rows rows. When a chunk of steps is complete, each weight
// gradient of the chunk is ONE GEMM with K = chunk·N rows, each bias one row sum, and layer 0's
// d_emb += d_gi W_e one GEMM too:
//     grad.W_ih += Σ_t d_gi[t]ᵀ x[t],  grad.W_hh += Σ_t d_gh[t]ᵀ s_{t-1},  grad.W_c += Σ_t d_z[t]ᵀ
//     [s_t ; c_t],  grad.W_q += Σ_t d_u[t]ᵀ q_t,  grad.W_p += Σ_t d_pre[t]ᵀ q_t.
// The deep output's weights stay per step. Padded steps contribute exact zeros either way.
// Active rows: a step may run on the first n_t <= N rows only (the rows whose sentence still
// has targets at t, a prefix of the batch; TrainPass::decoder_forward): step / cells_step take
// views of those n_t rows (one decoder layer when n_t < N), and the chunk's rows are packed in
// time order before each weight-gradient GEMM, so its K is the chunk's active rows, not chunk·N.
//
// Order (checked; a violation is an invariant error):
//   interleaved outputs (the forward ran step_forward):
//       step(T−1), step(T−2), …, step(0), finish()
//   split outputs (the forward ran cells_forward + outputs_forward; fwd.outputs set):
//       outputs_backward(d_out), cells_step(T−1), …, cells_step(0), finish()
// finish() adds what is still pending (split outputs: grad.W_c over all T·N rows at once).
// Destroying a pass that has not finished (an exception unwinding) adds nothing more: the
// gradients then hold part of the batch's terms and must be zeroed before the next step, as
// after any failed train_step. The Decoder keeps no state of the pass: the next pass, or the
// per-step path, runs exactly as on a fresh decoder.
// Buffers: the pass owns the decoder's SequenceBackwardBuffers while it runs (taken at
// construction, handed back at destruction), so that they stop allocating after warm-up.
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/models/decoder.h"

#include <span>
#include <vector>

namespace nazar {

// The forward of T steps of N rows as the backward reads it. Every view must stay valid and
// unchanged for the whole pass.
struct DecoderSequence {
    std::span<const DecoderStepCache> steps;       // [T] what the steps' forward wrote
    ConstTensorView emb;                           // (T, N, E)       e_t
    ConstTensorView h_all;                         // (T+1, L, N, H)  s_0 … s_T
    ConstTensorView c_all;                         // (T+1, L, N, H)  LSTM cell states, else empty
    ConstTensorView out;                           // (T, N, d_out)   o_t
    const DecoderOutputsCache* outputs = nullptr;  // split outputs: outputs_forward's, else null
};

// Where the pass's data gradients go (+=, kept for the pass).
struct DecoderSequenceGrads {
    TensorView d_emb;      // (T, N, E)
    TensorView d_enc_out;  // (N, S, C)
    TensorView d_keys;     // (N, S, K)  (dot: empty)
};

class SequenceBackward {
public:
    // chunk_rows >= 1: rows per chunk (≈; whole steps, at least one, at most T).
    SequenceBackward(Decoder& decoder, Attention& attention, const EncodedSource& src,
                     const DecoderSequence& fwd, const DecoderSequenceGrads& grads,
                     int chunk_rows = 512);
    ~SequenceBackward();
    SequenceBackward(const SequenceBackward&) = delete;
    SequenceBackward& operator=(const SequenceBackward&) = delete;

    int steps() const { return T_; }            // T
    int chunk_steps() const { return chunk_; }  // steps per chunk
    int next_step() const { return next_t_; }   // the step expected next (−1: all done)

    // Split outputs: d s_t of every step from the combine (one GEMM over T·N rows) and the
    // attention (t = T−1 … 0), kept for cells_step. First, and once.
    void outputs_backward(ConstTensorView d_out);  // (T, N, H)  d s̃_t (complete)

    // Interleaved outputs: step t's output, attention and cells (Decoder::step_backward's terms,
    // weight gradients deferred). d_out is complete: the caller adds the next step's d_feed_prev
    // first.
    // n = the step's active rows (n <= N, the forward's step ran on rows [0, n) too).
    void step(int t,
              ConstTensorView d_out,    // (n, d_out)
              TensorView d_h_new,       // (L, n, H)  d s_t carry; read and modified (scratch)
              TensorView d_c_new,       // (L, n, H)  LSTM; read and modified
              TensorView d_h_prev,      // (L, n, H)  +=
              TensorView d_c_prev,      // (L, n, H)  += (LSTM)
              TensorView d_feed_prev);  // (n, H)     += (input feeding; else empty)

    // Split outputs, after outputs_backward: step t's cells alone; d s_t of the outputs joins
    // the carry d_h_new[L−1] here.
    void cells_step(int t,
                    TensorView d_h_new,    // (L, n, H)  read and modified (scratch)
                    TensorView d_c_new,    // (L, n, H)  LSTM; read and modified
                    TensorView d_h_prev,   // (L, n, H)  +=
                    TensorView d_c_prev);  // (L, n, H)  += (LSTM)

    // After step 0: adds the weight gradients still pending. Once.
    void finish();

private:
    Decoder& dec_;
    Attention& attention_;
    const EncodedSource& src_;
    DecoderSequence fwd_;
    DecoderSequenceGrads grads_;
    SequenceBackwardBuffers buf_;       // the decoder's, while the pass runs
    std::vector<int64_t> gather_rows_;  // gather_steps: each step's first row in buf_.gather
    AttentionQueryGrad query_;          // this step's rows of buf_.d_u / d_pre
    int T_ = 0, N_ = 0, chunk_ = 1;
    static constexpr int kFailed = -2;  // next_t_ after a call threw: only destruction is left
    int next_t_ = 0;                    // T−1 … 0, then −1
    bool outputs_done_ = false, finished_ = false;
    std::vector<int> rows_;  // [T] active rows n_t of each step (N until the step ran)

    void size_buffers();
    void check_alive(const char* what) const;  // not failed, not finished
    void begin_step(int t, const char* what);  // checks the order; next_t_ = kFailed
    int begin_rows(int t, int n);  // checks 1 <= n <= N (one layer when n < N); rows_[t] = n
    DeferredStep deferred(int t, bool with_query, int n);
    void flush_cells(int t0, int t1);      // weight gradients (and d_emb rows) of steps [t0, t1)
    void flush_attention(int t0, int t1);  // W_q / W_p gradients of steps [t0, t1)
    bool full(int t0, int t1) const;       // every step of [t0, t1) ran on all N rows
    // A chunk buffer (chunk, N, w) whose step rows hold rows_[t] rows each: packed in place
    // into its first M = Σ rows_[t] rows, returned as (M, w). Once per buffer and flush.
    TensorView pack(Tensor& buf, int t0, int t1);
    // (M, w): the first rows_[t] rows of at_step(t) for t in [t0, t1), contiguous in buf_.gather
    template <class AtStep>
    TensorView gather_steps(int t0, int t1, const AtStep& at_step);
    // s^l_{t+q0} of steps t in [t0, t1) (their first rows_[t] rows), as (M, H)
    ConstTensorView states(int l, int t0, int t1, int q0 = 0);
};

}  // namespace nazar
