// The AVX512-BF16 kernel of bf16 packed products (packed.h): activations rounded to bf16 per
// call, vdpbf16ps into fp32, C = alpha Σ a w + beta C.
#include "nazar/core/gemm/packed_internal.h"

#ifdef NZ_PACKED_X86
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

// The region's functions (and packed_block.h's templates) are compiled for AVX512BF16.
NZ_PACKED_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

#include "nazar/core/gemm/packed_block.h"

namespace nazar::packed_detail {

namespace {

struct Bf16Ops {
    using Acc = __m512;
    using Lane = float;
    struct Panel {};
    static Acc zero() { return _mm512_setzero_ps(); }
    static Acc dot(Acc acc, __m512i a, __m512i w) {
        return _mm512_dpbf16_ps(acc, reinterpret_cast<const __m512bh&>(a),
                                reinterpret_cast<const __m512bh&>(w));
    }
    static void store(Lane* v, Acc acc) { _mm512_store_ps(v, acc); }
    static Panel panel(const Job&, int, bool) { return {}; }
    static __m512 finish(const Job& j, const Panel&, int, Acc acc) {
        return _mm512_mul_ps(acc, _mm512_set1_ps(j.alpha));
    }
};

}  // namespace

void prepare_row_bf16(const float* a, int k, int off, uint8_t* out) {
    uint16_t* o = reinterpret_cast<uint16_t*>(out) + off;
    int i = 0;
    for (; i + 32 <= k; i += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(a + i));
        _mm512_storeu_si512(o + i, reinterpret_cast<const __m512i&>(v));
    }
    for (; i < k; ++i) o[i] = float_to_bf16(a[i]);
}

void panels_bf16(const Job& j, int p0, int p1, int M) {
    panels<Bf16Ops>(j, p0, p1, M);
}

}  // namespace nazar::packed_detail

NZ_PACKED_TARGET_END
#endif
