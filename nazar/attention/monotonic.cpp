// Monotonic attention's row equations (monotonic.h).
#include "nazar/attention/monotonic.h"

#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/internal.h"
#include "nazar/core/check.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cmath>

namespace nazar::attn {

namespace {
float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}
}  // namespace

void monotonic_row(float* pr, float r, const float* noise, const float* prev, int n, float* alpha) {
    float q = 0.0f, keep = 0.0f;  // q_{j−1}, 1 − p_{j−1}
    for (int j = 0; j < n; ++j) {
        const float p = sigmoid(pr[j] + r + (noise ? noise[j] : 0.0f));
        q = keep * q + prev[j];  // q_j = (1 − p_{j−1}) q_{j−1} + α_{t−1,j}
        pr[j] = p;
        alpha[j] = p * q;
        keep = 1.0f - p;
    }
}

void hard_monotonic_row(float* pr, float r, const float* prev, int n, float* alpha) {
    int from = -1;
    float best = 0.0f;
    for (int j = 0; j < n; ++j)
        if (prev[j] > best) {
            best = prev[j];
            from = j;
        }
    std::fill(alpha, alpha + n, 0.0f);
    int stop = -1;
    for (int j = 0; j < n; ++j) {
        const float x = pr[j] + r;
        if (stop < 0 && from >= 0 && j >= from && x >= 0.0f) stop = j;
        pr[j] = sigmoid(x);
    }
    if (stop >= 0) alpha[stop] = 1.0f;
}

float monotonic_row_backward(const float* p, const float* prev, const float* d_alpha, int n,
                             float* q, float* d_e, float* d_prev) {
    for (int j = 0; j < n; ++j) q[j] = (j == 0 ? 0.0f : (1.0f - p[j - 1]) * q[j - 1]) + prev[j];
    float d_q_next = 0.0f, d_r = 0.0f;  // d q_{j+1}
    for (int j = n - 1; j >= 0; --j) {
        const float da = d_alpha[j];
        const float d_q = da * p[j] + (1.0f - p[j]) * d_q_next;
        const float d_p = q[j] * (da - d_q_next);
        const float de = d_p * p[j] * (1.0f - p[j]);
        if (d_prev) d_prev[j] += d_q;
        d_e[j] = de;
        d_r += de;
        d_q_next = d_q;
    }
    return d_r;
}

namespace {
// The softmax of u over window(k) = [lo, k]: s[j − lo] for j in it; returns lo.
int window_softmax(const float* u, int k, int w, float* s) {
    const int lo = std::max(0, k - w + 1);
    float mx = u[lo];
    for (int j = lo + 1; j <= k; ++j) mx = std::max(mx, u[j]);
    float sum = 0.0f;
    for (int j = lo; j <= k; ++j) sum += (s[j - lo] = std::exp(u[j] - mx));
    const float inv = 1.0f / sum;
    for (int j = lo; j <= k; ++j) s[j - lo] *= inv;
    return lo;
}
constexpr int kMaxStackChunk = 256;
}  // namespace

void mocha_row(const float* alpha, const float* u, int n, int w, float* beta) {
    NZ_CHECK(w >= 1 && w <= kMaxStackChunk, "MoChA: chunk {} outside [1, {}]", w, kMaxStackChunk);
    float s[kMaxStackChunk];
    std::fill(beta, beta + n, 0.0f);
    for (int k = 0; k < n; ++k) {
        if (alpha[k] == 0.0f) continue;  // hard decoding: one window; soft: nothing to spread
        const int lo = window_softmax(u, k, w, s);
        for (int j = lo; j <= k; ++j) beta[j] += alpha[k] * s[j - lo];
    }
}

void mocha_row_backward(const float* alpha, const float* u, const float* d_beta, int n, int w,
                        float* d_alpha, float* d_u) {
    NZ_CHECK(w >= 1 && w <= kMaxStackChunk, "MoChA: chunk {} outside [1, {}]", w, kMaxStackChunk);
    float s[kMaxStackChunk];
    std::fill(d_u, d_u + n, 0.0f);
    for (int k = 0; k < n; ++k) {
        const int lo = window_softmax(u, k, w, s);
        float G = 0.0f;  // G_k = Σ_j d β_j s_{k,j}
        for (int j = lo; j <= k; ++j) G += d_beta[j] * s[j - lo];
        d_alpha[k] = G;
        if (alpha[k] == 0.0f) continue;
        for (int j = lo; j <= k; ++j) d_u[j] += alpha[k] * s[j - lo] * (d_beta[j] - G);
    }
}

void prepare_monotonic_step(const Attention& att, AttentionStepCache& cache, int B, int W) {
    if (att.cfg.mocha_chunk == 0) {
        cache.alpha = Tensor(Shape{0});
        return;
    }
    cache.alpha.resize({B, W}, false);
    cache.chunk_scores.resize({B, W}, true);  // padding columns stay 0
}

void monotonic_step_row(const Attention& att, AttentionStepCache& cache, int64_t b, int n, int W,
                        int S, float* pr, float* wt) {
    const float r = att.params.r[0];
    const float* prev = cache.previous.data() + b * S;
    const bool mocha = att.cfg.mocha_chunk > 0;
    float* alpha = mocha ? cache.alpha.data() + b * W : wt;
    if (cache.hard)
        hard_monotonic_row(pr, r, prev, n, alpha);
    else
        monotonic_row(pr, r, cache.noise.numel() > 0 ? cache.noise.data() + b * S : nullptr, prev,
                      n, alpha);
    std::fill(pr + n, pr + W, 0.0f);
    std::fill(alpha + n, alpha + W, 0.0f);
    if (!mocha) return;
    mocha_row(alpha, cache.chunk_scores.data() + b * W, n, att.cfg.mocha_chunk, wt);
    std::fill(wt + n, wt + W, 0.0f);
}

void monotonic_step_row_backward(const Attention& att, StepScratch& sc,
                                 const AttentionStepCache& cache, int64_t b, int64_t first, int n,
                                 int W, const float* kb, float* dkb) {
    const AttentionExtraGrad* x = att.extra;
    float* d_prev =
        x != nullptr && x->d_previous.numel() > 0 ? x->d_previous.data() + first : nullptr;
    const float* d_alpha = sc.d_weights.data() + b * W;
    if (att.cfg.mocha_chunk > 0) {  // β = chunkwise(α, u): d β => d α, d u
        const int A = att.cfg.attention_size;
        float* du = sc.d_chunk.data() + b * W;
        mocha_row_backward(cache.alpha.data() + b * W, cache.chunk_scores.data() + b * W, d_alpha,
                           n, att.cfg.mocha_chunk, sc.d_alpha.data() + b * W, du);
        float* da = sc.d_alpha.data() + b * W;
        if (x != nullptr && x->d_alpha.numel() > 0) {  // the next step's d α_t
            const float* carried = x->d_alpha.data() + first;
            for (int j = 0; j < n; ++j) da[j] += carried[j];
        }
        d_alpha = da;
        // u_j = v_c · tanh(W_q q + k_j)
        additive_scores_backward(cache.query_proj.data() + b * A, kb, att.params.v_c.data(), du, n,
                                 A, sc.tanh_rows.data() + b * A, sc.d_query_proj.data() + b * A,
                                 dkb, sc.d_v_c.data() + b * A);
    }
    sc.d_bias[b] =
        monotonic_row_backward(cache.probs.data() + b * W, cache.previous.data() + first, d_alpha,
                               n, sc.reach.data() + b * W, sc.d_scores.data() + b * W, d_prev);
}

void monotonic_step_grads(Attention& att, const StepScratch& sc, int B) {
    for (int b = 0; b < B; ++b) att.grad.r[0] += sc.d_bias[b];
    if (att.cfg.mocha_chunk > 0) kernels::sum_rows_into(sc.d_v_c, att.grad.v_c);
}

void start_previous(int B, int S, Tensor& prev) {
    prev.resize({B, S});  // zeroed
    for (int b = 0; b < B && S > 0; ++b) prev.data()[int64_t{b} * S] = 1.0f;
}

void advance_previous(const AttentionStepCache& step, Tensor& next) {
    next.resize(step.previous.shape(), false);  // (B, S): the step read α_{t−1} by position
    if (step.alpha.numel() == 0) return dense_weights(step, next);
    // MoChA: α, global (W = S, windows from 0), so the rows are the positions
    NZ_CHECK(step.alpha.shape() == next.shape(), "MoChA: α {} for α_{{t−1}} {}",
             step.alpha.shape().str(), next.shape().str());
    next.copy_from(step.alpha);
}

}  // namespace nazar::attn
