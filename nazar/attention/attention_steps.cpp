// Global dot/general attention over all decoder steps at once (Attention::forward_steps /
// backward_steps): per sentence, the T steps' scores and contexts are GEMMs instead of T·S_b
// dot products and axpys, and the whole batch is one parallel loop instead of one per step.
// The math is forward()/backward()'s (attention.cpp), regrouped:
//   R_b = Q_b K_bᵀ            (T × S_b)   Q_b: the T query rows of sentence b (row stride B·H)
//   P_b = softmax_rows(s R_b)             over the S_b real positions; padding gets exactly 0
//   C_b = P_b h_b             (T × C)     h_b = enc_out[b, :S_b]
// Rows of padded target steps are computed like any other (as forward() does); the caller's
// zero d_context for them makes their backward contribution exactly zero.
#include "nazar/attention/attention.h"

#include "nazar/attention/vec.h"
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>

namespace nazar {

namespace {
float step_score_scale(const AttentionConfig& cfg, const AttentionParams& p) {
    switch (cfg.scale) {
        case ScaleMode::none: return 1.0f;
        case ScaleMode::inv_sqrt: return 1.0f / std::sqrt(static_cast<float>(cfg.context_size));
        case ScaleMode::learned: return p.scale[0];
    }
    return 1.0f;
}
}  // namespace

bool Attention::can_batch_steps() const {
    return (cfg.score == ScoreKind::dot || cfg.score == ScoreKind::general) && cfg.local == LocalMode::global;
}

void Attention::forward_steps(TensorView queries, const AttentionKeys& keys, TensorView enc_out,
                              std::span<const int> lengths, TensorView contexts,
                              std::span<AttentionStepCache* const> caches) const {
    NZ_CHECK(can_batch_steps(), "attention forward_steps needs global dot/general, got {}", describe(cfg));
    NZ_CHECK(queries.ndim() == 3, "attention forward_steps: queries must be (T, B, H), got {}", queries.shape().str());
    const int T = queries.dim(0), B = queries.dim(1), S = enc_out.dim(1);
    const int H = cfg.query_size, C = cfg.context_size;
    const bool dotk = cfg.score == ScoreKind::dot;
    const int K = dotk ? C : H;
    NZ_CHECK_SHAPE(queries, {T, B, H});
    NZ_CHECK_SHAPE(enc_out, {B, S, C});
    NZ_CHECK_SHAPE(contexts, {T, B, C});
    if (!dotk) NZ_CHECK_SHAPE(keys.keys, {B, S, K});
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}", lengths.size(), B);
    NZ_CHECK(static_cast<int>(caches.size()) >= T, "attention forward_steps: {} caches for T = {}", caches.size(), T);
    for (int b = 0; b < B; ++b)
        NZ_CHECK(0 <= lengths[b] && lengths[b] <= S, "attention: length {} of sentence {} outside [0, S={}]",
                 lengths[b], b, S);
    const float* kdata = dotk ? enc_out.data() : keys.keys.data();
    const float s = step_score_scale(cfg, params);
    Scratch& sc = scratch_;
    sc.seq_r.resize({T, B, S}, false);
    sc.seq_p.resize({T, B, S}, false);
    const int64_t ldq = int64_t{B} * H, lds = int64_t{B} * S, ldc = int64_t{B} * C;
    // gemm_raw inside the body: nested pool calls run inline, so each sentence is one thread's work
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int n = lengths[b];
            float* R = sc.seq_r.data() + b * S;
            float* P = sc.seq_p.data() + b * S;
            // R_b = Q_b K_bᵀ  (e = s r)
            gemm_raw(false, true, T, n, K, 1.0f, queries.data() + b * H, static_cast<int>(ldq), kdata + b * S * K, K,
                     0.0f, R, static_cast<int>(lds));
            for (int t = 0; t < T; ++t) {
                float* r = R + t * lds;
                float* pr = P + t * lds;
                std::fill(r + n, r + S, 0.0f);
                for (int j = 0; j < n; ++j) pr[j] = s * r[j];
                kernels::softmax_row(pr, n, pr);
                std::fill(pr + n, pr + S, 0.0f);
            }
            // C_b = P_b h_b  (n = 0: K = 0, the contexts are zeroed)
            gemm_raw(false, false, T, C, n, 1.0f, P, static_cast<int>(lds), enc_out.data() + b * S * C, C, 0.0f,
                     contexts.data() + b * C, static_cast<int>(ldc));
        }
    });
    int64_t evals = 0;
    for (int b = 0; b < B; ++b) evals += lengths[b];
    for (int t = 0; t < T; ++t) {
        AttentionStepCache& c = *caches[t];
        c.scores.resize({B, S}, false);
        c.probs.resize({B, S}, false);
        c.weights.resize({B, S}, false);
        c.scores.copy_from(sc.seq_r.select(t));
        c.probs.copy_from(sc.seq_p.select(t));
        c.weights.copy_from(sc.seq_p.select(t));
        c.start.assign(B, 0);
        c.count.assign(lengths.begin(), lengths.end());
        c.score_evals = evals;
    }
}

// Per sentence b (forward()/backward()'s math, all T rows at once; G = s·d_e):
//   C_b = P_b h_b       =>  d_P_b = d_C_b h_bᵀ;           d_h_b += P_bᵀ d_C_b
//   P = softmax(e) rows =>  d_e = P ⊙ (d_P − rowsum(P ⊙ d_P));  learned: d_s += Σ d_e ⊙ R
//   e = s Q_b K_bᵀ      =>  d_Q_b += G K_b;                d_K_b += Gᵀ Q_b   (dot: K_b = h_b)
void Attention::backward_steps(TensorView d_contexts, TensorView queries, const AttentionKeys& keys,
                               TensorView enc_out, std::span<const int> lengths,
                               std::span<const AttentionStepCache* const> caches, TensorView d_queries, TensorView d_keys,
                               TensorView d_enc_out) {
    NZ_CHECK(can_batch_steps(), "attention backward_steps needs global dot/general, got {}", describe(cfg));
    NZ_CHECK(queries.ndim() == 3, "attention backward_steps: queries must be (T, B, H), got {}", queries.shape().str());
    const int T = queries.dim(0), B = queries.dim(1), S = enc_out.dim(1);
    const int H = cfg.query_size, C = cfg.context_size;
    const bool dotk = cfg.score == ScoreKind::dot;
    const int K = dotk ? C : H;
    NZ_CHECK_SHAPE(queries, {T, B, H});
    NZ_CHECK_SHAPE(d_contexts, {T, B, C});
    NZ_CHECK_SHAPE(d_queries, {T, B, H});
    NZ_CHECK_SHAPE(enc_out, {B, S, C});
    NZ_CHECK_SHAPE(d_enc_out, {B, S, C});
    if (!dotk) {
        NZ_CHECK_SHAPE(keys.keys, {B, S, K});
        NZ_CHECK_SHAPE(d_keys, {B, S, K});
    }
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}", lengths.size(), B);
    NZ_CHECK(static_cast<int>(caches.size()) >= T, "attention backward_steps: {} caches for T = {}", caches.size(), T);
    const bool learned = cfg.scale == ScaleMode::learned;
    Scratch& sc = scratch_;
    sc.seq_r.resize({T, B, S}, false);
    sc.seq_p.resize({T, B, S}, false);
    if (learned) sc.seq_s.resize({T, B, S}, false);
    for (int t = 0; t < T; ++t) {
        NZ_CHECK_SHAPE(caches[t]->probs, {B, S});
        sc.seq_r.select(t).copy_from(caches[t]->probs);
        if (learned) sc.seq_s.select(t).copy_from(caches[t]->scores);
    }
    sc.d_scale.resize({B}, true);
    const float* kdata = dotk ? enc_out.data() : keys.keys.data();
    float* dkdata = dotk ? d_enc_out.data() : d_keys.data();
    const float s = step_score_scale(cfg, params);
    const int64_t ldq = int64_t{B} * H, lds = int64_t{B} * S, ldc = int64_t{B} * C;
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int n = lengths[b];
            if (n == 0) continue;  // no positions: α = 0, the context is constant
            const float* P = sc.seq_r.data() + b * S;
            float* G = sc.seq_p.data() + b * S;
            const float* dC = d_contexts.data() + b * C;
            const float* h = enc_out.data() + b * S * C;
            gemm_raw(false, true, T, n, C, 1.0f, dC, static_cast<int>(ldc), h, C, 0.0f, G, static_cast<int>(lds));
            gemm_raw(true, false, n, C, T, 1.0f, P, static_cast<int>(lds), dC, static_cast<int>(ldc), 1.0f,
                     d_enc_out.data() + b * S * C, C);
            float dscale = 0.0f;
            for (int t = 0; t < T; ++t) {
                const float* pr = P + t * lds;
                float* g = G + t * lds;
                const float sum = attn::dot8(pr, g, n);
                for (int j = 0; j < n; ++j) g[j] = pr[j] * (g[j] - sum);
                if (learned) dscale += attn::dot8(g, sc.seq_s.data() + t * lds + b * S, n);
                for (int j = 0; j < n; ++j) g[j] *= s;
            }
            sc.d_scale[b] = dscale;
            gemm_raw(false, false, T, K, n, 1.0f, G, static_cast<int>(lds), kdata + b * S * K, K, 1.0f,
                     d_queries.data() + b * H, static_cast<int>(ldq));
            gemm_raw(true, false, n, K, T, 1.0f, G, static_cast<int>(lds), queries.data() + b * H,
                     static_cast<int>(ldq), 1.0f, dkdata + b * S * K, K);
        }
    });
    if (learned)
        for (int b = 0; b < B; ++b) grad.scale[0] += sc.d_scale[b];
}

}  // namespace nazar
