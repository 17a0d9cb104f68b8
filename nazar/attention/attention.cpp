// Attention: precompute keys once per batch; per step score the window, softmax, context.
// Math of every block is written above it; the score kernels live in additive_kernels.cpp /
// luong.cpp, the window and position predictor in local.cpp, and the equations of one row (softmax,
// local-p Gaussian, context, their backward) in row_equations.cpp, shared with the all-steps
// path (all_steps.cpp, local_all_steps.cpp).
#include "nazar/attention/attention.h"

#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/coverage.h"
#include "nazar/attention/internal.h"
#include "nazar/attention/local.h"
#include "nazar/attention/luong.h"
#include "nazar/attention/monotonic.h"
#include "nazar/attention/row_equations.h"
#include "nazar/attention/vec.h"
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>

namespace nazar {

namespace {
bool is_additive(ScoreKind k) {
    return k == ScoreKind::additive || k == ScoreKind::concat;
}

void init_linear(Tensor& w, Rng& rng) {  // PyTorch nn.Linear: U(-1/sqrt(in), 1/sqrt(in))
    const float bound = 1.0f / std::sqrt(static_cast<float>(w.dim(1)));
    rng.fill_uniform(w, -bound, bound);
}

}  // namespace

Attention::Attention(AttentionConfig c, Rng& rng, ParamMode mode) : cfg(c) {
    validate(cfg);
    const int H = cfg.query_size, C = cfg.context_size, A = cfg.attention_size;
    if (cfg.local == LocalMode::predictive && cfg.position_size == 0) cfg.position_size = H;
    const int P = cfg.position_size;
    // absent parameters are (0)-shaped: a default Tensor has the scalar shape (numel 1)
    params.visit([](const std::string&, Tensor& t) { t = Tensor(Shape{0}); });
    if (is_additive(cfg.score)) {
        params.W_q = make_param({A, H}, mode);
        params.W_k = make_param({A, C}, mode);
        params.v_a = make_param({1, A}, mode);
    } else if (cfg.score == ScoreKind::general) {
        params.W_k = make_param({H, C}, mode);
    }
    if (cfg.scale == ScaleMode::learned) params.scale = make_param({1}, mode);
    if (cfg.local == LocalMode::predictive) {
        params.W_p = make_param({P, H}, mode);
        params.v_p = make_param({1, P}, mode);
    }
    // w_c starts at 0 (no draw below): a coverage model starts as the plain one of the same seed
    if (cfg.coverage) params.w_c = make_param({1, A}, mode);
    if (cfg.monotonic) params.r = make_param({1}, mode);
    if (cfg.mocha_chunk > 0) params.v_c = make_param({1, A}, mode);
    if (mode == ParamMode::inference) {  // values from the model file; no gradients
        grad.visit([](const std::string&, Tensor& t) { t = Tensor(Shape{0}); });
        return;
    }
    if (cfg.scale == ScaleMode::learned) params.scale[0] = 1.0f / std::sqrt(float(C));
    if (cfg.monotonic) params.r[0] = cfg.monotonic_bias_init;
    params.visit([&](const std::string& name, Tensor& t) {
        if (t.numel() > 0 && name != "scale" && name != "coverage.weight" &&
            name != "monotonic_bias")
            init_linear(t, rng);
    });
    grad = params;
    grad.visit([](const std::string&, Tensor& t) { t.zero(); });
}

int Attention::window_width(int S) const {
    return cfg.local == LocalMode::global ? S : 2 * cfg.window + 1;
}

float Attention::score_scale() const {
    switch (cfg.scale) {
        case ScaleMode::none:
            return 1.0f;
        case ScaleMode::inv_sqrt:
            return 1.0f / std::sqrt(static_cast<float>(cfg.context_size));
        case ScaleMode::learned:
            return params.scale[0];
    }
    return 1.0f;
}

void Attention::prepare_steps(AttentionKeys& out, int step_rows) const {
    if (is_additive(cfg.score) && step_rows > kSmallGemmRows)
        refresh_weight_t(out.query_t, params.W_q);
    else
        out.query_t.reset();
}

// keys = enc_out W_kᵀ: one GEMM over all B·S positions
void Attention::precompute(ConstTensorView enc_out, AttentionKeys& out, int step_rows) const {
    NZ_CHECK(enc_out.ndim() == 3 && enc_out.dim(2) == cfg.context_size,
             "attention: enc_out must be (B, S, C={}), got {}", cfg.context_size,
             enc_out.shape().str());
    prepare_steps(out, step_rows);
    if (cfg.score == ScoreKind::dot) {
        out.keys = Tensor(Shape{0});
        return;
    }
    const int B = enc_out.dim(0), S = enc_out.dim(1), K = params.W_k.dim(0);
    out.keys.resize({B, S, K}, false);
    gemm(enc_out.as_matrix(), false, params.W_k, true, out.keys.reshape({int64_t(B) * S, K}));
}

// keys = enc_out W_kᵀ  =>  d_enc_out += d_keys W_k;  grad.W_k += d_keysᵀ enc_out
void Attention::precompute_backward(ConstTensorView enc_out, ConstTensorView d_keys,
                                    TensorView d_enc_out) {
    if (cfg.score == ScoreKind::dot) return;
    const int B = enc_out.dim(0), S = enc_out.dim(1), C = cfg.context_size, K = params.W_k.dim(0);
    NZ_CHECK_SHAPE(enc_out, {B, S, C});
    NZ_CHECK_SHAPE(d_keys, {B, S, K});
    NZ_CHECK_SHAPE(d_enc_out, {B, S, C});
    const ConstTensorView dk = d_keys.as_matrix(), x = enc_out.as_matrix();
    gemm(dk, false, params.W_k, false, d_enc_out.as_matrix(), 1.0f, 1.0f);
    gemm(dk, true, x, false, grad.W_k, 1.0f, 1.0f);
}

Attention::ScratchPtr::ScratchPtr() : p_(std::make_unique<attn::Scratch>()) {}
Attention::ScratchPtr::ScratchPtr(const ScratchPtr&) : ScratchPtr() {}
Attention::ScratchPtr& Attention::ScratchPtr::operator=(const ScratchPtr&) {
    return *this;  // temporaries: each object keeps its own
}
Attention::ScratchPtr::~ScratchPtr() = default;

namespace {
// The windows of one step (and local-p's predictor, which places them): start, count, p_t.
void step_windows(const Attention& att, ConstTensorView query, std::span<const int> lengths, int t,
                  AttentionStepCache& cache) {
    const AttentionConfig& cfg = att.cfg;
    const int B = query.dim(0);
    cache.start.assign(B, 0);
    cache.count.assign(B, 0);
    float unused = 0.0f;
    if (cfg.local != LocalMode::global) cache.position.resize({B}, false);
    if (cfg.local == LocalMode::predictive) {
        cache.pos_hidden.resize({B, cfg.position_size}, false);
        cache.pos_sigmoid.resize({B}, false);
        attn::predict_positions(query, att.params.W_p, att.params.v_p, lengths, cache.pos_hidden,
                                cache.pos_sigmoid, cache.position);
    }
    cache.score_evals = 0;
    for (int b = 0; b < B; ++b) {
        float& p = cfg.local == LocalMode::global ? unused : cache.position[b];
        const attn::Window w = attn::row_window(cfg.local, t, lengths[b], cfg.window, p);
        cache.start[b] = w.start;
        cache.count[b] = w.count;
        cache.score_evals += w.count;
    }
}

// The step's query-side parameters, after the rows: W_q and v_a (additive/concat), the learned
// scale, the local-p predictor.
void query_side_backward(Attention& att, attn::StepScratch& sc, ConstTensorView query,
                         std::span<const int> lengths, const AttentionStepCache& cache,
                         TensorView d_query, const AttentionQueryGrad* deferred) {
    const AttentionConfig& cfg = att.cfg;
    const AttentionParams& params = att.params;
    AttentionParams& grad = att.grad;
    const int B = query.dim(0);
    if (is_additive(cfg.score)) {
        // u = q W_qᵀ  =>  d_q += d_u W_q;  grad.W_q += d_uᵀ q;  grad.v_a += Σ_b d_v[b]
        gemm(sc.d_query_proj, false, params.W_q, false, d_query, 1.0f, 1.0f);
        if (deferred) {
            NZ_CHECK_SHAPE(deferred->d_u, {B, cfg.attention_size});
            deferred->d_u.copy_from(sc.d_query_proj);
        } else {
            gemm(sc.d_query_proj, true, query, false, grad.W_q, 1.0f, 1.0f);
        }
        kernels::sum_rows_into(sc.d_v, grad.v_a);
    }
    if (cfg.scale == ScaleMode::learned)
        for (int b = 0; b < B; ++b) grad.scale[0] += sc.d_scale[b];
    if (cfg.local == LocalMode::predictive) {
        sc.d_pos_pre.resize({B, cfg.position_size}, false);
        attn::predict_positions_backward(sc.d_position, query, params.W_p, params.v_p, lengths,
                                         cache.pos_hidden, cache.pos_sigmoid, sc.d_pos_pre, d_query,
                                         deferred ? TensorView() : grad.W_p.view(), grad.v_p);
        if (deferred) {
            NZ_CHECK_SHAPE(deferred->d_pre, {B, cfg.position_size});
            deferred->d_pre.copy_from(sc.d_pos_pre);
        }
    }
}
// keys (R, S, K) with R >= rows: the first `rows` sentences are read (a training step's active
// rows are a prefix of the batch's; Attention::forward).
void check_key_rows(const AttentionKeys& keys, int rows, int S, int K) {
    const Tensor& k = keys.keys;
    NZ_CHECK(k.ndim() == 3 && k.dim(0) >= rows && k.dim(1) == S && k.dim(2) == K,
             "attention: keys {} for {} rows of (S, K) = ({}, {})", k.shape().str(), rows, S, K);
}
// Sizes backward()'s scratch for B rows and checks the optional inputs' shapes.
void prepare_backward(const Attention& att, attn::StepScratch& sc, const AttentionStepCache& cache,
                      int B, int S) {
    const AttentionConfig& cfg = att.cfg;
    const int A = cfg.attention_size, W = att.window_width(S);
    sc.d_weights.resize({B, W}, false);
    sc.d_scores.resize({B, W}, false);
    if (cfg.local == LocalMode::predictive) sc.d_probs.resize({B, W}, false);
    if (is_additive(cfg.score)) {
        sc.tanh_rows.resize({B, A}, false);
        sc.d_query_proj.resize({B, A}, true);
        sc.d_v.resize({B, A}, true);
    }
    sc.d_scale.resize({B}, true);
    sc.d_position.resize({B}, true);
    const AttentionExtraGrad* x = att.extra;
    if (cfg.monotonic) {
        NZ_CHECK(!cache.hard, "attention: hard monotonic decoding has no backward");
        NZ_CHECK_SHAPE(cache.previous, {B, S});
        if (x != nullptr && x->d_previous.numel() > 0) NZ_CHECK_SHAPE(x->d_previous, {B, S});
        if (x != nullptr && x->d_alpha.numel() > 0) NZ_CHECK_SHAPE(x->d_alpha, {B, S});
        sc.d_bias.resize({B}, true);
        sc.reach.resize({B, W}, false);
    }
    if (cfg.mocha_chunk > 0) {
        NZ_CHECK_SHAPE(cache.alpha, {B, W});
        NZ_CHECK_SHAPE(cache.chunk_scores, {B, W});
        sc.d_alpha.resize({B, W}, false);
        sc.d_chunk.resize({B, W}, false);
        sc.d_v_c.resize({B, A}, true);
    }
    if (cache.drop_mask.numel() > 0) {
        NZ_CHECK_SHAPE(cache.drop_mask, {B, S});
        NZ_CHECK_SHAPE(cache.dropped, {B, W});
    }
    if (x != nullptr && x->d_weights.numel() > 0) NZ_CHECK_SHAPE(x->d_weights, {B, S});
    if (cfg.coverage) {
        NZ_CHECK_SHAPE(cache.coverage, {B, S});
        if (x != nullptr && x->d_coverage.numel() > 0) NZ_CHECK_SHAPE(x->d_coverage, {B, S});
        sc.cov_u.resize({B, A}, false);
        sc.cov_d_pre.resize({B, A}, false);
        sc.d_w_c.resize({B, A}, true);
    }
}

// The score half of one row's backward, d e (in sc.d_scores) into the query side, the keys
// and the score's parameters: additive (with coverage: also d w_c and d cov) or dot/general.
void score_row_backward(Attention& att, attn::StepScratch& sc, ConstTensorView query,
                        const AttentionStepCache& cache, int b, int64_t first, const float* kb,
                        float* dkb, TensorView d_query) {
    const AttentionConfig& cfg = att.cfg;
    const AttentionParams& params = att.params;
    const int A = cfg.attention_size, H = cfg.query_size, W = cache.weights.dim(1);
    const int n = cache.count[b];
    const float* de = sc.d_scores.data() + int64_t{b} * W;
    if (cfg.coverage) {
        const AttentionExtraGrad* x = att.extra;
        float* d_cov =
            x != nullptr && x->d_coverage.numel() > 0 ? x->d_coverage.data() + first : nullptr;
        attn::coverage_scores_backward(
            cache.query_proj.data() + int64_t{b} * A, kb, params.v_a.data(), params.w_c.data(),
            cache.coverage.data() + first, de, n, A, sc.cov_u.data() + int64_t{b} * A,
            sc.tanh_rows.data() + int64_t{b} * A, sc.cov_d_pre.data() + int64_t{b} * A,
            sc.d_query_proj.data() + int64_t{b} * A, dkb, sc.d_v.data() + int64_t{b} * A,
            sc.d_w_c.data() + int64_t{b} * A, d_cov);
    } else if (is_additive(cfg.score)) {
        attn::additive_scores_backward(
            cache.query_proj.data() + int64_t{b} * A, kb, params.v_a.data(), de, n, A,
            sc.tanh_rows.data() + int64_t{b} * A, sc.d_query_proj.data() + int64_t{b} * A, dkb,
            sc.d_v.data() + int64_t{b} * A);
    } else {
        const int K = cfg.score == ScoreKind::dot ? cfg.context_size : H;
        // e = s r  =>  d_s += Σ_j d_e_j r_j;  r = q · k  (luong.h)
        if (cfg.scale == ScaleMode::learned)
            sc.d_scale[b] = attn::dot8(de, cache.scores.data() + int64_t{b} * W, n);
        attn::bilinear_scores_backward(query.data() + int64_t{b} * H, kb, de, n, K,
                                       att.score_scale(), d_query.data() + int64_t{b} * H, dkb);
    }
}
// forward's optional inputs by source position (B, S): the dropout mask, cov_t, and monotonic
// attention's α_{t−1} and noise.
void check_step_inputs(const Attention& att, const AttentionStepCache& cache, int B, int S) {
    if (cache.drop_mask.numel() > 0) NZ_CHECK_SHAPE(cache.drop_mask, {B, S});
    if (att.cfg.coverage) NZ_CHECK_SHAPE(cache.coverage, {B, S});
    if (att.cfg.monotonic) {
        NZ_CHECK_SHAPE(cache.previous, {B, S});
        if (cache.noise.numel() > 0) NZ_CHECK_SHAPE(cache.noise, {B, S});
    }
}

}  // namespace

void Attention::forward(ConstTensorView query, const AttentionKeys& keys, ConstTensorView enc_out,
                        std::span<const int> lengths, int t, TensorView context,
                        AttentionStepCache& cache, std::span<const int> src_rows) const {
    const int B = query.dim(0), S = enc_out.dim(1), H = cfg.query_size, C = cfg.context_size;
    const int A = cfg.attention_size, W = window_width(S);
    NZ_CHECK_SHAPE(query, {B, H});
    const int NS = src_rows.empty() ? B : enc_out.dim(0);  // rows of enc_out and keys
    NZ_CHECK_SHAPE(enc_out, {NS, S, C});
    NZ_CHECK(src_rows.empty() || static_cast<int>(src_rows.size()) == B,
             "attention: {} source rows for {} query rows", src_rows.size(), B);
    for (const int r : src_rows)
        NZ_CHECK(r >= 0 && r < NS, "attention: source row {} outside [0, {})", r, NS);
    NZ_CHECK_SHAPE(context, {B, C});
    attn::check_lengths(lengths, B, S);
    const bool additive = is_additive(cfg.score), predictive = cfg.local == LocalMode::predictive;
    const int K = cfg.score == ScoreKind::dot ? C : (additive ? A : H);
    if (cfg.score != ScoreKind::dot) check_key_rows(keys, NS, S, K);
    const float* kdata = cfg.score == ScoreKind::dot ? enc_out.data() : keys.keys.data();

    cache.weights.resize({B, W}, false);
    cache.probs.resize({B, W}, false);
    // additive: u = q W_qᵀ, the only per-step GEMM of the score
    if (additive) {
        cache.query_proj.resize({B, A}, false);
        gemm_xwt(B, A, H, 1.0f, query.data(), H, params.W_q.data(), H, weight_t_rows(keys.query_t),
                 0.0f, cache.query_proj.data(), A);
    } else {
        cache.scores.resize({B, W}, false);
    }
    step_windows(*this, query, lengths, t, cache);
    const bool drop = cache.drop_mask.numel() > 0, coverage = cfg.coverage;
    check_step_inputs(*this, cache, B, S);
    if (drop) cache.dropped.resize({B, W}, false);
    const bool mocha = cfg.mocha_chunk > 0;
    if (cfg.monotonic) attn::prepare_monotonic_step(*this, cache, B, W);

    // forward is const and takes no scratch of the Attention's: a model shared by decoding
    // threads (models/decode_session.h) runs it from all of them at once. The fused additive
    // kernels' per-row temporaries (tanh row, coverage's u + cov_j w_c) live per chunk of rows.
    const float s = score_scale(), sigma = attn::gaussian_sigma(cfg.window);
    const int64_t tmp_floats = additive ? (coverage ? 2 : 1) * int64_t{A} : 0;
    parallel_for(B, 4, [&](int64_t b0, int64_t b1) {
        attn::RowTemp temp(tmp_floats);
        float* const tanh_row = temp.data();
        float* const cov_u = temp.data() + A;
        for (int64_t b = b0; b < b1; ++b) {
            const attn::Window w{cache.start[b], cache.count[b]};
            float* pr = cache.probs.data() + b * W;
            const int64_t sb = src_rows.empty() ? b : src_rows[b];  // row of keys, enc_out
            const float* kb = kdata + (sb * S + w.start) * K;
            // e_j = v_a · tanh(u + k_j)   or   e_j = s q · k_j
            if (coverage) {  // e_j = v_a · tanh(u + k_j + w_c cov_j)
                attn::coverage_scores(cache.query_proj.data() + b * A, kb, params.v_a.data(),
                                      params.w_c.data(), cache.coverage.data() + b * S + w.start,
                                      w.count, A, cov_u, tanh_row, pr);
            } else if (additive && mocha) {  // and u_j = v_c · tanh(u + k_j): one hidden layer
                attn::additive_scores2(cache.query_proj.data() + b * A, kb, params.v_a.data(),
                                       params.v_c.data(), w.count, A, tanh_row, pr,
                                       cache.chunk_scores.data() + b * W);
            } else if (additive) {
                attn::additive_scores(cache.query_proj.data() + b * A, kb, params.v_a.data(),
                                      w.count, A, tanh_row, pr);
            } else {
                float* r = cache.scores.data() + b * W;
                attn::bilinear_scores(query.data() + b * H, kb, w.count, K, r);
                attn::scale_scores(r, s, w.count, W, pr);
            }
            float* wt = cache.weights.data() + b * W;
            if (cfg.monotonic)
                attn::monotonic_step_row(*this, cache, b, w.count, W, S, pr, wt);
            else
                attn::row_weights(predictive, predictive ? cache.position[b] : 0.0f, w, W, sigma,
                                  pr, wt);
            if (drop) {  // α̃_j = α_j m_{start + j}: the context sums α̃ (not renormalised)
                float* dr = cache.dropped.data() + b * W;
                const float* m = cache.drop_mask.data() + b * S + w.start;
                for (int j = 0; j < W; ++j) dr[j] = j < w.count ? wt[j] * m[j] : 0.0f;
                wt = dr;
            }
            attn::row_context(wt, w.count, enc_out.data() + (sb * S + w.start) * C, C,
                              context.data() + b * C);
        }
    });
}

void Attention::backward(ConstTensorView d_context, ConstTensorView query,
                         const AttentionKeys& keys, ConstTensorView enc_out,
                         std::span<const int> lengths, const AttentionStepCache& cache,
                         TensorView d_query, TensorView d_keys, TensorView d_enc_out,
                         const AttentionQueryGrad* deferred) {
    const int B = query.dim(0), S = enc_out.dim(1), H = cfg.query_size, C = cfg.context_size;
    const int A = cfg.attention_size, W = window_width(S);
    NZ_CHECK_SHAPE(d_context, {B, C});
    NZ_CHECK_SHAPE(query, {B, H});
    NZ_CHECK_SHAPE(enc_out, {B, S, C});
    NZ_CHECK_SHAPE(d_query, {B, H});
    NZ_CHECK_SHAPE(d_enc_out, {B, S, C});
    NZ_CHECK_SHAPE(cache.weights, {B, W});
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}",
             lengths.size(), B);
    const bool additive = is_additive(cfg.score), dotk = cfg.score == ScoreKind::dot;
    const bool predictive = cfg.local == LocalMode::predictive;
    const int K = dotk ? C : (additive ? A : H);
    if (!dotk) {
        check_key_rows(keys, B, S, K);
        NZ_CHECK_SHAPE(d_keys, {B, S, K});
    }
    const float* kdata = dotk ? enc_out.data() : keys.keys.data();
    float* dkdata = dotk ? d_enc_out.data() : d_keys.data();

    attn::StepScratch& sc = scratch_->step;
    prepare_backward(*this, sc, cache, B, S);
    const float sigma = attn::gaussian_sigma(cfg.window);
    const bool drop = cache.drop_mask.numel() > 0;
    const bool extra_w = extra != nullptr && extra->d_weights.numel() > 0;
    const bool extra_c = extra != nullptr && extra->d_context.numel() > 0;
    if (extra_c) {
        NZ_CHECK_SHAPE(extra->d_context, {B, C});
        sc.d_context.resize({B, C}, false);
    }

    parallel_for(B, 4, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const attn::Window w{cache.start[b], cache.count[b]};
            const int64_t first = b * S + w.start;  // the window's first source row
            float* dw = sc.d_weights.data() + b * W;
            float* de = sc.d_scores.data() + b * W;
            // c = Σ α̃_j h_j (α̃ = α ⊙ m with dropout)  =>  d_α̃_j = d_c · h_j; d_α_j = d_α̃_j m_j
            const float* wt = (drop ? cache.dropped : cache.weights).data() + b * W;
            const float* d_c = d_context.data() + b * C;
            if (extra_c) {  // the extra terms' d c_t (copy gate) joins the decoder's
                float* sum = sc.d_context.data() + b * C;
                const float* x = extra->d_context.data() + b * C;
                for (int k = 0; k < C; ++k) sum[k] = d_c[k] + x[k];
                d_c = sum;
            }
            attn::row_context_backward(d_c, wt, w.count, enc_out.data() + first * C, C, dw,
                                       d_enc_out.data() + first * C);
            if (drop) {
                const float* m = cache.drop_mask.data() + first;
                for (int j = 0; j < w.count; ++j) dw[j] *= m[j];
            }
            if (extra_w) {  // d α += the extra terms (by source position)
                const float* x = extra->d_weights.data() + first;
                for (int j = 0; j < w.count; ++j) dw[j] += x[j];
            }
            const float p = predictive ? cache.position[b] : 0.0f;
            if (cfg.monotonic) {  // d α (MoChA: d β) => d e, d r, d α_{t−1} (and d u, d v_c)
                attn::monotonic_step_row_backward(*this, sc, cache, b, first, w.count, W,
                                                  kdata + first * K, dkdata + first * K);
            } else {
                const float d_p = attn::row_weights_backward(
                    predictive, p, w, sigma, cache.probs.data() + b * W, dw,
                    predictive ? sc.d_probs.data() + b * W : nullptr, de);
                if (predictive) sc.d_position[b] = d_p;
            }
            score_row_backward(*this, sc, query, cache, static_cast<int>(b), first,
                               kdata + first * K, dkdata + first * K, d_query);
        }
    });
    if (cfg.coverage) kernels::sum_rows_into(sc.d_w_c, grad.w_c);
    if (cfg.monotonic) attn::monotonic_step_grads(*this, sc, B);
    query_side_backward(*this, sc, query, lengths, cache, d_query, deferred);
}

bool Attention::has_query_weights() const {
    return is_additive(cfg.score) || cfg.local == LocalMode::predictive;
}

void Attention::query_weights_backward(ConstTensorView d_u, ConstTensorView d_pre,
                                       ConstTensorView query) {
    const int M = query.dim(0);
    NZ_CHECK_SHAPE(query, {M, cfg.query_size});
    // u = q W_qᵀ  =>  grad.W_q += d_uᵀ q
    if (is_additive(cfg.score)) {
        NZ_CHECK_SHAPE(d_u, {M, cfg.attention_size});
        gemm(d_u, true, query, false, grad.W_q, 1.0f, 1.0f);
    }
    // pre = q W_pᵀ  =>  grad.W_p += d_preᵀ q
    if (cfg.local == LocalMode::predictive) {
        NZ_CHECK_SHAPE(d_pre, {M, cfg.position_size});
        gemm(d_pre, true, query, false, grad.W_p, 1.0f, 1.0f);
    }
}

void dense_weights(const AttentionStepCache& cache, TensorView out) {
    attn::scatter_window(cache.weights, cache.start, out);
}

}  // namespace nazar
