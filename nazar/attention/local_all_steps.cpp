// Local (Luong §3.2, local.h) dot/general attention over all decoder steps at once, all T·B rows
// r = t·B + b: the local-p predictor as one GEMM each way (predict_positions over T·B rows, its
// W_p gradient included), the windows per row; then per sentence b either
//   dense (S_b <= 2W: at most twice the window's work, at GEMM speed): R_b = Q_b K_bᵀ over all
//     S_b columns (one GEMM), each row's window taken from it; the row's softmax and Gaussian
//     (row_equations.h); the weights scattered into a dense T × S_b matrix A_b (zero outside
//     the window) and C_b = A_b h_b (one GEMM);
//   or per row (long sources: O(D) per row, never O(S)): every row as forward() computes it.
// The same results as T forward() / backward() calls up to the GEMMs' float rounding.
#include "nazar/attention/attention.h"

#include "nazar/attention/internal.h"
#include "nazar/attention/luong.h"
#include "nazar/attention/row_equations.h"
#include "nazar/attention/vec.h"
#include "nazar/core/blas.h"
#include "nazar/core/threads.h"

#include <algorithm>

namespace nazar::attn {

namespace {
bool dense_local(int S_b, int W) {
    return S_b <= 2 * W;
}

// What the per-sentence bodies read: the call's sizes, strides and constants.
struct LocalSteps {
    StepsSizes z;
    int Sd = 0;                         // columns of the dense buffers: min(S, 2W)
    int64_t ldq = 0, ldd = 0, ldc = 0;  // row strides of Q, the dense buffers, C: B·H ...
    bool predictive = false, learned = false;
    float s = 1.0f, sigma = 1.0f;      // score scale, local-p's σ
    ConstTensorView queries, enc_out;  // (T, B, H), (B, S, C)
    const float* keys = nullptr;       // (B, S, K)
    std::span<const int> lengths;      // (B)

    LocalSteps(const Attention& att, const StepsSizes& sizes, ConstTensorView q, ConstTensorView h,
               const float* k, std::span<const int> len)
        : z(sizes),
          Sd(std::min(sizes.S, 2 * sizes.W)),
          ldq(int64_t{sizes.B} * sizes.H),
          ldd(int64_t{sizes.B} * Sd),
          ldc(int64_t{sizes.B} * sizes.C),
          predictive(att.cfg.local == LocalMode::predictive),
          learned(att.cfg.scale == ScaleMode::learned),
          s(att.score_scale()),
          sigma(gaussian_sigma(att.cfg.window)),
          queries(q),
          enc_out(h),
          keys(k),
          lengths(len) {}
    int64_t enc_row(int64_t b, int i) const { return b * z.S + i; }  // row of (B, S, ·)
};

// Windows of all M rows (local-p: the predictor over all of them first).
void all_windows(const Attention& att, const LocalSteps& L, ForwardStepsScratch& sc) {
    const int B = L.z.B, P = att.cfg.position_size;
    const int64_t M = int64_t{L.z.T} * B;
    sc.position.resize({M}, false);
    sc.start.assign(M, 0);
    sc.count.assign(M, 0);
    if (L.predictive) {
        sc.row_length.resize(M);
        for (int64_t r = 0; r < M; ++r) sc.row_length[r] = L.lengths[r % B];
        sc.pos_hidden.resize({M, P}, false);
        sc.pos_sigmoid.resize({M}, false);
        predict_positions(L.queries.reshape({M, L.z.H}), att.params.W_p, att.params.v_p,
                          sc.row_length, sc.pos_hidden, sc.pos_sigmoid, sc.position);
    }
    for (int64_t row = 0; row < M; ++row) {
        const int t = static_cast<int>(row / B), b = static_cast<int>(row % B);
        const Window w =
            row_window(att.cfg.local, t, L.lengths[b], att.cfg.window, sc.position[row]);
        sc.start[row] = w.start;
        sc.count[row] = w.count;
    }
}

// The T rows of sentence b, forward.
void forward_sentence(const LocalSteps& L, ForwardStepsScratch& sc, int64_t b,
                      TensorView contexts) {
    const int T = L.z.T, B = L.z.B, K = L.z.K, W = L.z.W, C = L.z.C, Sd = L.Sd;
    const int Sb = L.lengths[b];
    const bool dense = dense_local(Sb, W);
    const float* kb = L.keys + L.enc_row(b, 0) * K;
    float* dense_raw = sc.dense_raw.data() + b * Sd;
    float* dense_wt = sc.dense_weights.data() + b * Sd;
    if (dense)  // R_b = Q_b K_bᵀ over all S_b columns
        gemm_raw(false, true, T, Sb, K, 1.0f, L.queries.data() + b * L.z.H, static_cast<int>(L.ldq),
                 kb, K, 0.0f, dense_raw, static_cast<int>(L.ldd));
    for (int t = 0; t < T; ++t) {
        const int64_t row = int64_t{t} * B + b;
        const Window w{sc.start[row], sc.count[row]};
        float* r = sc.raw.data() + row * W;
        float* pr = sc.probs.data() + row * W;
        float* wt = sc.weights.data() + row * W;
        // e_j = s q · k_j over the window
        if (dense)
            std::copy_n(dense_raw + t * L.ldd + w.start, w.count, r);
        else
            bilinear_scores(L.queries.data() + row * L.z.H, kb + int64_t{w.start} * K, w.count, K,
                            r);
        scale_scores(r, L.s, w.count, W, pr);
        row_weights(L.predictive, L.predictive ? sc.position[row] : 0.0f, w, W, L.sigma, pr, wt);
        if (dense) {  // row t of A_b
            float* a = dense_wt + t * L.ldd;
            std::fill(a, a + Sb, 0.0f);
            std::copy_n(wt, w.count, a + w.start);
        } else {
            row_context(wt, w.count, L.enc_out.data() + L.enc_row(b, w.start) * C, C,
                        contexts.data() + row * C);
        }
    }
    if (dense)  // C_b = A_b h_b  (S_b = 0: K = 0, the contexts are zeroed)
        gemm_raw(false, false, T, C, Sb, 1.0f, dense_wt, static_cast<int>(L.ldd),
                 L.enc_out.data() + L.enc_row(b, 0) * C, C, 0.0f, contexts.data() + b * C,
                 static_cast<int>(L.ldc));
}

// Step t's cache from the rows t·B .. t·B + B - 1 of the scratch.
void fill_cache(const LocalSteps& L, const ForwardStepsScratch& sc, int t, AttentionStepCache& c) {
    const int B = L.z.B;
    const int64_t r0 = int64_t{t} * B, r1 = r0 + B;
    const std::span<const int> start(sc.start), count(sc.count);
    store_step(sc.raw.select(t), sc.probs.select(t), sc.weights.select(t), start.subspan(r0, B),
               count.subspan(r0, B), c);
    c.position.resize({B}, false);
    c.position.copy_from(sc.position.slice(r0, r1));
    if (L.predictive) {
        c.pos_hidden.resize({B, sc.pos_hidden.dim(1)}, false);
        c.pos_hidden.copy_from(sc.pos_hidden.slice(r0, r1));
        c.pos_sigmoid.resize({B}, false);
        c.pos_sigmoid.copy_from(sc.pos_sigmoid.slice(r0, r1));
    }
}
}  // namespace

void forward_steps_local(const Attention& att, ForwardStepsScratch& sc, const StepsSizes& z,
                         ConstTensorView queries, const float* keys, ConstTensorView enc_out,
                         std::span<const int> lengths, TensorView contexts,
                         std::span<AttentionStepCache* const> caches) {
    const LocalSteps L(att, z, queries, enc_out, keys, lengths);
    sc.raw.resize({z.T, z.B, z.W}, false);
    sc.probs.resize({z.T, z.B, z.W}, false);
    sc.weights.resize({z.T, z.B, z.W}, false);
    sc.dense_raw.resize({z.T, z.B, L.Sd}, false);
    sc.dense_weights.resize({z.T, z.B, L.Sd}, false);
    all_windows(att, L, sc);
    parallel_for(z.B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) forward_sentence(L, sc, b, contexts);
    });
    for (int t = 0; t < z.T; ++t) fill_cache(L, sc, t, *caches[t]);
}

namespace {
// Dense sentence b: A_b from the caches' window weights, then
//   C_b = A_b h_b  =>  d_A_b = d_C_b h_bᵀ;  d_h_b += A_bᵀ d_C_b   (GEMMs)
void dense_context_backward(const LocalSteps& L, BackwardStepsScratch& sc, int64_t b,
                            std::span<const AttentionStepCache* const> caches,
                            ConstTensorView d_contexts, TensorView d_enc_out) {
    const int T = L.z.T, W = L.z.W, C = L.z.C, Sb = L.lengths[b];
    float* A = sc.dense_weights.data() + b * L.Sd;
    for (int t = 0; t < T; ++t) {
        const AttentionStepCache& cache = *caches[t];
        float* a = A + t * L.ldd;
        std::fill(a, a + Sb, 0.0f);
        std::copy_n(cache.weights.data() + b * W, cache.count[b], a + cache.start[b]);
    }
    const float* hb = L.enc_out.data() + L.enc_row(b, 0) * C;
    gemm_raw(false, true, T, Sb, C, 1.0f, d_contexts.data() + b * C, static_cast<int>(L.ldc), hb, C,
             0.0f, sc.dense_d_weights.data() + b * L.Sd, static_cast<int>(L.ldd));
    gemm_raw(true, false, Sb, C, T, 1.0f, A, static_cast<int>(L.ldd), d_contexts.data() + b * C,
             static_cast<int>(L.ldc), 1.0f, d_enc_out.data() + L.enc_row(b, 0) * C, C);
}

// The T rows of sentence b, backward, steps in the per-step order t = T−1 … 0 (the rows share
// the sentence's d_enc_out / d_keys rows). Dense: d_A_b from dense_context_backward, and the
// rows' d_r = s d_e into G_b (zero outside the windows) for two GEMMs:
//   e = s Q_b K_bᵀ  =>  d_Q_b += G_b K_b;  d_K_b += G_bᵀ Q_b
void backward_sentence(const LocalSteps& L, BackwardStepsScratch& sc, int64_t b,
                       std::span<const AttentionStepCache* const> caches,
                       ConstTensorView d_contexts, float* d_keys, TensorView d_queries,
                       TensorView d_enc_out) {
    const int T = L.z.T, B = L.z.B, W = L.z.W, C = L.z.C, K = L.z.K, H = L.z.H;
    const int Sb = L.lengths[b];
    const bool dense = dense_local(Sb, W) && Sb > 0;
    if (dense) dense_context_backward(L, sc, b, caches, d_contexts, d_enc_out);
    float* G = sc.dense_d_raw.data() + b * L.Sd;
    float dscale = 0.0f;
    for (int t = T - 1; t >= 0; --t) {
        const AttentionStepCache& cache = *caches[t];
        const int64_t row = int64_t{t} * B + b, first = L.enc_row(b, cache.start[b]);
        const Window w{cache.start[b], cache.count[b]};
        float* dw = sc.d_weights.data() + row * W;
        float* de = sc.d_scores.data() + row * W;
        if (dense)
            std::copy_n(sc.dense_d_weights.data() + b * L.Sd + t * L.ldd + w.start, w.count, dw);
        else
            row_context_backward(d_contexts.data() + row * C, cache.weights.data() + b * W, w.count,
                                 L.enc_out.data() + first * C, C, dw, d_enc_out.data() + first * C);
        const float p = L.predictive ? cache.position[b] : 0.0f;
        const float d_p =
            row_weights_backward(L.predictive, p, w, L.sigma, cache.probs.data() + b * W, dw,
                                 L.predictive ? sc.d_probs.data() + row * W : nullptr, de);
        if (L.predictive) sc.d_position[row] = d_p;
        if (L.learned) dscale += dot8(de, cache.scores.data() + b * W, w.count);
        if (dense) {  // row t of G_b
            float* g = G + t * L.ldd;
            std::fill(g, g + Sb, 0.0f);
            scale_scores_backward(de, L.s, w.count, g + w.start);
            continue;
        }
        bilinear_scores_backward(L.queries.data() + row * H, L.keys + first * K, de, w.count, K,
                                 L.s, d_queries.data() + row * H, d_keys + first * K);
    }
    sc.d_scale[b] = dscale;
    if (!dense) return;
    gemm_raw(false, false, T, K, Sb, 1.0f, G, static_cast<int>(L.ldd), L.keys + L.enc_row(b, 0) * K,
             K, 1.0f, d_queries.data() + b * H, static_cast<int>(L.ldq));
    gemm_raw(true, false, Sb, K, T, 1.0f, G, static_cast<int>(L.ldd), L.queries.data() + b * H,
             static_cast<int>(L.ldq), 1.0f, d_keys + L.enc_row(b, 0) * K, K);
}

// local-p's predictor over all T·B rows: d_query += d_pre W_p, grad.W_p += d_preᵀ Q (one GEMM
// each), from the d p_t of every row.
void predictor_backward(Attention& att, const LocalSteps& L, BackwardStepsScratch& sc,
                        std::span<const AttentionStepCache* const> caches, TensorView d_queries) {
    const int T = L.z.T, B = L.z.B, H = L.z.H, P = att.cfg.position_size;
    const int64_t M = int64_t{T} * B;
    sc.row_length.resize(M);
    for (int64_t r = 0; r < M; ++r) sc.row_length[r] = L.lengths[r % B];
    sc.pos_hidden.resize({M, P}, false);
    sc.pos_sigmoid.resize({M}, false);
    for (int t = 0; t < T; ++t) {
        sc.pos_hidden.slice(int64_t{t} * B, int64_t{t + 1} * B).copy_from(caches[t]->pos_hidden);
        sc.pos_sigmoid.slice(int64_t{t} * B, int64_t{t + 1} * B).copy_from(caches[t]->pos_sigmoid);
    }
    sc.d_pos_pre.resize({M, P}, false);
    predict_positions_backward(sc.d_position, L.queries.reshape({M, H}), att.params.W_p,
                               att.params.v_p, sc.row_length, sc.pos_hidden, sc.pos_sigmoid,
                               sc.d_pos_pre, d_queries.reshape({M, H}), att.grad.W_p, att.grad.v_p);
}
}  // namespace

void backward_steps_local(Attention& att, BackwardStepsScratch& sc, const StepsSizes& z,
                          ConstTensorView d_contexts, ConstTensorView queries, const float* keys,
                          float* d_keys, ConstTensorView enc_out, std::span<const int> lengths,
                          std::span<const AttentionStepCache* const> caches, TensorView d_queries,
                          TensorView d_enc_out) {
    const LocalSteps L(att, z, queries, enc_out, keys, lengths);
    const int64_t M = int64_t{z.T} * z.B;
    for (int t = 0; t < z.T; ++t) NZ_CHECK_SHAPE(caches[t]->weights, {z.B, z.W});
    sc.d_weights.resize({z.T, z.B, z.W}, false);
    sc.d_scores.resize({z.T, z.B, z.W}, false);
    if (L.predictive) {
        sc.d_probs.resize({z.T, z.B, z.W}, false);
        sc.d_position.resize({M}, true);
    }
    sc.dense_weights.resize({z.T, z.B, L.Sd}, false);
    sc.dense_d_weights.resize({z.T, z.B, L.Sd}, false);
    sc.dense_d_raw.resize({z.T, z.B, L.Sd}, false);
    sc.d_scale.resize({z.B}, true);
    parallel_for(z.B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
            backward_sentence(L, sc, b, caches, d_contexts, d_keys, d_queries, d_enc_out);
    });
    if (L.learned)
        for (int b = 0; b < z.B; ++b) att.grad.scale[0] += sc.d_scale[b];
    if (L.predictive) predictor_backward(att, L, sc, caches, d_queries);
}

}  // namespace nazar::attn
