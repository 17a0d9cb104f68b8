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

#include "nazar/attention/local.h"
#include "nazar/attention/luong.h"
#include "nazar/attention/vec.h"
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>

namespace nazar {

bool Attention::can_batch_steps() const {
    return cfg.score == ScoreKind::dot || cfg.score == ScoreKind::general;
}

void Attention::forward_steps(TensorView queries, const AttentionKeys& keys, TensorView enc_out,
                              std::span<const int> lengths, TensorView contexts,
                              std::span<AttentionStepCache* const> caches) const {
    NZ_CHECK(can_batch_steps(), "attention forward_steps needs dot/general, got {}", describe(cfg));
    NZ_CHECK(queries.ndim() == 3, "attention forward_steps: queries must be (T, B, H), got {}",
             queries.shape().str());
    const int T = queries.dim(0), B = queries.dim(1), S = enc_out.dim(1);
    const int H = cfg.query_size, C = cfg.context_size;
    const bool dotk = cfg.score == ScoreKind::dot;
    const int K = dotk ? C : H;
    NZ_CHECK_SHAPE(queries, {T, B, H});
    NZ_CHECK_SHAPE(enc_out, {B, S, C});
    NZ_CHECK_SHAPE(contexts, {T, B, C});
    if (!dotk) NZ_CHECK_SHAPE(keys.keys, {B, S, K});
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}",
             lengths.size(), B);
    NZ_CHECK(static_cast<int>(caches.size()) >= T, "attention forward_steps: {} caches for T = {}",
             caches.size(), T);
    for (int b = 0; b < B; ++b)
        NZ_CHECK(0 <= lengths[b] && lengths[b] <= S,
                 "attention: length {} of sentence {} outside [0, S={}]", lengths[b], b, S);
    const float* kdata = dotk ? enc_out.data() : keys.keys.data();
    if (cfg.local != LocalMode::global) {
        forward_steps_local(queries, kdata, K, enc_out, lengths, contexts, caches);
        return;
    }
    const float s = score_scale();
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
            gemm_raw(false, true, T, n, K, 1.0f, queries.data() + b * H, static_cast<int>(ldq),
                     kdata + b * S * K, K, 0.0f, R, static_cast<int>(lds));
            for (int t = 0; t < T; ++t) {
                float* r = R + t * lds;
                float* pr = P + t * lds;
                std::fill(r + n, r + S, 0.0f);
                for (int j = 0; j < n; ++j) pr[j] = s * r[j];
                kernels::softmax_row(pr, n, pr);
                std::fill(pr + n, pr + S, 0.0f);
            }
            // C_b = P_b h_b  (n = 0: K = 0, the contexts are zeroed)
            gemm_raw(false, false, T, C, n, 1.0f, P, static_cast<int>(lds),
                     enc_out.data() + b * S * C, C, 0.0f, contexts.data() + b * C,
                     static_cast<int>(ldc));
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
                               std::span<const AttentionStepCache* const> caches,
                               TensorView d_queries, TensorView d_keys, TensorView d_enc_out) {
    NZ_CHECK(can_batch_steps(), "attention backward_steps needs dot/general, got {}",
             describe(cfg));
    NZ_CHECK(queries.ndim() == 3, "attention backward_steps: queries must be (T, B, H), got {}",
             queries.shape().str());
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
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}",
             lengths.size(), B);
    NZ_CHECK(static_cast<int>(caches.size()) >= T, "attention backward_steps: {} caches for T = {}",
             caches.size(), T);
    if (cfg.local != LocalMode::global) {
        backward_steps_local(d_contexts, queries, dotk ? enc_out.data() : keys.keys.data(),
                             dotk ? d_enc_out.data() : d_keys.data(), K, enc_out, lengths, caches,
                             d_queries, d_enc_out);
        return;
    }
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
    const float s = score_scale();
    const int64_t ldq = int64_t{B} * H, lds = int64_t{B} * S, ldc = int64_t{B} * C;
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int n = lengths[b];
            if (n == 0) continue;  // no positions: α = 0, the context is constant
            const float* P = sc.seq_r.data() + b * S;
            float* G = sc.seq_p.data() + b * S;
            const float* dC = d_contexts.data() + b * C;
            const float* h = enc_out.data() + b * S * C;
            gemm_raw(false, true, T, n, C, 1.0f, dC, static_cast<int>(ldc), h, C, 0.0f, G,
                     static_cast<int>(lds));
            gemm_raw(true, false, n, C, T, 1.0f, P, static_cast<int>(lds), dC,
                     static_cast<int>(ldc), 1.0f, d_enc_out.data() + b * S * C, C);
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
            gemm_raw(false, false, T, K, n, 1.0f, G, static_cast<int>(lds), kdata + b * S * K, K,
                     1.0f, d_queries.data() + b * H, static_cast<int>(ldq));
            gemm_raw(true, false, n, K, T, 1.0f, G, static_cast<int>(lds), queries.data() + b * H,
                     static_cast<int>(ldq), 1.0f, dkdata + b * S * K, K);
        }
    });
    if (learned)
        for (int b = 0; b < B; ++b) grad.scale[0] += sc.d_scale[b];
}

// Local (Luong §3.2, local.h), all T·B rows r = t·B + b at once: the predictor as one GEMM
// (predict_positions over T·B rows), the windows per row; then per sentence b either
//   dense (S_b <= 2W: at most twice the window's work, at GEMM speed): R_b = Q_b K_bᵀ over all
//     S_b columns (one GEMM), each row's window taken from it; softmax and Gaussian per row; the
//     weights scattered into a dense T × S_b matrix A_b (zero outside the window) and C_b = A_b h_b
//     (one GEMM);
//   or per row (long sources: O(D) per row, never O(S)): scores, context as forward() does.
namespace {
bool dense_local(int S_b, int W) {
    return S_b <= 2 * W;
}
}  // namespace

void Attention::forward_steps_local(TensorView queries, const float* kdata, int K,
                                    TensorView enc_out, std::span<const int> lengths,
                                    TensorView contexts,
                                    std::span<AttentionStepCache* const> caches) const {
    const int T = queries.dim(0), B = queries.dim(1), S = enc_out.dim(1), H = cfg.query_size,
              C = cfg.context_size;
    const int W = window_width(S), D = cfg.window, P = cfg.position_size;
    const int Sd =
        std::min(S, 2 * W);  // columns of the dense buffers: a dense sentence has S_b <= 2W
    const int64_t M = int64_t{T} * B;
    const bool predictive = cfg.local == LocalMode::predictive;
    Scratch& sc = scratch_;
    sc.seq_r.resize({T, B, W}, false);    // raw scores
    sc.seq_p.resize({T, B, W}, false);    // probs
    sc.seq_s.resize({T, B, W}, false);    // weights
    sc.seq_dr.resize({T, B, Sd}, false);  // dense raw scores (dense sentences)
    sc.seq_da.resize({T, B, Sd}, false);  // dense weights (dense sentences)
    sc.seq_pos.resize({M}, false);
    sc.seq_start.assign(M, 0);
    sc.seq_count.assign(M, 0);
    if (predictive) {
        sc.seq_len.resize(M);
        for (int64_t r = 0; r < M; ++r) sc.seq_len[r] = lengths[r % B];
        sc.seq_hid.resize({M, P}, false);
        sc.seq_sig.resize({M}, false);
        attn::predict_positions(queries.reshape({M, H}), params.W_p, params.v_p, sc.seq_len,
                                sc.seq_hid, sc.seq_sig, sc.seq_pos);
    }
    for (int64_t row = 0; row < M; ++row) {
        const int t = static_cast<int>(row / B), b = static_cast<int>(row % B);
        const attn::Window w = predictive
                                   ? attn::predictive_window(sc.seq_pos[row], lengths[b], D)
                                   : attn::monotonic_window(t, lengths[b], D, sc.seq_pos[row]);
        sc.seq_start[row] = w.start;
        sc.seq_count[row] = w.count;
    }
    const float s = score_scale();
    const float sigma = 0.5f * static_cast<float>(D);
    const int64_t ldq = int64_t{B} * H, ldd = int64_t{B} * Sd, ldc = int64_t{B} * C;
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int Sb = lengths[b];
            const bool dense = dense_local(Sb, W);
            const float* kb = kdata + b * S * K;
            if (dense)  // R_b = Q_b K_bᵀ over all S_b columns
                gemm_raw(false, true, T, Sb, K, 1.0f, queries.data() + b * H, static_cast<int>(ldq),
                         kb, K, 0.0f, sc.seq_dr.data() + b * Sd, static_cast<int>(ldd));
            for (int t = 0; t < T; ++t) {
                const int64_t row = int64_t{t} * B + b;
                const int n = sc.seq_count[row], st = sc.seq_start[row];
                float* r = sc.seq_r.data() + row * W;
                float* pr = sc.seq_p.data() + row * W;
                float* wt = sc.seq_s.data() + row * W;
                // e_j = s q · k_j over the window; probs = softmax over it (nothing outside:
                // exactly 0)
                if (dense)
                    std::copy_n(sc.seq_dr.data() + t * ldd + b * Sd + st, n, r);
                else
                    attn::bilinear_scores(queries.data() + row * H, kb + int64_t{st} * K, n, K, r);
                std::fill(r + n, r + W, 0.0f);
                for (int j = 0; j < n; ++j) pr[j] = s * r[j];
                kernels::softmax_row(pr, n, pr);
                std::fill(pr + n, pr + W, 0.0f);
                // local-p: α_j = probs_j exp(-(i - p_t)² / 2σ²)
                if (predictive) {
                    attn::gaussian(sc.seq_pos[row], st, n, sigma, wt);
                    for (int j = 0; j < n; ++j) wt[j] *= pr[j];
                    std::fill(wt + n, wt + W, 0.0f);
                } else {
                    std::copy(pr, pr + W, wt);
                }
                if (dense) {  // row t of A_b
                    float* a = sc.seq_da.data() + t * ldd + b * Sd;
                    std::fill(a, a + Sb, 0.0f);
                    std::copy_n(wt, n, a + st);
                    continue;
                }
                // c = Σ_j α_j h_{st+j}
                float* cb = contexts.data() + row * C;
                std::fill(cb, cb + C, 0.0f);
                for (int j = 0; j < n; ++j)
                    kernels::axpy(C, wt[j], enc_out.data() + (b * S + st + j) * C, cb);
            }
            if (dense)  // C_b = A_b h_b  (S_b = 0: K = 0, the contexts are zeroed)
                gemm_raw(false, false, T, C, Sb, 1.0f, sc.seq_da.data() + b * Sd,
                         static_cast<int>(ldd), enc_out.data() + b * S * C, C, 0.0f,
                         contexts.data() + b * C, static_cast<int>(ldc));
        }
    });
    for (int t = 0; t < T; ++t) {
        AttentionStepCache& c = *caches[t];
        c.scores.resize({B, W}, false);
        c.probs.resize({B, W}, false);
        c.weights.resize({B, W}, false);
        c.scores.copy_from(sc.seq_r.select(t));
        c.probs.copy_from(sc.seq_p.select(t));
        c.weights.copy_from(sc.seq_s.select(t));
        c.position.resize({B}, false);
        c.position.copy_from(sc.seq_pos.slice(int64_t{t} * B, int64_t{t + 1} * B));
        if (predictive) {
            c.pos_hidden.resize({B, P}, false);
            c.pos_hidden.copy_from(sc.seq_hid.slice(int64_t{t} * B, int64_t{t + 1} * B));
            c.pos_sigmoid.resize({B}, false);
            c.pos_sigmoid.copy_from(sc.seq_sig.slice(int64_t{t} * B, int64_t{t + 1} * B));
        }
        c.start.assign(sc.seq_start.begin() + int64_t{t} * B,
                       sc.seq_start.begin() + int64_t{t + 1} * B);
        c.count.assign(sc.seq_count.begin() + int64_t{t} * B,
                       sc.seq_count.begin() + int64_t{t + 1} * B);
        c.score_evals = 0;
        for (int b = 0; b < B; ++b) c.score_evals += c.count[b];
    }
}

// backward()'s per-row math (attention.cpp), rows of one sentence on one thread (they share its
// d_enc_out / d_keys rows). Dense sentences (as in forward), A_b / G_b zero outside the windows:
//   C_b = A_b h_b        =>  d_A_b = d_C_b h_bᵀ;  d_h_b += A_bᵀ d_C_b          (GEMMs)
//   per row: the window's d_α from d_A_b, the Gaussian and softmax backward → G_b row (= s d_e)
//   e = s Q_b K_bᵀ       =>  d_Q_b += G_b K_b;    d_K_b += G_bᵀ Q_b            (GEMMs)
// Per-row sentences: the same per row, steps in the oracle's order t = T−1 … 0. Then the local-p
// predictor's backward over all T·B rows: d_query += d_pre W_p, grad.W_p += d_preᵀ Q (one GEMM
// each).
void Attention::backward_steps_local(TensorView d_contexts, TensorView queries, const float* kdata,
                                     float* dkdata, int K, TensorView enc_out,
                                     std::span<const int> lengths,
                                     std::span<const AttentionStepCache* const> caches,
                                     TensorView d_queries, TensorView d_enc_out) {
    const int T = queries.dim(0), B = queries.dim(1), S = enc_out.dim(1), H = cfg.query_size,
              C = cfg.context_size;
    const int W = window_width(S), P = cfg.position_size;
    const int Sd = std::min(S, 2 * W);  // columns of the dense buffers (as in forward)
    const int64_t M = int64_t{T} * B;
    const bool predictive = cfg.local == LocalMode::predictive,
               learned = cfg.scale == ScaleMode::learned;
    for (int t = 0; t < T; ++t) NZ_CHECK_SHAPE(caches[t]->weights, {B, W});
    Scratch& sc = scratch_;
    sc.seq_r.resize({T, B, W}, false);    // d weights, then d probs / d scores
    sc.seq_dr.resize({T, B, Sd}, false);  // dense d_A, then G (dense sentences)
    sc.seq_da.resize({T, B, Sd}, false);  // dense A (dense sentences)
    sc.seq_pos.resize({M}, true);         // d p_t
    sc.d_scale.resize({B}, true);
    const float s = score_scale();
    const float sigma = 0.5f * static_cast<float>(cfg.window), inv_var = 1.0f / (sigma * sigma);
    const int64_t ldq = int64_t{B} * H, ldd = int64_t{B} * Sd, ldc = int64_t{B} * C;
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int Sb = lengths[b];
            const bool dense = dense_local(Sb, W) && Sb > 0;
            float* dA = sc.seq_dr.data() + b * Sd;
            float* A = sc.seq_da.data() + b * Sd;
            const float* hb = enc_out.data() + b * S * C;
            if (dense) {
                for (int t = 0; t < T; ++t) {  // A_b from the caches' window weights
                    const AttentionStepCache& cache = *caches[t];
                    float* a = A + t * ldd;
                    std::fill(a, a + Sb, 0.0f);
                    std::copy_n(cache.weights.data() + b * W, cache.count[b], a + cache.start[b]);
                }
                gemm_raw(false, true, T, Sb, C, 1.0f, d_contexts.data() + b * C,
                         static_cast<int>(ldc), hb, C, 0.0f, dA, static_cast<int>(ldd));
                gemm_raw(true, false, Sb, C, T, 1.0f, A, static_cast<int>(ldd),
                         d_contexts.data() + b * C, static_cast<int>(ldc), 1.0f,
                         d_enc_out.data() + b * S * C, C);
            }
            float dscale = 0.0f;
            for (int t = T - 1; t >= 0; --t) {
                const AttentionStepCache& cache = *caches[t];
                const int64_t row = int64_t{t} * B + b;
                const int n = cache.count[b], st = cache.start[b];
                const float* wt = cache.weights.data() + b * W;
                const float* pr = cache.probs.data() + b * W;
                const float* dc = d_contexts.data() + row * C;
                float* dw = sc.seq_r.data() + row * W;
                // c = Σ_j α_j h_j  =>  d_α_j = d_c · h_j;  d_h_j += α_j d_c
                if (dense) {
                    std::copy_n(dA + t * ldd + st, n, dw);
                } else {
                    for (int j = 0; j < n; ++j) {
                        const int64_t er = (b * S + st + j) * C;
                        dw[j] = attn::dot8(dc, enc_out.data() + er, C);
                        kernels::axpy(C, wt[j], dc, d_enc_out.data() + er);
                    }
                }
                // local-p: α_j = pr_j g_j  =>  d_pr_j = d_α_j g_j;  d_p += Σ_j d_α_j pr_j g_j
                // (i-p)/σ²
                if (predictive)
                    sc.seq_pos[row] =
                        attn::gaussian_backward(cache.position[b], st, n, inv_var, pr, dw);
                // pr = softmax(e)  =>  d_e = pr ⊙ (d_pr − Σ_j pr_j d_pr_j);  e = s r, r = q · k
                attn::window_softmax_backward(pr, dw, n, dw);
                if (learned) dscale += attn::dot8(dw, cache.scores.data() + b * W, n);
                if (dense) {  // row t of G_b = s d_e, zero outside the window
                    float* g = dA + t * ldd;
                    std::fill(g, g + Sb, 0.0f);
                    for (int j = 0; j < n; ++j) g[st + j] = s * dw[j];
                    continue;
                }
                attn::bilinear_scores_backward(queries.data() + row * H, kdata + (b * S + st) * K,
                                               dw, n, K, s, d_queries.data() + row * H,
                                               dkdata + (b * S + st) * K);
            }
            sc.d_scale[b] = dscale;
            if (dense) {
                gemm_raw(false, false, T, K, Sb, 1.0f, dA, static_cast<int>(ldd), kdata + b * S * K,
                         K, 1.0f, d_queries.data() + b * H, static_cast<int>(ldq));
                gemm_raw(true, false, Sb, K, T, 1.0f, dA, static_cast<int>(ldd),
                         queries.data() + b * H, static_cast<int>(ldq), 1.0f, dkdata + b * S * K,
                         K);
            }
        }
    });
    if (learned)
        for (int b = 0; b < B; ++b) grad.scale[0] += sc.d_scale[b];
    if (predictive) {
        sc.seq_len.resize(M);
        for (int64_t r = 0; r < M; ++r) sc.seq_len[r] = lengths[r % B];
        sc.seq_hid.resize({M, P}, false);
        sc.seq_sig.resize({M}, false);
        for (int t = 0; t < T; ++t) {
            sc.seq_hid.slice(int64_t{t} * B, int64_t{t + 1} * B).copy_from(caches[t]->pos_hidden);
            sc.seq_sig.slice(int64_t{t} * B, int64_t{t + 1} * B).copy_from(caches[t]->pos_sigmoid);
        }
        sc.seq_pre.resize({M, P}, false);
        attn::predict_positions_backward(sc.seq_pos, queries.reshape({M, H}), params.W_p,
                                         params.v_p, sc.seq_len, sc.seq_hid, sc.seq_sig, sc.seq_pre,
                                         d_queries.reshape({M, H}), grad.W_p, grad.v_p);
    }
}

}  // namespace nazar
