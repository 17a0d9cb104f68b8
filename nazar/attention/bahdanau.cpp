// Fused additive score kernel (see bahdanau.h for the math).
#include "nazar/attention/bahdanau.h"

#include "nazar/core/kernels.h"

#include <cmath>

namespace nazar::attn {

void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* tmp, float* e) {
    for (int j = 0; j < n; ++j) {
        const float* k = keys + static_cast<int64_t>(j) * A;
        for (int a = 0; a < A; ++a) tmp[a] = u[a] + k[a];
        kernels::tanh(tmp, tmp, A);
        float s = 0;
        for (int a = 0; a < A; ++a) s += v[a] * tmp[a];
        e[j] = s;
    }
}

// z = tanh(u + k_j);  d_v += d_e_j z;  d_pre = d_e_j v ⊙ (1 - z²);  d_u += d_pre;  d_k_j += d_pre
void additive_scores_backward(const float* u, const float* keys, const float* v, const float* d_e, int n, int A,
                              float* tmp, float* d_u, float* d_keys, float* d_v) {
    for (int j = 0; j < n; ++j) {
        const float g = d_e[j];
        if (g == 0.0f) continue;
        const float* k = keys + static_cast<int64_t>(j) * A;
        float* dk = d_keys + static_cast<int64_t>(j) * A;
        for (int a = 0; a < A; ++a) tmp[a] = u[a] + k[a];
        kernels::tanh(tmp, tmp, A);
        for (int a = 0; a < A; ++a) {
            const float z = tmp[a];
            const float d_pre = g * v[a] * (1.0f - z * z);
            d_v[a] += g * z;
            d_u[a] += d_pre;
            dk[a] += d_pre;
        }
    }
}

namespace naive {
void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* e) {
    for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int a = 0; a < A; ++a) s += static_cast<double>(v[a]) * std::tanh(static_cast<double>(u[a]) + keys[static_cast<int64_t>(j) * A + a]);
        e[j] = static_cast<float>(s);
    }
}
}  // namespace naive

}  // namespace nazar::attn
