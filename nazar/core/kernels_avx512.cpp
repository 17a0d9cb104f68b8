// The AVX-512 forms of kernels.h's row kernels, chosen at run time (cpu_features.h; the build
// stays x86-64-v3), each bit-identical to its 8-lane / scalar form:
//  - add_bias_logsumexp_row: bias + log-sum-exp of one logits row in two passes, what beam
//    search reads instead of a written log-softmax row (docs/performance.md, "Decoding"). The
//    maximum is exact in any order; the sum adds the low and the high 8 lanes of each 16 into
//    logsumexp_row's 8 partial sums in turn, which is its summation order.
//  - tanh and sigmoid over arrays (the GRU/LSTM gates).
// All of them evaluate simd::exp1 / tanh1 on 16 lanes with the operations gcc emits for the
// scalar forms (fused multiply-adds where it contracts; the clamps matter only where the final
// selects replace the value). tests/unit/test_kernels_logits.cpp checks them bit for bit.
#include "nazar/core/cpu_features.h"
#include "nazar/core/kernels.h"
#include "nazar/core/simd.h"

#include <atomic>
#include <cmath>
#include <limits>

namespace nazar::kernels {

namespace {

// logsumexp_row's second pass.
float sum_exp_shifted_portable(const float* z, int n, float mx) {
    float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) s8[k] += simd::exp1(z[i + k] - mx);
    float sum = 0;
    for (; i < n; ++i) sum += simd::exp1(z[i] - mx);
    sum += ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
    return sum;
}

float add_bias_logsumexp_portable(float* z, const float* b, int n) {
    if (b != nullptr)
        for (int i = 0; i < n; ++i) z[i] += b[i];
    return logsumexp_row(z, n);
}

#ifdef NZ_SIMD_AVX512
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// simd::exp1 on 16 lanes, bit for bit: x in [-87.3, 88.7] takes the polynomial, below gives 0,
// above +inf, NaN stays NaN.
NZ_TARGET_AVX512 inline __m512 exp1_16(__m512 x) {
    using namespace simd;
    const __m512 n =
        _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                             _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kExpP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[i]));
    // p r r + r + 1 as exp1 computes it: fma(p r, r, r) + 1
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    const __mmask16 lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
    const __mmask16 hi = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.7f), _CMP_GT_OQ);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    y = _mm512_mask_mov_ps(y, lo, _mm512_setzero_ps());
    y = _mm512_mask_mov_ps(y, hi, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
    return _mm512_mask_mov_ps(y, nan, x);
}

// simd::tanh1 on 16 lanes, bit for bit.
NZ_TARGET_AVX512 inline __m512 tanh1_16(__m512 x) {
    using namespace simd;
    const __m512 ax = _mm512_abs_ps(x), z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(kTanhP[0]);
#pragma GCC unroll 8
    for (int i = 1; i < 5; ++i) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(kTanhP[i]));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);  // p z x + x
    // 2 min(|x|, 10): NaN gives 20 here, replaced by the last select
    const __m512 e =
        exp1_16(_mm512_mul_ps(_mm512_set1_ps(2.0f), _mm512_min_ps(ax, _mm512_set1_ps(10.0f))));
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 mag =
        _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 big = _mm512_or_ps(_mm512_andnot_ps(sign, mag), _mm512_and_ps(sign, x));
    const __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
    const __m512 y = _mm512_mask_mov_ps(big, is_small, small);
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

NZ_TARGET_AVX512 void tanh512(const float* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, tanh1_16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, tanh1_16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

// 1 / (1 + exp1(−x)) on 16 lanes
NZ_TARGET_AVX512 inline __m512 sigmoid1_16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(one, _mm512_add_ps(one, exp1_16(_mm512_xor_ps(x, _mm512_set1_ps(-0.0f)))));
}

NZ_TARGET_AVX512 void sigmoid512(const float* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, sigmoid1_16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, sigmoid1_16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

// Σ exp(z − mx) in logsumexp_row's order: 8 partial sums over blocks of 8, a scalar tail, a tree.
// next (may be null): n floats to bring into L2 meanwhile, one cache line per 16 entries.
NZ_TARGET_AVX512 float sum_exp_shifted512(const float* z, int n, float mx,
                                          const float* next = nullptr) {
    __m256 s8 = _mm256_setzero_ps();
    const __m512 vmx = _mm512_set1_ps(mx);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        if (next != nullptr) _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T1);
        const __m512 e = exp1_16(_mm512_sub_ps(_mm512_loadu_ps(z + i), vmx));
        s8 = _mm256_add_ps(s8, _mm512_castps512_ps256(e));
        s8 = _mm256_add_ps(s8, _mm512_extractf32x8_ps(e, 1));
    }
    if (i + 8 <= n) {
        const __m512 x = _mm512_zextps256_ps512(_mm256_loadu_ps(z + i));
        s8 = _mm256_add_ps(s8, _mm512_castps512_ps256(exp1_16(_mm512_sub_ps(x, vmx))));
        i += 8;
    }
    float sum = 0;
    for (; i < n; ++i) sum += simd::exp1(z[i] - mx);
    alignas(32) float s[8];
    _mm256_store_ps(s, s8);
    return sum + (((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])));
}

NZ_TARGET_AVX512 float add_bias_logsumexp512(float* z, const float* b, int n, const float* next) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    __m512 m16 = _mm512_set1_ps(kNegInf);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_loadu_ps(z + i);
        if (b != nullptr) {
            x = _mm512_add_ps(x, _mm512_loadu_ps(b + i));
            _mm512_storeu_ps(z + i, x);
        }
        m16 = _mm512_max_ps(x, m16);  // NaN x keeps m, as std::max(m, x) does
    }
    float mx = kNegInf;
    for (; i < n; ++i) {
        if (b != nullptr) z[i] += b[i];
        mx = std::max(mx, z[i]);
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, m16);
    for (const float m : lanes) mx = std::max(mx, m);
    if (!std::isfinite(mx)) return mx;
    return mx + std::log(sum_exp_shifted512(z, n, mx, next));
}

#pragma GCC diagnostic pop
#endif

std::atomic<bool>& avx512_on() {
    static std::atomic<bool> on{avx512_allowed()};
    return on;
}

}  // namespace

void tanh(const float* x, float* y, int64_t n) {
#ifdef NZ_SIMD_AVX512
    if (avx512_on().load(std::memory_order_relaxed)) return tanh512(x, y, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = simd::tanh1(x[i]);
}

void sigmoid(const float* x, float* y, int64_t n) {
#ifdef NZ_SIMD_AVX512
    if (avx512_on().load(std::memory_order_relaxed)) return sigmoid512(x, y, n);
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + simd::exp1(-x[i]));
}

float add_bias_logsumexp_row(float* z, const float* b, int n, const float* next) {
#ifdef NZ_SIMD_AVX512
    if (avx512_on().load(std::memory_order_relaxed)) return add_bias_logsumexp512(z, b, n, next);
#endif
    (void)next;
    return add_bias_logsumexp_portable(z, b, n);
}

float sum_exp_shifted(const float* z, int n, float mx) {
#ifdef NZ_SIMD_AVX512
    if (avx512_on().load(std::memory_order_relaxed)) return sum_exp_shifted512(z, n, mx);
#endif
    return sum_exp_shifted_portable(z, n, mx);
}

bool set_kernels_avx512(bool on) {
    avx512_on().store(on && avx512_allowed());
    return avx512_on().load();
}

}  // namespace nazar::kernels
