// Monotonic attention's row equations (monotonic.h).
#include "nazar/attention/monotonic.h"

#include "nazar/core/check.h"

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

void start_previous(int B, int S, Tensor& prev) {
    prev.resize({B, S});  // zeroed
    for (int b = 0; b < B && S > 0; ++b) prev.data()[int64_t{b} * S] = 1.0f;
}

void advance_previous(const AttentionStepCache& step, Tensor& next) {
    next.resize(step.previous.shape(), false);  // (B, S): the step read α_{t−1} by position
    dense_weights(step, next);
}

}  // namespace nazar::attn
