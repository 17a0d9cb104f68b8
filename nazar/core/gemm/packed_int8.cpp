// The AVX512-VNNI kernel of int8 packed products (packed.h): activations quantized per row and
// offset to unsigned, vpdpbusd into int32, C = alpha r_m s_n (Σ a_q w_q − 128 Σ w_q) + beta C.
#include "nazar/core/gemm/packed_internal.h"

#ifdef NZ_PACKED_X86
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

// The region's functions (and packed_block.h's templates) are compiled for AVX512VNNI.
NZ_PACKED_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

#include "nazar/core/gemm/packed_block.h"

namespace nazar::packed_detail {

namespace {

struct Int8Ops {
    using Acc = __m512i;
    using Lane = int32_t;
    struct Panel {
        __m512i corr;  // 128 Σ_k w_q per output: the unsigned offset's term
        __m512 ws;     // per-row scales s_n (full panels only)
    };
    static Acc zero() { return _mm512_setzero_si512(); }
    static Acc dot(Acc acc, __m512i a, __m512i w) { return _mm512_dpbusd_epi32(acc, a, w); }
    static void store(Lane* v, Acc acc) { _mm512_store_si512(v, acc); }
    static Panel panel(const Job& j, int p, bool full) {
        // scales: N floats, read 16 at a time only for panels wholly inside [n0, n1)
        return {_mm512_slli_epi32(_mm512_loadu_si512(j.sum + p * 16), 7),
                full ? _mm512_loadu_ps(j.W->scales() + p * 16) : _mm512_setzero_ps()};
    }
    static __m512 finish(const Job& j, const Panel& pan, int m, Acc acc) {
        const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, pan.corr));
        return _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(j.alpha * j.act->scale[m])), pan.ws);
    }
};

}  // namespace

void prepare_row_int8(const float* a, int k, int off, uint8_t* out, float* r) {
    __m512 vmax = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= k; i += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(a + i)));
    float amax = _mm512_reduce_max_ps(vmax);
    for (; i < k; ++i) amax = std::max(amax, std::fabs(a[i]));
    *r = amax / 127.0f;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127),
                  bias = _mm512_set1_epi32(128);
    i = 0;
    for (; i + 16 <= k; i += 16) {
        __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(a + i), vinv));
        q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), bias);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + off + i), _mm512_cvtepi32_epi8(q));
    }
    for (; i < k; ++i) {
        const float q = std::clamp(std::nearbyint(a[i] * inv), -127.0f, 127.0f);
        out[off + i] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
}

void panels_int8(const Job& j, int p0, int p1, int M) {
    panels<Int8Ops>(j, p0, p1, M);
}

}  // namespace nazar::packed_detail

NZ_PACKED_TARGET_END
#endif
