// Dot/general attention over all decoder steps at once (Attention::forward_steps /
// backward_steps), for callers that run the attention after the whole recurrence. This file:
// the checks, and global attention; local-m / local-p: local_all_steps.cpp.
// Per sentence b the T steps' scores and contexts are GEMMs instead of T·S_b dot products and
// axpys, and the whole batch is one parallel loop instead of one per step. Each row's softmax
// and its backward are the row equations of row_equations.h, the calls forward() / backward()
// make; only the score and context products are regrouped:
//   R_b = Q_b K_bᵀ            (T × S_b)   Q_b: the T query rows of sentence b (row stride B·H)
//   P_b = softmax_rows(s R_b)             over the S_b real positions; padding gets exactly 0
//   C_b = P_b h_b             (T × C)     h_b = enc_out[b, :S_b]
// Rows of padded target steps are computed like any other (as forward() does); the caller's
// zero d_context for them makes their backward contribution exactly zero.
#include "nazar/attention/attention.h"

#include "nazar/attention/internal.h"
#include "nazar/attention/row_equations.h"
#include "nazar/attention/vec.h"
#include "nazar/core/blas.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <vector>

namespace nazar {

namespace {
// The checks forward_steps and backward_steps share; returns the call's sizes.
attn::StepsSizes steps_sizes(const Attention& att, const char* what, ConstTensorView queries,
                             const AttentionKeys& keys, ConstTensorView enc_out,
                             std::span<const int> lengths, size_t n_caches) {
    NZ_CHECK(att.can_batch_steps(), "attention {} needs dot/general (not monotonic), got {}", what,
             describe(att.cfg));
    NZ_CHECK(queries.ndim() == 3, "attention {}: queries must be (T, B, H), got {}", what,
             queries.shape().str());
    attn::StepsSizes z;
    z.T = queries.dim(0);
    z.B = queries.dim(1);
    z.S = enc_out.dim(1);
    z.H = att.cfg.query_size;
    z.C = att.cfg.context_size;
    z.K = att.cfg.score == ScoreKind::dot ? z.C : z.H;
    z.W = att.window_width(z.S);
    NZ_CHECK_SHAPE(queries, {z.T, z.B, z.H});
    NZ_CHECK_SHAPE(enc_out, {z.B, z.S, z.C});
    if (att.cfg.score != ScoreKind::dot) NZ_CHECK_SHAPE(keys.keys, {z.B, z.S, z.K});
    attn::check_lengths(lengths, z.B, z.S);
    NZ_CHECK(static_cast<int>(n_caches) >= z.T, "attention {}: {} caches for T = {}", what,
             n_caches, z.T);
    return z;
}
}  // namespace

void attn::store_step(ConstTensorView raw, ConstTensorView probs, ConstTensorView weights,
                      std::span<const int> start, std::span<const int> count,
                      AttentionStepCache& c) {
    const int B = raw.dim(0), W = raw.dim(1);
    c.scores.resize({B, W}, false);
    c.probs.resize({B, W}, false);
    c.weights.resize({B, W}, false);
    c.scores.copy_from(raw);
    c.probs.copy_from(probs);
    c.weights.copy_from(weights);
    c.start.assign(start.begin(), start.end());
    c.count.assign(count.begin(), count.end());
    c.score_evals = 0;
    for (int n : count) c.score_evals += n;
}

bool Attention::can_batch_steps() const {
    // monotonic: step t's weights read α_{t−1}, a recurrence over the steps
    return (cfg.score == ScoreKind::dot || cfg.score == ScoreKind::general) && !cfg.monotonic;
}

void Attention::forward_steps(ConstTensorView queries, const AttentionKeys& keys,
                              ConstTensorView enc_out, std::span<const int> lengths,
                              TensorView contexts,
                              std::span<AttentionStepCache* const> caches) const {
    const attn::StepsSizes z =
        steps_sizes(*this, "forward_steps", queries, keys, enc_out, lengths, caches.size());
    const int T = z.T, B = z.B, S = z.S, H = z.H, C = z.C, K = z.K;
    NZ_CHECK_SHAPE(contexts, {T, B, C});
    for (int t = 0; t < T; ++t)
        NZ_CHECK(caches[t]->drop_mask.numel() == 0,
                 "attention forward_steps: step {} has a dropout mask; masks need the per-step "
                 "forward",
                 t);
    const float* kdata = cfg.score == ScoreKind::dot ? enc_out.data() : keys.keys.data();
    attn::ForwardStepsScratch& sc = scratch_->steps_forward;
    if (cfg.local != LocalMode::global) {
        attn::forward_steps_local(*this, sc, z, queries, kdata, enc_out, lengths, contexts, caches);
        return;
    }
    const float s = score_scale();
    sc.raw.resize({T, B, S}, false);
    sc.probs.resize({T, B, S}, false);
    const int64_t ldq = int64_t{B} * H, lds = int64_t{B} * S, ldc = int64_t{B} * C;
    // gemm_raw inside the body: nested pool calls run inline, so each sentence is one thread's work
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int n = lengths[b];
            float* R = sc.raw.data() + b * S;
            float* P = sc.probs.data() + b * S;
            // R_b = Q_b K_bᵀ  (e = s r)
            gemm_raw(false, true, T, n, K, 1.0f, queries.data() + b * H, static_cast<int>(ldq),
                     kdata + b * S * K, K, 0.0f, R, static_cast<int>(lds));
            for (int t = 0; t < T; ++t) {
                attn::scale_scores(R + t * lds, s, n, S, P + t * lds);
                attn::masked_softmax(P + t * lds, n, S);
            }
            // C_b = P_b h_b  (n = 0: K = 0, the contexts are zeroed)
            gemm_raw(false, false, T, C, n, 1.0f, P, static_cast<int>(lds),
                     enc_out.data() + b * S * C, C, 0.0f, contexts.data() + b * C,
                     static_cast<int>(ldc));
        }
    });
    const std::vector<int> start(B, 0);
    for (int t = 0; t < T; ++t)  // global: α = probs
        attn::store_step(sc.raw.select(t), sc.probs.select(t), sc.probs.select(t), start, lengths,
                         *caches[t]);
}

// Per sentence b (the rows' equations of row_equations.h, all T rows at once):
//   C_b = P_b h_b       =>  d_P_b = d_C_b h_bᵀ;           d_h_b += P_bᵀ d_C_b
//   P = softmax(e) rows =>  d_e = P ⊙ (d_P − rowsum(P ⊙ d_P));  learned: d_s += Σ d_e ⊙ R
//   e = s R, R = Q_b K_bᵀ   =>  d_R = s d_e;  d_Q_b += d_R K_b;  d_K_b += d_Rᵀ Q_b  (dot: K_b =
//   h_b)
void Attention::backward_steps(ConstTensorView d_contexts, ConstTensorView queries,
                               const AttentionKeys& keys, ConstTensorView enc_out,
                               std::span<const int> lengths,
                               std::span<const AttentionStepCache* const> caches,
                               TensorView d_queries, TensorView d_keys, TensorView d_enc_out) {
    const attn::StepsSizes z =
        steps_sizes(*this, "backward_steps", queries, keys, enc_out, lengths, caches.size());
    const int T = z.T, B = z.B, S = z.S, H = z.H, C = z.C, K = z.K;
    for (int t = 0; t < T; ++t)
        NZ_CHECK(caches[t]->drop_mask.numel() == 0,
                 "attention backward_steps: step {} has a dropout mask; masks need the per-step "
                 "backward",
                 t);
    const bool dotk = cfg.score == ScoreKind::dot;
    NZ_CHECK_SHAPE(d_contexts, {T, B, C});
    NZ_CHECK_SHAPE(d_queries, {T, B, H});
    NZ_CHECK_SHAPE(d_enc_out, {B, S, C});
    if (!dotk) NZ_CHECK_SHAPE(d_keys, {B, S, K});
    const float* kdata = dotk ? enc_out.data() : keys.keys.data();
    float* dkdata = dotk ? d_enc_out.data() : d_keys.data();
    attn::BackwardStepsScratch& sc = scratch_->steps_backward;
    if (cfg.local != LocalMode::global) {
        attn::backward_steps_local(*this, sc, z, d_contexts, queries, kdata, dkdata, enc_out,
                                   lengths, caches, d_queries, d_enc_out);
        return;
    }
    const bool learned = cfg.scale == ScaleMode::learned;
    sc.probs.resize({T, B, S}, false);
    if (learned) sc.raw.resize({T, B, S}, false);
    for (int t = 0; t < T; ++t) {
        NZ_CHECK_SHAPE(caches[t]->probs, {B, S});
        sc.probs.select(t).copy_from(caches[t]->probs);
        if (learned) sc.raw.select(t).copy_from(caches[t]->scores);
    }
    sc.d_weights.resize({T, B, S}, false);
    sc.d_scores.resize({T, B, S}, false);
    sc.d_raw.resize({T, B, S}, false);
    sc.d_scale.resize({B}, true);
    const float s = score_scale();
    const int64_t ldq = int64_t{B} * H, lds = int64_t{B} * S, ldc = int64_t{B} * C;
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int n = lengths[b];
            if (n == 0) continue;  // no positions: α = 0, the context is constant
            const float* P = sc.probs.data() + b * S;
            float* dA = sc.d_weights.data() + b * S;
            float* dE = sc.d_scores.data() + b * S;
            float* dR = sc.d_raw.data() + b * S;
            const float* dC = d_contexts.data() + b * C;
            const float* h = enc_out.data() + b * S * C;
            gemm_raw(false, true, T, n, C, 1.0f, dC, static_cast<int>(ldc), h, C, 0.0f, dA,
                     static_cast<int>(lds));
            gemm_raw(true, false, n, C, T, 1.0f, P, static_cast<int>(lds), dC,
                     static_cast<int>(ldc), 1.0f, d_enc_out.data() + b * S * C, C);
            float dscale = 0.0f;
            for (int64_t i = 0; i < T * lds; i += lds) {  // row t at offset t·B·S
                attn::row_weights_backward(false, 0.0f, {0, n}, 0.0f, P + i, dA + i, nullptr,
                                           dE + i);
                if (learned) dscale += attn::dot8(dE + i, sc.raw.data() + i + b * S, n);
                attn::scale_scores_backward(dE + i, s, n, dR + i);
            }
            sc.d_scale[b] = dscale;
            gemm_raw(false, false, T, K, n, 1.0f, dR, static_cast<int>(lds), kdata + b * S * K, K,
                     1.0f, d_queries.data() + b * H, static_cast<int>(ldq));
            gemm_raw(true, false, n, K, T, 1.0f, dR, static_cast<int>(lds), queries.data() + b * H,
                     static_cast<int>(ldq), 1.0f, dkdata + b * S * K, K);
        }
    });
    if (learned)
        for (int b = 0; b < B; ++b) grad.scale[0] += sc.d_scale[b];
}

}  // namespace nazar
