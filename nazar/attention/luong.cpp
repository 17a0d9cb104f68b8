// Bilinear (dot / general) score kernels (see luong.h for the math).
#include "nazar/attention/luong.h"

#include "nazar/attention/vec.h"

#include <cstdint>

namespace nazar::attn {

void bilinear_scores(const float* q, const float* keys, int n, int K, float* r) {
    for (int j = 0; j < n; ++j) {
        r[j] = dot8(q, keys + static_cast<int64_t>(j) * K, K);
    }
}

// e_j = s q·k_j  =>  d_q += s Σ_j d_e_j k_j,  d_k_j += s d_e_j q
void bilinear_scores_backward(const float* q, const float* keys, const float* d_e, int n, int K,
                              float s, float* d_q, float* d_keys) {
    for (int j = 0; j < n; ++j) {
        const float g = s * d_e[j];
        if (g == 0.0f) continue;
        const float* k = keys + static_cast<int64_t>(j) * K;
        float* dk = d_keys + static_cast<int64_t>(j) * K;
        for (int i = 0; i < K; ++i) {
            d_q[i] += g * k[i];
            dk[i] += g * q[i];
        }
    }
}

}  // namespace nazar::attn
