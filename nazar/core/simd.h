// exp, tanh (and a 1-lane log) and horizontal reductions at each lane width nazar uses: 1 (plain
// C++ that GCC vectorises: kernels.cpp), 8 (AVX2/FMA, the x86-64-v3 baseline) and 16 (AVX-512F/DQ,
// for functions compiled with NZ_TARGET_AVX512 and called only where cpu_features.h allows it).
//
// One approximation everywhere (Cephes expf / tanhf, ≈1-2 ulp): the coefficients below are the
// only copy. exp(x) = 2^n · e^r with n = round(x / ln 2) and r = x − n ln 2 (ln 2 split in two),
// e^r by a degree-6 polynomial; tanh by an odd polynomial below |x| = 0.625 and by
// 1 − 2 / (e^{2|x|} + 1) above, sign restored.
//
// The widths do not round alike: the 8- and 16-lane forms use fused multiply-adds, the scalar
// form separate multiplies and adds (GCC keeps those under ISO C++'s -ffp-contract=off), and
// they group the last terms differently. Each form is kept exactly as it was measured and
// tested, so outputs stay bit-identical; the 8- and 16-lane forms agree bit for bit with each
// other (every operation the same IEEE one), which the kernels that switch width rely on.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NZ_SIMD_AVX2 1
#endif

namespace nazar::simd {

inline constexpr float kLog2e = 1.44269504088896341f;
// ln 2 = kLn2Hi − kLn2Lo: kLn2Hi has few mantissa bits, so n · kLn2Hi is exact for |n| < 2^9.
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = 2.12194440e-4f;
// e^r ≈ 1 + r + r² (p0 r^5 + p1 r^4 + ... + p5), Horner from p0
inline constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// tanh(x) ≈ x + x·z (q0 z^4 + ... + q4), z = x², for |x| < kTanhSmall
inline constexpr float kTanhP[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                                    1.33314422036e-1f, -3.33332819422e-1f};
inline constexpr float kTanhSmall = 0.625f;
// log(1 + f) ≈ f − f²/2 + f³ (q0 f^8 + q1 f^7 + ... + q8), Horner from q0 (Cephes logf)
inline constexpr float kLogP[9] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                                   -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                                   2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};

// ---- 1 lane: branch-free, so loops over it vectorise ----

// Below −87.3 the result is flushed to 0 (std::exp would return a denormal); NaN stays NaN.
inline float exp1(float x) {
    const float xc = std::min(std::max(-87.3f, x), 88.7f);  // NaN -> -87.3: no UB in the int cast
    const float n = std::floor(xc * kLog2e + 0.5f);
    const float r = xc - n * kLn2Hi + n * kLn2Lo;
    float p = kExpP[0];
#pragma GCC unroll 8
    for (int i = 1; i < 6; ++i) p = p * r + kExpP[i];
    p = p * r * r + r + 1.0f;
    const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
    float y = p * scale;
    y = x < -87.3f ? 0.0f : y;
    y = x > 88.7f ? std::numeric_limits<float>::infinity() : y;
    return x != x ? x : y;
}

// log x for a positive normal x (Cephes logf, ≈1 ulp): x = m · 2^e with m in [√½, √2), then
// e ln 2 + log(1 + f), f = m − 1, ln 2 split as for exp. Branch-free (loops over it vectorise).
// Zero, negatives, subnormals, infinities and NaN are outside its domain: callers pass values of
// at least FLT_MIN (copy attention's log(P + ε), ε = 1e-12).
inline float log1(float x) {
    const int32_t bits = std::bit_cast<int32_t>(x);
    const int32_t e0 = (bits >> 23) - 126;  // x = m0 · 2^e0, m0 in [0.5, 1)
    const float m0 = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
    const bool low = m0 < 0.707106781186547524f;
    const float fe = static_cast<float>(low ? e0 - 1 : e0);
    const float f = low ? m0 + m0 - 1.0f : m0 - 1.0f;
    const float z = f * f;
    float y = kLogP[0];
#pragma GCC unroll 9
    for (int i = 1; i < 9; ++i) y = y * f + kLogP[i];
    y = y * f * z;
    y = y - fe * kLn2Lo;
    y = y - 0.5f * z;
    return f + y + fe * kLn2Hi;
}

inline float tanh1(float x) {
    const float ax = std::abs(x);
    const float z = x * x;
    float p = kTanhP[0];
#pragma GCC unroll 8
    for (int i = 1; i < 5; ++i) p = p * z + kTanhP[i];
    const float small = p * z * x + x;
    const float e = exp1(2.0f * std::min(ax, 10.0f));  // tanh(10) = 1 in float
    const float big = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
    const float y = ax < kTanhSmall ? small : big;
    return x != x ? x : y;
}

// ---- 8 lanes (AVX2 + FMA) ----
#ifdef NZ_SIMD_AVX2

// No clamping: callers keep x within [-87, 88] (tanh8 passes 2|x| <= 20).
inline __m256 exp8(__m256 x) {
    const __m256 n =
        _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
    __m256 p = _mm256_set1_ps(kExpP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[i]));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(kTanhP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 5; ++i) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kTanhP[i]));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    const __m256 e =
        exp8(_mm256_min_ps(_mm256_add_ps(ax, ax), _mm256_set1_ps(20.0f)));  // tanh(10) = 1
    const __m256 big_abs =
        _mm256_sub_ps(_mm256_set1_ps(1.0f),
                      _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    const __m256 big = _mm256_or_ps(big_abs, _mm256_and_ps(sign, x));
    return _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ));
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)): the one order every 8-lane sum uses.
inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// max(m, lane 0, lane 1, ..., lane 7), folded in lane order with std::max.
inline float max_lanes8(__m256 v, float m) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (float x : lanes) m = std::max(m, x);
    return m;
}

// Bit i set where !(p[i] < t): entries at or above t, and NaN (unordered compares true).
inline int not_below_mask8(const float* p, float t) {
    return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_set1_ps(t), _CMP_NLT_UQ));
}

#endif  // NZ_SIMD_AVX2

// ---- 16 lanes (AVX-512F/DQ, compiled per function) ----
#if defined(NZ_SIMD_AVX2) && defined(__GNUC__)
#define NZ_SIMD_AVX512 1
#define NZ_TARGET_AVX512 __attribute__((target("avx512f,avx512dq")))

// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports once inlined: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exp8 on 16 lanes; floor is roundscale toward −∞, so each lane is bit-identical to exp8's.
NZ_TARGET_AVX512 inline __m512 exp16(__m512 x) {
    const __m512 n =
        _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                             _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kExpP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[i]));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// tanh8 on 16 lanes (blendv = mask blend): bit-identical per lane.
NZ_TARGET_AVX512 inline __m512 tanh16(__m512 x) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 ax = _mm512_andnot_ps(sign, x);
    const __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(kTanhP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 5; ++i) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(kTanhP[i]));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    const __m512 e = exp16(_mm512_min_ps(_mm512_add_ps(ax, ax), _mm512_set1_ps(20.0f)));
    const __m512 big_abs =
        _mm512_sub_ps(_mm512_set1_ps(1.0f),
                      _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    const __m512 big = _mm512_or_ps(big_abs, _mm512_and_ps(sign, x));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ), big,
                                small);
}

#pragma GCC diagnostic pop
#endif  // NZ_SIMD_AVX512

}  // namespace nazar::simd
