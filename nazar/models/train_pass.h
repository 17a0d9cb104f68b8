// A training pass over a Seq2Seq (seq2seq.h): the teacher-forced forward of a batch, its loss
// and backward, and forced-decoding scores. The pass owns every per-batch buffer (step caches,
// states, masks, gradients' scratch), sized per batch and reused; the model owns the parameters
// and their gradients. One pass runs one call at a time; any number of passes (and
// DecodeSessions) may evaluate one model at once, since the forward reads the model const.
//
//   train_step:  teacher forcing (input y_{t-1} = batch.tgt_in[:, t]) with optional scheduled
//                sampling: for t > 0, each row independently with probability p feeds the
//                model's own argmax prediction of step t−1 instead (no gradient through the
//                choice; draws come from `rng` in row order, one per row per step t > 0).
//                loss = Σ over non-pad targets of CE(softmax(W_o o_t + b_o), batch.tgt_out)
//                (fused chunked SoftmaxXent, label smoothing ε as PyTorch's CrossEntropyLoss).
//                Gradients of grad_scale · loss are ACCUMULATED (+=) into every parameter's
//                grad; grad_scale 0 means 1/tokens (the mean over this batch). Caller zeroes
//                grads with zero_grads(model.parameters()) (not Embedding::zero_grad(): with
//                tied weights the generator's gradient in decoder.embedding's grad is dense).
//                Needs a pass made over a non-const model.
//   eval_loss:   the same forward in eval mode (no dropout, pure teacher forcing), no backward.
//   score:       log p(y | x) = Σ_{t < T_b} log softmax(W_o o_t + b_o)[tgt_out[b, t]] under
//                forced decoding, eval mode: the target tokens plus </s> (batch.tgt_out).
//                With ε = 0, Σ_b score[b] == −eval_loss(batch).loss.
// Determinism: same seed, same data, same thread count => bit-identical results.
#pragma once

#include "nazar/data/alignment_file.h"
#include "nazar/data/batcher.h"
#include "nazar/models/attention_terms.h"
#include "nazar/models/guided_alignment.h"
#include "nazar/models/seq2seq.h"
#include "nazar/nn/softmax_xent.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nazar {

class SequenceBackward;

// The decoder's backward in train_step. sequence: SequenceBackward (sequence_backward.h), weight
// gradients one GEMM per chunk of steps, and Luong without input feeding runs attention and
// combine over all steps at once (forward and backward). per_step: Decoder::step_forward and
// step_backward, every gradient accumulated per step: the reference the other is tested against.
enum class DecoderBackwardPath { sequence, per_step };

// Dropout at the model's sites (docs/models.md "Dropout"; train_step only, never in eval_loss,
// score or the step API). Inverted: kept values are scaled by 1/(1−p). Masks hold 0 or 1/(1−p):
//   src_emb  (B, S, E)      x̃_i = Emb_src[x_i] ⊙ m            (the encoder RNN's input)
//   enc_out  (B, S, C)      H̃ = H ⊙ m  (attention keys and contexts, the mean bridge; the
//                            backward-first / last bridges read the final states, not dropped)
//   tgt_emb  (T, B, E)      ẽ_t = Emb_tgt[y_{t-1}] ⊙ m        (RNN input, deep output's L_y e_t)
//   dec_out  (T, B, d_out)  logits = W_o (o_t ⊙ m) + b_o      (o_t: s_t, Bahdanau's deep output
//                            t̃_t or Luong's s̃_t; the input-feeding s̃_{t-1} is not dropped)
//   attention (T, B, S)     c_t = Σ_i α_ti m_ti h̃_i  (the weights after the softmax, by source
//                            position; not renormalised; the weights reported stay α)
// An empty ((0)-shaped) mask is no dropout at that site. With an attention mask the decoder runs
// its per-step path (no split outputs / batched attention steps).
struct DropoutMasks {
    Tensor src_emb{Shape{0}}, enc_out{Shape{0}}, tgt_emb{Shape{0}}, dec_out{Shape{0}};
    Tensor attention{Shape{0}};
};

// The drop probabilities of train_step's masks, each in [0, 1). Drawn from train_step's rng
// before the forward, in the order src_emb, enc_out, tgt_emb, dec_out, attention (one uniform per
// element; a site with p = 0 draws nothing). per_sequence: variational dropout, one mask per
// sentence reused at every position (src_emb, enc_out: shared along S; tgt_emb, dec_out,
// attention: along T).
struct DropoutOptions {
    float embedding = 0.0f;       // src_emb and tgt_emb
    float encoder_output = 0.0f;  // enc_out
    float decoder_output = 0.0f;  // dec_out
    float attention = 0.0f;       // attention weights
    bool per_sequence = false;
};

struct TrainOptions {
    float label_smoothing = 0.0f;  // ε in [0, 1)
    float sampling_prob = 0.0f;    // scheduled sampling p in [0, 1]
    float grad_scale = 0.0f;       // multiplies the loss's gradient; 0 = 1 / tokens
    int chunk_rows = 256;          // SoftmaxXent chunk (bounds the logits scratch)
    DecoderBackwardPath decoder_backward = DecoderBackwardPath::sequence;
    int decoder_chunk_rows = 512;  // sequence: rows per weight-gradient chunk (>= 1; whole steps)
    DropoutOptions dropout{};
    // Given: these masks are used as they are (tests, PyTorch parity with fixed masks) and
    // `dropout` is ignored; each non-empty one must have its site's shape.
    const DropoutMasks* masks = nullptr;
    // λ of the coverage loss λ Σ min(α_ti, cov_ti) (attention_terms.h); > 0 needs coverage
    float coverage_loss_weight = 0.0f;
    // λ of the guided alignment loss (guided_alignment.h); > 0 needs `alignments`, which hold
    // the links of every pair the batch's Batch::index names
    float guided_alignment_weight = 0.0f;
    const CorpusAlignments* alignments = nullptr;
};

struct LossStats {
    double loss = 0;            // Σ over non-pad target tokens (not divided)
    int64_t tokens = 0;         // non-pad target tokens (tgt_out != pad)
    int64_t correct = 0;        // tokens whose target is the argmax (accuracy)
    double coverage_loss = 0;   // train_step: the weighted coverage loss (its gradient is in the
                                // step's; not part of `loss`, which stays the cross-entropy)
    double alignment_loss = 0;  // train_step: the weighted guided alignment loss (likewise)
    int64_t aligned = 0;        // target positions with alignment links (guided alignment)
};

// Word dropout, on a training batch only (never on validation or decoding input): each real
// source token (positions < src_lengths[b]) and each real decoder input token (tgt_in positions
// 1 … tgt_lengths[b] − 1: never <s>, never padding) becomes ids.unk with probability p, one
// uniform per such position from `rng`, the source row-major first, then the target. Lengths and
// tgt_out (the targets the loss reads) are unchanged: whole tokens are replaced, not removed, so
// the sentence keeps its positions. p in [0, 1); p = 0 draws nothing.
void word_dropout(Batch& batch, float p, const SpecialIds& ids, Rng& rng);
class TrainPass {
public:
    explicit TrainPass(Seq2Seq& model);        // train_step, eval_loss, score
    explicit TrainPass(const Seq2Seq& model);  // eval_loss and score only
    TrainPass(const TrainPass&) = delete;
    TrainPass& operator=(const TrainPass&) = delete;
    ~TrainPass();

    const Seq2Seq& model() const { return m_; }

    // Forward + backward of one batch (train mode: dropout and scheduled sampling draw from rng).
    LossStats train_step(const Batch& batch, const TrainOptions& opt, Rng& rng);
    // Forward only, eval mode (no dropout, pure teacher forcing).
    LossStats eval_loss(const Batch& batch, float label_smoothing = 0.0f);
    // Guided alignment's loss (guided_alignment.h, weight λ, no gradient) of the attention of
    // the last eval_loss / train_step forward, for that batch (attention_losses.cpp); not after
    // a train_step that skipped padded rows (plan_active_rows: an invariant error).
    GuidedAlignmentStats alignment_loss(const Batch& batch, const CorpusAlignments& alignments,
                                        float weight) const;
    // The rows each decoder step of the last forward ran on (train_step skips padded rows:
    // plan_active_rows), in the order it ran the batch (train_step: longest targets first).
    std::span<const int> active_rows() const { return active_; }
    // Per-sentence log-probability of tgt_out (incl. </s>), eval mode.
    void score(const Batch& batch, std::span<double> out);  // out (B)

private:
    const Seq2Seq& m_;
    Seq2Seq* train_ = nullptr;  // the model whose gradients train_step writes (null: const pass)
    const ModelConfig& cfg_;
    Seq2Seq& trainee();  // *train_, or an error for a const pass

    // Teacher-forced (optionally sampled) forward over the batch into the step caches; O (T, B,
    // d_out). split_outputs: the decoder may run cells_forward + outputs_forward (decided here).
    // skip_rows (train mode): each decoder step runs only on its active rows (plan_active_rows).
    void forward_batch(const Batch& batch, float sampling_prob, Rng& rng, Mode mode,
                       bool split_outputs = true, const DropoutMasks* masks = nullptr,
                       bool skip_rows = false);
    // ---- active rows (active_rows.cpp) ----
    // Whether train_step may skip padded decoder rows: one decoder layer and no term that reads
    // every row's attention after the forward (coverage, copy attention, guided alignment).
    bool can_skip_rows(const TrainOptions& opt) const;
    // active_[t] = n_t: step t runs on decoder rows [0, n_t), the smallest prefix holding every
    // row with a real target (tgt_out != pad) at t or later (at least 1); B for every step
    // unless `skip`. Rows past the prefix are padding to the end of their sentence, so nothing
    // the loss reads depends on them; sorted by length (longest first) the prefix is exact.
    void plan_active_rows(const Batch& batch, bool skip);
    // Zeroes step t's states s_{t+1} (and c) and output o_t on the rows past n_t, so that the
    // readers of all B rows (the generator's gather, split outputs, sampling) see zeros there.
    void clear_inactive(int t);
    // train_step's row order: `given` reordered by the step of its last real target, longest
    // first (stable), with `masks` reordered alike (into sorted_masks_) so that every sentence
    // keeps its masks; `given` itself when can_skip_rows(opt) is false, when the order is
    // already so, or when the forward draws from the rng per row (scheduled sampling, dropout
    // between encoder layers): then the draws stay the caller's rows'. The loss and every
    // gradient are sums over rows: only their float rounding can change.
    const Batch& sort_rows(const Batch& given, const TrainOptions& opt, const DropoutMasks*& masks);
    // The masks train_step uses: opt.masks (shapes checked), or drawn into masks_ from rng.
    const DropoutMasks* train_masks(const Batch& batch, const TrainOptions& opt, Rng& rng);
    void encode_batch(const Batch& batch, Rng& rng, Mode mode);  // src_, h_all_[0], c_all_[0]
    void decoder_forward(const Batch& batch, float sampling_prob, Rng& rng, Mode mode,
                         bool split_outputs);  // the T steps: out_, steps_
    void backward_batch(const Batch& batch, const TrainOptions& opt);
    // The decoder's T steps back, t = T−1 … 0: Decoder::step_backward (pass null) or the pass's
    // steps. Returns the index of d_h_ that holds d loss / d s_0.
    int decoder_steps_backward(int T, SequenceBackward* pass);
    // Copy attention after forward_batch: the loss of every non-pad target (scores: per-sentence
    // log P, when given); with `grads`, d_out_ = d loss / d (generator input) times scale, the
    // generator's and the gate's gradients, the attention caches' extra gradients, copy_d_s_ and
    // copy_d_e_ (added by the decoder backward). label_smoothing: copy_row_loss's (0 for scores).
    LossStats copy_loss(const Batch& batch, float scale, bool grads, std::span<double> scores = {},
                        ConstTensorView gen_in = {}, float label_smoothing = 0.0f);
    void copy_gate_backward(const Batch& batch);  // the gate's share of copy_loss's gradients
    // After the output loss's forward (attention_losses.cpp): the losses and direct gradients of
    // the terms on α_t and c_t (coverage, copy attention's, guided alignment) into terms_;
    // sets terms_on_ when the backward must run them.
    void attention_terms_forward(const Batch& batch, const TrainOptions& opt, float scale,
                                 LossStats& stats);

    // ---- per-batch buffers (resized per batch, reused) ----
    DropoutMasks masks_;                  // drawn by train_masks
    const DropoutMasks* drop_ = nullptr;  // this forward's masks (train mode), else null
    Tensor gen_in_;                       // (T, B, d_out) o_t ⊙ m when dec_out is masked
    EncoderCache enc_cache_;
    BridgeCache bridge_cache_;
    EncodedSource src_;            // N = B
    std::vector<int32_t> inputs_;  // (T, B) decoder input ids actually fed
    std::vector<int> targets_;     // (T, B) tgt_out, time-major
    Tensor emb_;                   // (T, B, E)
    Tensor gi0_;                   // (T, B, G·H) teacher forcing: e_t W_eᵀ + b_ih of layer 0
    bool split_ = false;           // this batch's forward ran cells_forward + outputs_forward
    DecoderOutputsCache outputs_cache_;    // split: what outputs_forward kept
    Tensor h_all_, c_all_;                 // (T+1, L, B, H)
    Tensor feed0_;                         // (B, H) zeros: s̃_{-1}
    Tensor out_;                           // (T, B, d_out)
    std::vector<DecoderStepCache> steps_;  // [T]
    std::vector<int> active_;              // [T] n_t: the rows step t ran on (plan_active_rows)
    std::vector<int> row_end_;             // [B] 1 + the last step with a real target
    bool skipped_ = false;                 // the last forward ran some step on fewer than B rows
    Batch sorted_;                         // train_step's batch reordered (sort_rows)
    DropoutMasks sorted_masks_;            // its masks reordered alike
    std::vector<int> order_;               // [B] row b of sorted_ is row order_[b] of the given
    AttentionTerms terms_;                 // coverage: the recurrence's backward, the loss
    bool terms_on_ = false;                // this train_step's backward runs terms_
    Tensor d_out_, d_emb_, d_enc_out_, d_keys_;
    Tensor d_h_[2], d_c_[2];  // (L, B, H) ping-pong carries
    RNNState d_enc_final_;
    Tensor logits_;  // (B, V) scheduled sampling / scoring
    std::unique_ptr<SoftmaxXent> xent_;
    Tensor d_feed0_;  // (B, H) sink for d s̃_{-1}
    // ---- copy attention scratch ----
    Tensor copy_alpha_;                      // (T, B, S) dense α
    Tensor copy_ctx_, copy_s_;               // (T, B, C), (T, B, H) the gate's c_t and s_t
    Tensor copy_in_, copy_g_;                // (T·B, C+H+E) gate inputs, (T·B) g
    Tensor copy_dg_, copy_dz_;               // (T·B) d g, (chunk, V) d z
    Tensor copy_d_alpha_;                    // (T, B, S)
    Tensor copy_d_c_, copy_d_s_, copy_d_e_;  // (T, B, C / H / E)
};

}  // namespace nazar
