// The equations of one attention row (see row_equations.h).
#include "nazar/attention/row_equations.h"

#include "nazar/attention/vec.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nazar::attn {

namespace {
// g = exp(-(i - p)² / 2σ²) for d = i - p, inv_var = 1/σ²
inline float gaussian_at(float d, float inv_var) {
    return std::exp(-0.5f * d * d * inv_var);
}
}  // namespace

void check_lengths(std::span<const int> lengths, int B, int S) {
    NZ_CHECK(static_cast<int>(lengths.size()) == B, "attention: {} lengths for a batch of {}",
             lengths.size(), B);
    for (int b = 0; b < B; ++b)
        NZ_CHECK(0 <= lengths[b] && lengths[b] <= S,
                 "attention: length {} of sentence {} outside [0, S={}]", lengths[b], b, S);
}

Window row_window(LocalMode mode, int t, int S_b, int D, float& p_t) {
    switch (mode) {
        case LocalMode::monotonic:
            return monotonic_window(t, S_b, D, p_t);
        case LocalMode::predictive:
            return predictive_window(p_t, S_b, D);
        case LocalMode::global:
            break;
    }
    return {0, S_b};
}

float gaussian_sigma(int D) {
    return 0.5f * static_cast<float>(D);
}

void scale_scores(float* r, float s, int n, int W, float* e) {
    std::fill(r + n, r + W, 0.0f);
    for (int j = 0; j < n; ++j) e[j] = s * r[j];
}

void masked_softmax(float* e, int n, int W) {
    kernels::softmax_row(e, n, e);
    std::fill(e + n, e + W, 0.0f);
}

void row_weights(bool gaussian, float p, Window w, int W, float sigma, float* pr, float* wt) {
    const int n = w.count;
    masked_softmax(pr, n, W);
    if (!gaussian) {
        std::copy(pr, pr + W, wt);
        return;
    }
    const float inv_var = 1.0f / (sigma * sigma);
    for (int j = 0; j < n; ++j)
        wt[j] = gaussian_at(static_cast<float>(w.start + j) - p, inv_var) * pr[j];
    std::fill(wt + n, wt + W, 0.0f);
}

namespace {
// c[0, W) = Σ_j wt[j] h_j[0, W) (rows of stride C), each element accumulated from 0 in j order
// with one multiply-add per term, as a run of axpys does; the W sums stay in registers.
template <int W>
inline void context_block(const float* wt, int n, const float* h, int C, float* c) {
    float acc[W] = {};
    for (int j = 0; j < n; ++j) {
        const float w = wt[j];
        const float* x = h + int64_t{j} * C;
#pragma GCC unroll 64
        for (int i = 0; i < W; ++i) acc[i] += w * x[i];
    }
    std::copy(acc, acc + W, c);
}
}  // namespace

void row_context(const float* wt, int n, const float* h, int C, float* c) {
    // No rows (an empty window): h may be null, and no offset may be applied to it.
    if (n == 0) {
        std::fill(c, c + C, 0.0f);
        return;
    }
    int i = 0;
    for (; i + 64 <= C; i += 64) context_block<64>(wt, n, h + i, C, c + i);
    for (; i + 8 <= C; i += 8) context_block<8>(wt, n, h + i, C, c + i);
    std::fill(c + i, c + C, 0.0f);
    for (int j = 0; j < n; ++j) kernels::axpy(C - i, wt[j], h + int64_t{j} * C + i, c + i);
}

void row_context_backward(const float* d_c, const float* wt, int n, const float* h, int C,
                          float* d_alpha, float* d_h) {
    for (int j = 0; j < n; ++j) {
        d_alpha[j] = dot8(d_c, h + int64_t{j} * C, C);
        kernels::axpy(C, wt[j], d_c, d_h + int64_t{j} * C);
    }
}

float row_weights_backward(bool gaussian, float p, Window w, float sigma, const float* pr,
                           const float* d_alpha, float* d_pr, float* d_e) {
    const int n = w.count;
    float d_p = 0.0f;
    if (gaussian) {
        const float inv_var = 1.0f / (sigma * sigma);
        for (int j = 0; j < n; ++j) {
            const float d = static_cast<float>(w.start + j) - p;
            const float g = gaussian_at(d, inv_var);
            d_p += d_alpha[j] * pr[j] * g * d * inv_var;
            d_pr[j] = d_alpha[j] * g;
        }
        d_alpha = d_pr;
    }
    const float sum = dot8(pr, d_alpha, n);
    for (int j = 0; j < n; ++j) d_e[j] = pr[j] * (d_alpha[j] - sum);
    return d_p;
}

void scale_scores_backward(const float* d_e, float s, int n, float* d_r) {
    for (int j = 0; j < n; ++j) d_r[j] = s * d_e[j];
}

}  // namespace nazar::attn
