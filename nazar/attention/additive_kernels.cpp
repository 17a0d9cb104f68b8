// The additive score kernels (additive_kernels.h for the maths): add + tanh + dot over A floats
// for every scored position, the hot loop of Bahdanau attention, forward and backward.
//
// The 8-lane (AVX2/FMA, the x86-64-v3 baseline) and 16-lane (AVX-512, chosen at run time from
// cpu_features.h) paths evaluate tanh with simd.h's vector forms; they give bit-identical results.
// Builds without AVX2 use the scalar kernels::tanh.
#include "nazar/attention/additive_kernels.h"

#include "nazar/attention/vec.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/kernels.h"
#include "nazar/core/simd.h"

#include <atomic>
#include <cmath>
#include <cstdint>

namespace nazar::attn {

namespace {

#ifdef NZ_SIMD_AVX2
using simd::hsum8;
using simd::tanh8;

// The 8-lane and scalar tails shared by both paths, from position a on (the AVX-512 functions
// inline them: their target includes AVX2).
// acc's lanes plus v · tanh(u + k) over [a, A), in the 8-lane order
inline float add_tanh_dot_tail8(const float* u, const float* k, const float* v, int A, int a,
                                __m256 acc) {
    for (; a + 8 <= A; a += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a),
                              tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a))),
                              acc);
    float s = hsum8(acc);
    for (; a < A; ++a) s += v[a] * kernels::tanh1(u[a] + k[a]);
    return s;
}

// add_tanh_dot_tail8 for two vectors v, w sharing each tanh: *e and *f, each in its order
inline void add_tanh_dot2_tail8(const float* u, const float* k, const float* v, const float* w,
                                int A, int a, __m256 acc_v, __m256 acc_w, float* e, float* f) {
    for (; a + 8 <= A; a += 8) {
        const __m256 t = tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a)));
        acc_v = _mm256_fmadd_ps(_mm256_loadu_ps(v + a), t, acc_v);
        acc_w = _mm256_fmadd_ps(_mm256_loadu_ps(w + a), t, acc_w);
    }
    float sv = hsum8(acc_v), sw = hsum8(acc_w);
    for (; a < A; ++a) {
        const float t = kernels::tanh1(u[a] + k[a]);
        sv += v[a] * t;
        sw += w[a] * t;
    }
    *e = sv;
    *f = sw;
}

// One scored position's backward over [a, A) (additive_scores_backward), fused with the tanh it
// recomputes: z = tanh(u + k);  d_v += g z;  d_pre = (g v) (1 - z²);  d_u += d_pre;
// d_k += d_pre. The multiply-adds are the ones GCC contracted the earlier two-pass loop into
// (1 - z² one fnmadd, each += one fma on the rounded g v), so the results are bit-identical.
inline void add_tanh_backward_tail8(const float* u, const float* k, const float* v, float g, int A,
                                    int a, float* d_u, float* dk, float* d_v) {
    const __m256 g8 = _mm256_set1_ps(g), one = _mm256_set1_ps(1.0f);
    for (; a + 8 <= A; a += 8) {
        const __m256 z = tanh8(_mm256_add_ps(_mm256_loadu_ps(u + a), _mm256_loadu_ps(k + a)));
        const __m256 gv = _mm256_mul_ps(g8, _mm256_loadu_ps(v + a));
        const __m256 w = _mm256_fnmadd_ps(z, z, one);
        _mm256_storeu_ps(d_v + a, _mm256_fmadd_ps(g8, z, _mm256_loadu_ps(d_v + a)));
        _mm256_storeu_ps(d_u + a, _mm256_fmadd_ps(gv, w, _mm256_loadu_ps(d_u + a)));
        _mm256_storeu_ps(dk + a, _mm256_fmadd_ps(gv, w, _mm256_loadu_ps(dk + a)));
    }
    for (; a < A; ++a) {
        const float z = kernels::tanh1(u[a] + k[a]), gv = g * v[a], w = std::fma(-z, z, 1.0f);
        d_v[a] = std::fma(g, z, d_v[a]);
        d_u[a] = std::fma(gv, w, d_u[a]);
        dk[a] = std::fma(gv, w, dk[a]);
    }
}
#endif

#ifdef NZ_SIMD_AVX512
using simd::tanh16;

// GCC 12's AVX-512 intrinsic headers: see simd.h.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define NZ_AVX512 NZ_TARGET_AVX512
// add_tanh_dot and the backward below with 16 lanes; the dot keeps the 8-lane accumulator and its
// order (low half of each 16-block, then the high half), so the sum is bit-identical too.
NZ_AVX512 float add_tanh_dot512(const float* u, const float* k, const float* v, int A) {
    __m256 acc = _mm256_setzero_ps();
    int a = 0;
    for (; a + 16 <= A; a += 16) {
        const __m512 t = tanh16(_mm512_add_ps(_mm512_loadu_ps(u + a), _mm512_loadu_ps(k + a)));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a), _mm512_castps512_ps256(t), acc);
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(v + a + 8), _mm512_extractf32x8_ps(t, 1), acc);
    }
    return add_tanh_dot_tail8(u, k, v, A, a, acc);
}

NZ_AVX512 void add_tanh_dot2_512(const float* u, const float* k, const float* v, const float* w,
                                 int A, float* e, float* f) {
    __m256 acc_v = _mm256_setzero_ps(), acc_w = _mm256_setzero_ps();
    int a = 0;
    for (; a + 16 <= A; a += 16) {
        const __m512 t = tanh16(_mm512_add_ps(_mm512_loadu_ps(u + a), _mm512_loadu_ps(k + a)));
        const __m256 lo = _mm512_castps512_ps256(t), hi = _mm512_extractf32x8_ps(t, 1);
        acc_v = _mm256_fmadd_ps(_mm256_loadu_ps(v + a), lo, acc_v);
        acc_v = _mm256_fmadd_ps(_mm256_loadu_ps(v + a + 8), hi, acc_v);
        acc_w = _mm256_fmadd_ps(_mm256_loadu_ps(w + a), lo, acc_w);
        acc_w = _mm256_fmadd_ps(_mm256_loadu_ps(w + a + 8), hi, acc_w);
    }
    add_tanh_dot2_tail8(u, k, v, w, A, a, acc_v, acc_w, e, f);
}

NZ_AVX512 void add_tanh_backward512(const float* u, const float* k, const float* v, float g, int A,
                                    float* d_u, float* dk, float* d_v) {
    const __m512 g16 = _mm512_set1_ps(g), one = _mm512_set1_ps(1.0f);
    int a = 0;
    for (; a + 16 <= A; a += 16) {
        const __m512 z = tanh16(_mm512_add_ps(_mm512_loadu_ps(u + a), _mm512_loadu_ps(k + a)));
        const __m512 gv = _mm512_mul_ps(g16, _mm512_loadu_ps(v + a));
        const __m512 w = _mm512_fnmadd_ps(z, z, one);
        _mm512_storeu_ps(d_v + a, _mm512_fmadd_ps(g16, z, _mm512_loadu_ps(d_v + a)));
        _mm512_storeu_ps(d_u + a, _mm512_fmadd_ps(gv, w, _mm512_loadu_ps(d_u + a)));
        _mm512_storeu_ps(dk + a, _mm512_fmadd_ps(gv, w, _mm512_loadu_ps(dk + a)));
    }
    add_tanh_backward_tail8(u, k, v, g, A, a, d_u, dk, d_v);
}
#undef NZ_AVX512
#pragma GCC diagnostic pop

#endif

// On when AVX-512 may run (cpu_features.h) and NAZAR_ATTN_AVX512=0 is not set; decided on the
// first call. set_additive_avx512 changes it (tests, benchmarks).
std::atomic<bool>& avx512_on() {
    static std::atomic<bool> on{avx512_allowed() && !switches().attn_avx512_off};
    return on;
}

// v · tanh(u + k) in one pass
inline float add_tanh_dot(const float* u, const float* k, const float* v, int A, float* tmp) {
#ifdef NZ_SIMD_AVX2
    (void)tmp;  // scratch only for the scalar path
#ifdef NZ_SIMD_AVX512
    if (avx512_on().load(std::memory_order_relaxed)) return add_tanh_dot512(u, k, v, A);
#endif
    return add_tanh_dot_tail8(u, k, v, A, 0, _mm256_setzero_ps());
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

void additive_scores2(const float* u, const float* keys, const float* v, const float* w, int n,
                      int A, float* tmp, float* e, float* f) {
    for (int j = 0; j < n; ++j) {
        const float* k = keys + static_cast<int64_t>(j) * A;
#ifdef NZ_SIMD_AVX2
        (void)tmp;  // scratch only for the scalar path
#ifdef NZ_SIMD_AVX512
        if (avx512_on().load(std::memory_order_relaxed)) {
            add_tanh_dot2_512(u, k, v, w, A, e + j, f + j);
            continue;
        }
#endif
        add_tanh_dot2_tail8(u, k, v, w, A, 0, _mm256_setzero_ps(), _mm256_setzero_ps(), e + j,
                            f + j);
#else
        for (int a = 0; a < A; ++a) tmp[a] = u[a] + k[a];
        kernels::tanh(tmp, tmp, A);
        e[j] = dot8(v, tmp, A);
        f[j] = dot8(w, tmp, A);
#endif
    }
}

// z = tanh(u + k_j);  d_v += d_e_j z;  d_pre = d_e_j v ⊙ (1 - z²);  d_u += d_pre;  d_k_j += d_pre
void additive_scores_backward(const float* u, const float* keys, const float* v, const float* d_e,
                              int n, int A, float* tmp, float* d_u, float* d_keys, float* d_v) {
    for (int j = 0; j < n; ++j) {
        const float g = d_e[j];
        if (g == 0.0f) continue;
        const float* k = keys + static_cast<int64_t>(j) * A;
        float* dk = d_keys + static_cast<int64_t>(j) * A;
#ifdef NZ_SIMD_AVX2
        (void)tmp;  // scratch only for the scalar path
#ifdef NZ_SIMD_AVX512
        if (avx512_on().load(std::memory_order_relaxed)) {
            add_tanh_backward512(u, k, v, g, A, d_u, dk, d_v);
            continue;
        }
#endif
        add_tanh_backward_tail8(u, k, v, g, A, 0, d_u, dk, d_v);
#else
        for (int a = 0; a < A; ++a) tmp[a] = kernels::tanh1(u[a] + k[a]);
        for (int a = 0; a < A; ++a) {
            const float z = tmp[a];
            const float d_pre = g * v[a] * (1.0f - z * z);
            d_v[a] += g * z;
            d_u[a] += d_pre;
            dk[a] += d_pre;
        }
#endif
    }
}

bool set_additive_avx512(bool on) {
    avx512_on().store(on && avx512_allowed());
    return avx512_on().load();
}

bool additive_avx512() {
    return avx512_on().load();
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
