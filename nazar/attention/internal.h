// Internal to nazar/attention (not part of the API): the per-call temporaries of Attention and
// the entry points of the local all-steps path. The temporaries are not state: one Attention runs
// one call at a time (backward, forward_steps, backward_steps: training owns its model; forward,
// which decoding threads sharing one model call at once, takes none of them) and each call sizes
// what it uses. Every field has one meaning. Shape letters
// as in attention.h; M = T·B rows of all steps (row r = t·B + b); W = S (global) or 2D+1 (local);
// Sd = min(S, 2W), the columns of the dense local buffers (a sentence with S_b <= 2W runs its local
// steps as dense GEMMs).
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/core/tensor.h"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nazar::attn {

// Per-row temporaries of one chunk of rows in Attention::forward: on the stack up to
// kStackFloats (attention sizes up to 1024 with coverage, 2048 without), on the heap beyond (an
// allocation per chunk and step).
class RowTemp {
public:
    explicit RowTemp(int64_t floats) {
        if (floats > kStackFloats) heap_ = std::make_unique<float[]>(floats);
    }
    float* data() { return heap_ ? heap_.get() : stack_.data(); }

private:
    static constexpr int64_t kStackFloats = 2048;
    std::array<float, kStackFloats> stack_;
    std::unique_ptr<float[]> heap_;
};

struct StepScratch {      // Attention::backward: one decoder step, B rows
    Tensor tanh_rows;     // (B, A)  additive: per-row scratch of the fused score kernels
    Tensor d_weights;     // (B, W)  d α
    Tensor d_probs;       // (B, W)  local-p: d pr = d α ⊙ g  (otherwise d pr is d α itself)
    Tensor d_scores;      // (B, W)  d e
    Tensor d_query_proj;  // (B, A)  additive: d (W_q q)
    Tensor d_v;           // (B, A)  additive: per-row d v_a, summed in a fixed order
    Tensor d_scale;       // (B)     learned scale: per-row d s, summed in a fixed order
    Tensor d_position;    // (B)     local-p: d p_t
    Tensor d_pos_pre;     // (B, P)  local-p: d (W_p q)
    Tensor cov_u;         // (B, A)  coverage: per-row u + cov_j w_c
    Tensor cov_d_pre;     // (B, A)  coverage: per-row d pre_j
    Tensor d_w_c;         // (B, A)  coverage: per-row d w_c, summed in a fixed order
    Tensor d_context;     // (B, C)  d c plus Attention::extra->d_context (copy attention)
    Tensor d_bias;        // (B)     monotonic: per-row d r, summed in a fixed order
    Tensor reach;         // (B, W)  monotonic: q_j, the probability to reach j (recomputed)
    Tensor d_alpha;       // (B, W)  MoChA: d α from d β
    Tensor d_chunk;       // (B, W)  MoChA: d u, the chunk energies' gradient
    Tensor d_v_c;         // (B, A)  MoChA: per-row d v_c, summed in a fixed order
};

// Monotonic attention and MoChA in Attention's per-step forward and backward (monotonic.cpp):
// the step's α and chunk-energy rows sized (forward, before the rows); row b's weights from its
// scores in pr (p on return): α, or the hard choice, into wt, MoChA's α into cache.alpha and β
// into wt; row b's backward from d α (MoChA: d β) in sc.d_weights to d e in sc.d_scores, d r in
// sc.d_bias, d α_{t−1} into Attention::extra, and MoChA's d u through the chunk energy into
// sc.d_query_proj, dkb (the window's d keys) and sc.d_v_c; after the rows, d r and d v_c.
void prepare_monotonic_step(const Attention& att, AttentionStepCache& cache, int B, int W);
void monotonic_step_row(const Attention& att, AttentionStepCache& cache, int64_t b, int n, int W,
                        int S, float* pr, float* wt);
void monotonic_step_row_backward(const Attention& att, StepScratch& sc,
                                 const AttentionStepCache& cache, int64_t b, int64_t first, int n,
                                 int W, const float* kb, float* dkb);
void monotonic_step_grads(Attention& att, const StepScratch& sc, int B);

struct ForwardStepsScratch {        // Attention::forward_steps: all T steps
    Tensor raw;                     // (T, B, W)   r = q · k over each row's window
    Tensor probs;                   // (T, B, W)   softmax of s·r over the window
    Tensor weights;                 // (T, B, W)   local: α (global: α = probs, not copied)
    Tensor dense_raw;               // (T, B, Sd)  local, dense sentences: r over all S_b columns
    Tensor dense_weights;           // (T, B, Sd)  local, dense sentences: α, 0 off the window
    Tensor position;                // (M)         local: p_t
    Tensor pos_hidden;              // (M, P)      local-p: tanh(W_p q)
    Tensor pos_sigmoid;             // (M)         local-p: sigmoid(v_p · pos_hidden)
    std::vector<int> row_length;    // (M)         local-p: S_b of row r
    std::vector<int> start, count;  // (M)         local: the window of row r
};

struct BackwardStepsScratch {     // Attention::backward_steps: all T steps
    Tensor probs;                 // (T, B, S)   global: the caches' probs, gathered for GEMMs
    Tensor raw;                   // (T, B, S)   global, learned scale: the caches' raw scores
    Tensor d_weights;             // (T, B, W)   d α  (global: d C hᵀ by one GEMM per sentence)
    Tensor d_probs;               // (T, B, W)   local-p: d pr = d α ⊙ g
    Tensor d_scores;              // (T, B, W)   d e
    Tensor d_raw;                 // (T, B, S)   global: d r = s d e, operand of the GEMMs
    Tensor dense_weights;         // (T, B, Sd)  local, dense sentences: α from the caches
    Tensor dense_d_weights;       // (T, B, Sd)  local, dense sentences: d A = d C hᵀ
    Tensor dense_d_raw;           // (T, B, Sd)  local, dense sentences: d r = s d e, 0 off it
    Tensor d_scale;               // (B)         learned scale: per-sentence d s
    Tensor d_position;            // (M)         local-p: d p_t
    Tensor pos_hidden;            // (M, P)      local-p: the caches' tanh(W_p q), gathered
    Tensor pos_sigmoid;           // (M)         local-p: the caches' sigmoids, gathered
    Tensor d_pos_pre;             // (M, P)      local-p: d (W_p q)
    std::vector<int> row_length;  // (M)         local-p: S_b of row r
};

struct Scratch {
    StepScratch step;
    ForwardStepsScratch steps_forward;
    BackwardStepsScratch steps_backward;
};

// The sizes of one forward_steps / backward_steps call, checked by all_steps.cpp:
// K = C (dot: the keys are enc_out) or H (general); W = S (global) or 2D+1 (local).
struct StepsSizes {
    int T = 0, B = 0, S = 0, H = 0, C = 0, K = 0, W = 0;
};

// A step's cache from its rows of the all-steps scratch: raw scores, probs, weights (B, W),
// the windows' start and count (B); score_evals = Σ count.
void store_step(ConstTensorView raw, ConstTensorView probs, ConstTensorView weights,
                std::span<const int> start, std::span<const int> count, AttentionStepCache& c);

// forward_steps / backward_steps for local-m and local-p (local_all_steps.cpp).
// keys: (B, S, K), enc_out itself for dot; d_keys likewise (d_enc_out for dot).
void forward_steps_local(const Attention& att, ForwardStepsScratch& sc, const StepsSizes& z,
                         ConstTensorView queries, const float* keys, ConstTensorView enc_out,
                         std::span<const int> lengths, TensorView contexts,
                         std::span<AttentionStepCache* const> caches);
void backward_steps_local(Attention& att, BackwardStepsScratch& sc, const StepsSizes& z,
                          ConstTensorView d_contexts, ConstTensorView queries, const float* keys,
                          float* d_keys, ConstTensorView enc_out, std::span<const int> lengths,
                          std::span<const AttentionStepCache* const> caches, TensorView d_queries,
                          TensorView d_enc_out);

}  // namespace nazar::attn
