// Fused additive score kernel (see bahdanau.h for the math).
//
// The hot loop is add + tanh + dot over A floats for every scored position. GCC does not
// vectorise the select-based tanh of kernels.cpp under the default -ftrapping-math, so this file
// carries an AVX2/FMA version (the x86-64-v3 baseline) of the same Cephes formulas: an odd
// polynomial for |x| < 0.625, 1 - 2 / (e^{2|x|} + 1) above. Other targets use kernels::tanh.
#include "nazar/attention/bahdanau.h"

#include "nazar/attention/vec.h"
#include "nazar/core/kernels.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NZ_ATTN_AVX2 1
#endif

namespace nazar::attn {

namespace {

#ifdef NZ_ATTN_AVX2
inline __m256 exp8(__m256 x) {  // x in [-20, 20] here (2|x| clamped to 20)
    const __m256 n = _mm256_floor_ps(
        _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
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
    const __m256 e =
        exp8(_mm256_min_ps(_mm256_add_ps(ax, ax), _mm256_set1_ps(20.0f)));  // tanh(10) = 1 in float
    const __m256 big_abs =
        _mm256_sub_ps(_mm256_set1_ps(1.0f),
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

// The same formulas on 16 lanes (AVX-512F/DQ, chosen at run time). Every operation is the IEEE
// one of tanh8 (floor = roundscale toward −∞, blendv = mask blend), so each lane's result is
// bit-identical to tanh8's: only the number of elements per instruction changes.
// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports once inlined: a false positive (as in core/blas.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define NZ_AVX512 __attribute__((target("avx512f,avx512dq")))
NZ_AVX512 inline __m512 exp16(__m512 x) {
    const __m512 n = _mm512_roundscale_ps(
        _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

NZ_AVX512 inline __m512 tanh16(__m512 x) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 ax = _mm512_andnot_ps(sign, x);
    const __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    const __m512 e = exp16(_mm512_min_ps(_mm512_add_ps(ax, ax), _mm512_set1_ps(20.0f)));
    const __m512 big_abs =
        _mm512_sub_ps(_mm512_set1_ps(1.0f),
                      _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    const __m512 big = _mm512_or_ps(big_abs, _mm512_and_ps(sign, x));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ), big,
                                small);
}

// add_tanh / add_tanh_dot below with 16 lanes; the dot keeps the 8-lane accumulator and its
// order (low half of each 16-block, then the high half), so the sum is bit-identical too.
NZ_AVX512 void add_tanh512(const float* u, const float* k, int A, float* z) {
    int a = 0;
    for (; a + 16 <= A; a += 16)
        _mm512_storeu_ps(z + a,
                         tanh16(_mm512_add_ps(_mm512_loadu_ps(u + a), _mm512_loadu_ps(k + a))));
    for (; a + 8 <= A; a += 8)
        _mm256_storeu_ps(z + a,
                         tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))));
    for (; a < A; ++a) z[a] = kernels::tanh1(u[a] + k[a]);
}

NZ_AVX512 float add_tanh_dot512(const float* u, const float* k, const float* v, int A) {
    __m256 acc = _mm256_setzero_ps();
    int a = 0;
    for (; a + 16 <= A; a += 16) {
        const __m512 t = tanh16(_mm512_add_ps(_mm512_loadu_ps(u + a), _mm512_loadu_ps(k + a)));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a), _mm512_castps512_ps256(t), acc);
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a + 8), _mm512_extractf32x8_ps(t, 1), acc);
    }
    for (; a + 8 <= A; a += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a),
                              tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))),
                              acc);
    float s = hsum8(acc);
    for (; a < A; ++a) s += v[a] * kernels::tanh1(u[a] + k[a]);
    return s;
}
#undef NZ_AVX512
#pragma GCC diagnostic pop

bool cpu_has_avx512() {
    __builtin_cpu_init();  // called from a static initializer: do not rely on libgcc's constructor
                           // order
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
#else
bool cpu_has_avx512() {
    return false;
}
#endif

// NAZAR_ATTN_AVX512=0 keeps the 8-lane path (for comparison; results are the same).
std::atomic<bool> g_avx512{[] {
    const char* e = std::getenv("NAZAR_ATTN_AVX512");
    return !(e && std::strcmp(e, "0") == 0) && cpu_has_avx512();
}()};

// z = tanh(u + k), A floats
inline void add_tanh(const float* u, const float* k, int A, float* z) {
    int a = 0;
#ifdef NZ_ATTN_AVX2
    if (g_avx512.load(std::memory_order_relaxed)) return add_tanh512(u, k, A, z);
    for (; a + 8 <= A; a += 8)
        _mm256_storeu_ps(z + a,
                         tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))));
#endif
    for (; a < A; ++a) z[a] = kernels::tanh1(u[a] + k[a]);
}

// v · tanh(u + k) in one pass
inline float add_tanh_dot(const float* u, const float* k, const float* v, int A,
                          [[maybe_unused]] float* tmp) {
#ifdef NZ_ATTN_AVX2
    if (g_avx512.load(std::memory_order_relaxed)) return add_tanh_dot512(u, k, v, A);
    __m256 acc = _mm256_setzero_ps();
    int a = 0;
    for (; a + 8 <= A; a += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a),
                              tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))),
                              acc);
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

void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* tmp,
                     float* e) {
    for (int j = 0; j < n; ++j)
        e[j] = add_tanh_dot(u, keys + static_cast<int64_t>(j) * A, v, A, tmp);
}

// z = tanh(u + k_j);  d_v += d_e_j z;  d_pre = d_e_j v ⊙ (1 - z²);  d_u += d_pre;  d_k_j += d_pre
void additive_scores_backward(const float* u, const float* keys, const float* v, const float* d_e,
                              int n, int A, float* tmp, float* d_u, float* d_keys, float* d_v) {
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

bool set_additive_avx512(bool on) {
    g_avx512.store(on && cpu_has_avx512());
    return g_avx512.load();
}

bool additive_avx512() {
    return g_avx512.load();
}

namespace naive {
void additive_scores(const float* u, const float* keys, const float* v, int n, int A, float* e) {
    for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int a = 0; a < A; ++a)
            s += static_cast<double>(v[a]) *
                 std::tanh(static_cast<double>(u[a]) + keys[static_cast<int64_t>(j) * A + a]);
        e[j] = static_cast<float>(s);
    }
}
}  // namespace naive

}  // namespace nazar::attn
