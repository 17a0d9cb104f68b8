// The attention mechanisms of nazar behind one runtime interface (docs/spec.md §3-6). Decoders hold
// one `Attention`; the score kind, scaling and local mode are chosen by a typed config.
//
//   score   additive/concat  e[b,i] = v_a · tanh(W_q q[b] + W_k h[b,i])      (additive_kernels.h)
//             with coverage  e[b,i] = v_a · tanh(W_q q[b] + W_k h[b,i] + w_c cov[b,i]) (coverage.h)
//           general          e[b,i] = s · q[b] · (W_k h[b,i])                (luong.h)
//           dot              e[b,i] = s · q[b] · h[b,i]        requires H == C
//             s = 1 (none), 1/sqrt(C) (inv_sqrt) or a learned scalar (learned), dot/general only
//   weights α[b,:] = softmax of e[b,i] over the positions i of the WINDOW of sentence b:
//           global: i in [0, S_b-1], S_b = lengths[b]; local: see local.h. Padding gets α = 0.
//           local-p multiplies the window softmax by exp(-(i-p_t)²/(2σ²)), σ = D/2 (no renorm.).
//   context c[b] = Σ_i α[b,i] h[b,i]
// Keys W_k h are computed ONCE per batch (precompute); a step computes only the query side and
// the scores inside the window, so local attention costs O(D) per step, not O(S).
// Who calls it when (before / after the RNN step) is the decoder's business (docs/spec.md §3, §4).
//
// Weight storage: column j of a step's weights (B, W) is source position start[b] + j.
// Global: W = S, start = 0. Local: W = 2D+1, start = first window position (>= 0); columns
// j >= count[b] are 0. dense_weights() scatters either form into a (B, S) matrix.
//
// Gradients: backward and precompute_backward ACCUMULATE (+=) into every d_* argument and into
// `grad`. The caller zeroes them once per batch; d_keys collects every step's gradient and is
// turned into d_enc_out / grad.W_k by ONE precompute_backward call after the last step
// (allocate it as Tensor::like(keys.keys); for dot it is (0)-shaped and unused).
// Oracle: naive.h (double precision, straight from docs/spec.md, forward and backward);
// derivations: docs/derivations/attention.md. The equations of one row (softmax, window, local-p
// Gaussian, context, and their backward) are written once, in row_equations.h (internal), and
// called by both the per-step and the all-steps path.
// Parameters (visit() names, relative to "attention."; init U(-1/sqrt(in), 1/sqrt(in)) like
// PyTorch nn.Linear, drawn from the Rng in visit order; `scale` starts at 1/sqrt(C)):
//   additive/concat  query.weight W_q (A, H)   key.weight W_k (A, C)   v.weight v_a (1, A)
//   general          key.weight W_k = Luong's W_a (H, C)
//   dot              (none)
//   scale learned    scale (1)
//   local-p          position.weight W_p (P, H)   position_v.weight v_p (1, P)
//   coverage         coverage.weight w_c (1, A)  (starts at 0: the plain score; coverage.h)
//   monotonic        monotonic_bias r (1)  (starts at monotonic_bias_init; monotonic.h)
//   MoChA            chunk_v.weight v_c (1, A)  (the chunk energy's output vector; monotonic.h)
// No biases (docs/spec.md has none). Shape letters: B S H C A D, P = position size d_p.
#pragma once

#include "nazar/core/blas.h"
#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

namespace attn {
struct Scratch;  // internal.h
}

enum class ScoreKind { additive, dot, general, concat };  // additive = Bahdanau; concat = same math
enum class ScaleMode { none, inv_sqrt, learned };         // dot/general only
enum class LocalMode { global, monotonic, predictive };   // global, local-m, local-p

struct AttentionConfig {
    ScoreKind score = ScoreKind::additive;
    ScaleMode scale = ScaleMode::none;
    LocalMode local = LocalMode::global;
    int window = 10;         // D: local half-window (>= 1); the window has up to 2D+1 positions
    int query_size = 0;      // H: decoder state size (d_s)
    int context_size = 0;    // C: encoder output size (d_h)
    int attention_size = 0;  // A: additive/concat hidden size (d_a); unused by dot/general
    int position_size = 0;   // P: local-p predictor size (d_p); 0 means P = H
    bool coverage = false;   // additive/concat only: cov_t in the score (coverage.h)
    // Monotonic attention (Raffel et al. 2017; monotonic.h): global only, no coverage. The
    // weights are the expected monotonic alignment of p = σ(e + r + ε) instead of a softmax.
    bool monotonic = false;
    float monotonic_bias_init = -1.0f;  // r at initialisation (the learned scalar bias)
    float monotonic_noise = 1.0f;       // σ of the pre-sigmoid noise ε (training steps only)
    // MoChA (Chiu & Raffel 2018; monotonic.h): w >= 1 attends softly to the w positions ending
    // where the monotonic reader stops, by a chunk energy u = v_c · tanh(W_q q + W_k h) (the
    // additive score's hidden layer, its own output vector); 0 = plain monotonic attention.
    // Needs monotonic and an additive/concat score.
    int mocha_chunk = 0;
};

// Strings used by the CLI and configs. parse_* throw UsageError listing the accepted names.
//   score: "bahdanau" | "additive" | "dot" | "general" | "concat"
//   scale: "none" | "sqrt" | "learned"          local: "global" | "local-m" | "local-p"
ScoreKind parse_score_kind(std::string_view s);
ScaleMode parse_scale_mode(std::string_view s);
LocalMode parse_local_mode(std::string_view s);
const char* to_string(ScoreKind k);  // "additive", "dot", "general", "concat"
const char* to_string(ScaleMode m);  // "none", "sqrt", "learned"
const char* to_string(LocalMode m);  // "global", "local-m", "local-p"
// One name as users write it: a score ("bahdanau", "general", ...), "scaled-dot",
// "scaled-general", or a local mode ("local-m", "local-p": keeps the configured score).
void apply_attention_name(std::string_view name, AttentionConfig& cfg);
std::string describe(const AttentionConfig& cfg);  // "local-p general D=10 (H=512, C=512)"
// Throws UsageError naming the offending sizes (dot with H != C names both and suggests
// `general`; missing A for additive/concat; scale on additive/concat; D < 1 for local).
void validate(const AttentionConfig& cfg);

// Multiply-adds of one sentence of length S (docs/spec.md §9), for `explain` and the benchmark.
struct AttentionCost {
    int64_t keys = 0;     // once per batch: S·A·C (additive/concat), S·H·C (general), 0 (dot)
    int64_t query = 0;    // per step: A·H (additive/concat) + P·H + P (local-p predictor)
    int64_t scores = 0;   // per step: n·2A (add+tanh, v) additive/concat; n·H general; n·C dot
    int64_t context = 0;  // per step: n·C
    int64_t params = 0;   // number of attention parameters
    int positions = 0;    // n: scored positions per step, S (global) or min(2D+1, S) (local)
};
AttentionCost attention_cost(const AttentionConfig& cfg, int S);

struct AttentionParams {
    Tensor W_q;    // (A, H)  additive/concat query projection        "query.weight"
    Tensor W_k;    // (A, C) additive/concat, (H, C) general           "key.weight"
    Tensor v_a;    // (1, A)  additive/concat                          "v.weight"
    Tensor scale;  // (1)     learned scale                            "scale"
    Tensor W_p;    // (P, H)  local-p predictor                        "position.weight"
    Tensor v_p;    // (1, P)  local-p predictor                        "position_v.weight"
    Tensor w_c;    // (1, A)  coverage (additive/concat)                "coverage.weight"
    Tensor r;      // (1)     monotonic attention's bias                 "monotonic_bias"
    Tensor v_c;    // (1, A)  MoChA's chunk energy                       "chunk_v.weight"

    // Absent parameters are (0)-shaped tensors (numel 0); collect_params() skips them.
    template <class F>
    void visit(F&& f) {
        f("query.weight", W_q);
        f("key.weight", W_k);
        f("v.weight", v_a);
        f("scale", scale);
        f("position.weight", W_p);
        f("position_v.weight", v_p);
        f("coverage.weight", w_c);
        f("monotonic_bias", r);
        f("chunk_v.weight", v_c);
    }
};

// Computed once per source batch by precompute(), read by every step.
struct AttentionKeys {
    Tensor keys;  // (B, S, K)  W_k h[b,i]; K = A (additive/concat), H (general). Shape (0) for dot:
                  //            dot scores read enc_out directly.
    WeightT query_t;  // (H, A)  W_qᵀ (additive/concat) for steps of many rows (blas.h), else empty
};

// Written by forward, read by backward; one per decoder step (the decoder keeps T of them).
// W = S (global) or 2D+1 (local). Column j of a row is source position start[b] + j.
struct AttentionStepCache {
    Tensor weights;          // (B, W)  α; columns >= count[b] are 0 (alignments / heatmaps)
    Tensor probs;            // (B, W)  softmax over the window (= weights except for local-p)
    Tensor scores;           // (B, W)  unscaled scores q·k (dot/general; for the learned scale)
    Tensor query_proj;       // (B, A)  W_q q (additive/concat)
    Tensor position;         // (B)     p_t (local; local-m: integer-valued)
    Tensor pos_hidden;       // (B, P)  tanh(W_p q) (local-p)
    Tensor pos_sigmoid;      // (B)     sigmoid(v_p · pos_hidden) (local-p)
    std::vector<int> start;  // (B)     first source position of the row's window (0 global)
    std::vector<int> count;  // (B)     window length after clipping (S_b global)
    // scores e[b,i] evaluated by this step (instrumentation: O(B·D) local)
    int64_t score_evals = 0;
    // Dropout on the weights (train mode), set by the caller BEFORE forward: (B, S) mask by source
    // position (0 or 1/(1−p)), or (0) = none. With a mask, forward sums c = Σ_i α_i m_i h_i (no
    // renormalisation, as torch's F.dropout on attention weights) and `weights` stays α;
    // backward reads the same mask. Only the per-step forward/backward take masks.
    Tensor drop_mask{Shape{0}};
    Tensor dropped{Shape{0}};  // (B, W)  α ⊙ m over the window (with a mask)
    // Coverage (cfg.coverage), set by the caller BEFORE forward: (B, S) cov_t = Σ_{t'<t} α_t' by
    // source position (zeros at t = 0; coverage.h advance_coverage makes the next one).
    Tensor coverage{Shape{0}};
    // Monotonic attention (cfg.monotonic; monotonic.h), set by the caller BEFORE forward:
    // previous (B, S) α_{t−1} by source position (t = 0: one-hot at position 0); noise (B, S)
    // the pre-sigmoid ε by source position, or (0) = none (training steps only); hard: decoding
    // attends to one position (the first p >= 0.5 at or after where α_{t−1} is 1), `probs`
    // then holds p, `weights` the one-hot choice (or zeros: the step ran off the end).
    Tensor previous{Shape{0}};
    Tensor noise{Shape{0}};
    bool hard = false;
    // MoChA (cfg.mocha_chunk > 0): `weights` hold the chunkwise β (what the context sums and
    // alignments show), these the step's monotonic α (carried to the next step) and the chunk
    // energies u, both (B, W).
    Tensor alpha{Shape{0}};
    Tensor chunk_scores{Shape{0}};
};

// Extra gradients of one step's backward from every term that reads the step's α, c or cov
// beyond the decoder (models/attention_terms.h gathers them: the coverage loss and recurrence,
// copy attention's mixture and gate, guided alignment): given as Attention::extra before
// backward(), cleared by the caller after it. The one hook for all of them.
struct AttentionExtraGrad {
    ConstTensorView d_weights;  // (B, S)  added to d α_t by source position, or empty
    ConstTensorView d_context;  // (B, C)  added to backward's d_context, or empty
    TensorView d_coverage;      // (B, S)  += d cov_t (coverage on), or empty
    TensorView d_previous;      // (B, S)  += d α_{t−1} (monotonic), or empty
    ConstTensorView d_alpha;    // (B, S)  MoChA: added to d α_t (not to d β_t, the weights'),
                                //         the next step's d α_{t}; or empty
};

// The query side's pre-activation gradients of one step, for callers that batch the query-side
// weight gradients over all steps of a batch (K = T·B rows instead of B): passed to backward,
// which then WRITES them here and leaves grad.W_q / grad.W_p to query_weights_backward.
struct AttentionQueryGrad {
    TensorView d_u;    // (B, A)  d (W_q q)   additive/concat; else unused (may be empty)
    TensorView d_pre;  // (B, P)  d (W_p q)   local-p; else unused (may be empty)
};

class Attention {
public:
    // Validates cfg; initialises params (inference: placeholders, no gradients, core/params.h).
    explicit Attention(AttentionConfig cfg, Rng& rng, ParamMode mode = ParamMode::training);

    int window_width(int S) const;  // W: S (global) or 2D+1 (local)
    float score_scale() const;      // s of the dot/general score: 1, 1/√C or the learned scale

    // step_rows: rows of the decoder steps that will read these keys (W_qᵀ is made for them
    // when that pays, blas.h). The keys capture the weights: precompute again after changing them.
    void precompute(ConstTensorView enc_out,  // (B, S, C)
                    AttentionKeys& out,       // keys (B, S, K), resized
                    int step_rows = 0) const;
    // precompute's W_qᵀ alone: out.query_t made for steps of step_rows rows, or cleared.
    void prepare_steps(AttentionKeys& out, int step_rows) const;
    void precompute_backward(ConstTensorView enc_out,  // (B, S, C)
                             ConstTensorView d_keys,  // (B, S, K)   sum over all steps (empty: dot)
                             TensorView d_enc_out);   // (B, S, C)  +=, also += grad.W_k

    // t: 0-based decoder step; local-m centres its window on min(t, S_b - 1).
    // keys may hold more sentences than the query has rows: rows [0, B) are read (a training
    // step's active rows, the batch's prefix; enc_out and the gradients are then views of the
    // same prefix). forward and backward.
    void forward(ConstTensorView query,         // (B, H)      s_{t-1} (Bahdanau) or s_t (Luong)
                 const AttentionKeys& keys,     // (B' >= B, S, K)
                 ConstTensorView enc_out,       // (B, S, C)   h
                 std::span<const int> lengths,  // (B)         S_b, 0 <= S_b <= S
                 int t,
                 TensorView context,  // (B, C)      out: c (overwritten)
                 AttentionStepCache& cache,
                 // given (B entries): row b reads row src_rows[b] of keys and enc_out, which
                 // then have any number of rows (beam rows sharing their sentence's states)
                 std::span<const int> src_rows = {}) const;
    void backward(
        ConstTensorView d_context,  // (B, C)
        ConstTensorView query,      // (B, H)     same tensors forward saw
        const AttentionKeys& keys,
        ConstTensorView enc_out,       // (B, S, C)
        std::span<const int> lengths,  // (B)
        const AttentionStepCache& cache,
        TensorView d_query,    // (B, H)     +=
        TensorView d_keys,     // (B, S, K)  +=  (dot: unused, may be empty)
        TensorView d_enc_out,  // (B, S, C)  +=  context term (and dot scores)
        const AttentionQueryGrad* deferred = nullptr);  // given: W_q / W_p gradients deferred
    // The deferred query-side weight gradients of M = T·B step rows at once:
    //   grad.W_q += d_uᵀ q (additive/concat);  grad.W_p += d_preᵀ q (local-p). Others: nothing.
    bool has_query_weights() const;                      // additive/concat or local-p
    void query_weights_backward(ConstTensorView d_u,     // (M, A)  additive/concat; else ignored
                                ConstTensorView d_pre,   // (M, P)  local-p; else ignored
                                ConstTensorView query);  // (M, H)  the queries forward saw

    // All T steps at once, for callers that run the attention after the whole recurrence (Luong
    // without input feeding, teacher forcing): dot/general scores, any locality (can_batch_steps).
    // Global: per sentence b the scores of every step are one GEMM, R_b = Q_b K_bᵀ (T × S_b), and
    // the contexts another, C_b = α_b h_b; softmax per row. Local: the local-p predictor of all
    // T·B rows is one GEMM each way (its W_p gradient included), the windows stay per row; a
    // sentence with S_b <= 2W runs its scores and contexts as dense per-sentence GEMMs with the
    // weights zero outside each row's window, a longer one row by row (O(D) per row). The same
    // results as T forward() calls up to float rounding (the rows' equations are the same
    // calls); every caches[t] gets the fields backward() reads, so backward() and
    // backward_steps() accept the caches of either. backward_steps adds grad.W_p itself
    // (nothing is deferred).
    bool can_batch_steps() const;
    void forward_steps(ConstTensorView queries,       // (T, B, H)  s_1 .. s_T
                       const AttentionKeys& keys,     // (B, S, K)
                       ConstTensorView enc_out,       // (B, S, C)
                       std::span<const int> lengths,  // (B)
                       TensorView contexts,           // (T, B, C)  out (overwritten)
                       std::span<AttentionStepCache* const> caches) const;  // [T] out
    void backward_steps(
        ConstTensorView d_contexts,  // (T, B, C)
        ConstTensorView queries,     // (T, B, H)
        const AttentionKeys& keys,
        ConstTensorView enc_out,                            // (B, S, C)
        std::span<const int> lengths,                       // (B)
        std::span<const AttentionStepCache* const> caches,  // [T] from forward(_steps)
        TensorView d_queries,                               // (T, B, H)  +=
        TensorView d_keys,      // (B, S, K)  +=  (dot: unused, may be empty)
        TensorView d_enc_out);  // (B, S, C)  +=

    AttentionConfig cfg;
    AttentionParams params;
    AttentionParams grad;  // same shapes as params, zero-initialised
    // Read by backward() when not null (per-step path only; forward_steps / backward_steps
    // refuse it): the step's extra d α and where d cov_t goes. The caller sets and clears it.
    const AttentionExtraGrad* extra = nullptr;

private:
    // The training calls' temporaries (backward, forward_steps, backward_steps), not state
    // (internal.h): those run one call at a time. forward uses none of them, so threads
    // sharing a const model may run it at once, each with its own cache. Held by pointer so that
    // their layout stays out of this header; a copy of an Attention gets its own, empty ones.
    class ScratchPtr {
    public:
        ScratchPtr();
        ScratchPtr(const ScratchPtr&);
        ScratchPtr& operator=(const ScratchPtr&);
        ~ScratchPtr();
        attn::Scratch& operator*() const { return *p_; }
        attn::Scratch* operator->() const { return p_.get(); }

    private:
        std::unique_ptr<attn::Scratch> p_;
    };
    ScratchPtr scratch_;
};

// Scatters a step's window weights into a dense (B, S) matrix (zeros outside the window).
void dense_weights(const AttentionStepCache& cache,  // weights (B, W), start (B)
                   TensorView out);                  // (B, S) overwritten

}  // namespace nazar
