// Fused additive score kernel (see bahdanau.h for the math).
//
// The hot loop is add + tanh + dot over A floats for every scored position. GCC does not
// vectorise the select-based tanh of kernels.cpp under the default -ftrapping-math, so this file
// carries an AVX2/FMA version (the x86-64-v3 baseline) of the same Cephes formulas: an odd
// polynomial for |x| < 0.625, 1 - 2 / (e^{2|x|} + 1) above. Other targets use kernels::tanh.
#include "nazar/attention/bahdanau.h"

#include "nazar/attention/vec.h"
#include "nazar/core/kernels.h"

#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NZ_ATTN_AVX2 1
#endif

namespace nazar::attn {

namespace {

#ifdef NZ_ATTN_AVX2
inline __m256 exp8(__m256 x) {  // x in [-20, 20] here (2|x| clamped to 20)
    const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    const __m256 e = exp8(_mm256_min_ps(_mm256_add_ps(ax, ax), _mm256_set1_ps(20.0f)));  // tanh(10) = 1 in float
    const __m256 big_abs = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                                         _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    const __m256 big = _mm256_or_ps(big_abs, _mm256_and_ps(sign, x));
    return _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

// z = tanh(u + k), A floats
inline void add_tanh(const float* u, const float* k, int A, float* z) {
    int a = 0;
#ifdef NZ_ATTN_AVX2
    for (; a + 8 <= A; a += 8)
        _mm256_storeu_ps(z + a, tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))));
#endif
    for (; a < A; ++a) z[a] = kernels::tanh1(u[a] + k[a]);
}

// v · tanh(u + k) in one pass
inline float add_tanh_dot(const float* u, const float* k, const float* v, int A, float* tmp) {
#ifdef NZ_ATTN_AVX2
    __m256 acc = _mm256_setzero_ps();
    int a = 0;
    for (; a + 8 <= A; a += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a),
                              tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))), acc);
    float s = hsum8(acc);
    for (; a < A; ++a) s += v[a] * kernels::tanh1(u[a] + k[a]);
    return s;
#else
    for (int a = 0; a < A; ++a) tmp[a] = u[a] + k[a];
    kernels::tanh(tmp, tmp, A);
    return dot8(v, tmp, A);
#endif
}

}  // namespace

void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* tmp, float* e) {
    for (int j = 0; j < n; ++j) e[j] = add_tanh_dot(u, keys + static_cast<int64_t>(j) * A, v, A, tmp);
}

// z = tanh(u + k_j);  d_v += d_e_j z;  d_pre = d_e_j v ⊙ (1 - z²);  d_u += d_pre;  d_k_j += d_pre
void additive_scores_backward(const float* u, const float* keys, const float* v, const float* d_e, int n, int A,
                              float* tmp, float* d_u, float* d_keys, float* d_v) {
    for (int j = 0; j < n; ++j) {
        const float g = d_e[j];
        if (g == 0.0f) continue;
        const float* k = keys + static_cast<int64_t>(j) * A;
        float* dk = d_keys + static_cast<int64_t>(j) * A;
        add_tanh(u, k, A, tmp);
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
        for (int a = 0; a < A; ++a)
            s += static_cast<double>(v[a]) * std::tanh(static_cast<double>(u[a]) + keys[static_cast<int64_t>(j) * A + a]);
        e[j] = static_cast<float>(s);
    }
}
}  // namespace naive

}  // namespace nazar::attn
