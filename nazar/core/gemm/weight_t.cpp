// refresh_weight_t (blas.h): Wᵀ strip-packed for nn512's packed kernel, made once per batch.
#include "nazar/core/blas.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/gemm/nn512.h"
#include "nazar/core/gemm/packed.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NZ_WT_AVX2 1
#endif

namespace nazar {

namespace {

#ifdef NZ_WT_AVX2
// dst (8 rows, ldd) = src (8 rows, lds)ᵀ for an 8 x 8 tile.
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
    __m256 r[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
        u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
            r[i + 2 * j] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 2 * j + 1] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
        }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}
#endif

// Rows [n0, n0 + 8) of W (all K columns) into the packed Wᵀ t: 8 x 8 tiles transposed in
// registers (AVX2), scalar edges; a short last group (n0 + 8 > N) is scalar.
void pack_rows8(const float* w, int N, int K, int ldw, int n0, float* t) {
    // element (k, n) of Wᵀ, i.e. W[n][k], lives at t[(n / 32) · 32 K + 32 k + n % 32]
    const auto at = [&](int k, int n) -> float& {
        return t[static_cast<int64_t>(n / 32) * K * 32 + static_cast<int64_t>(k) * 32 + n % 32];
    };
    const float* src = w + static_cast<int64_t>(n0) * ldw;
    if (n0 + 8 > N) {
        for (int n = n0; n < N; ++n)
            for (int k = 0; k < K; ++k) at(k, n) = w[static_cast<int64_t>(n) * ldw + k];
        return;
    }
    const int K8 = K & ~7;
#ifdef NZ_WT_AVX2
    for (int k0 = 0; k0 < K8; k0 += 8) transpose8x8(src + k0, ldw, &at(k0, n0), 32);
#else
    for (int k0 = 0; k0 < K8; ++k0)
        for (int i = 0; i < 8; ++i) at(k0, n0 + i) = src[int64_t{i} * ldw + k0];
#endif
    for (int k = K8; k < K; ++k)
        for (int i = 0; i < 8; ++i) at(k, n0 + i) = src[int64_t{i} * ldw + k];
}

}  // namespace

void refresh_weight_t(WeightT& wt, const float* w, int N, int K, int ldw) {
    // The naive build multiplies with loops either way: nothing would read it.
    const bool used = gemm_detail::kHaveBlas && detail::nn512_available();
    // a matrix with a packed bf16 / int8 copy (packed.h) is multiplied from that one
    int pn = 0, pk = 0;
    const bool packed = gemm_detail::any_packed() && gemm_detail::find_packed(w, ldw, &pn, &pk);
    if (!used || packed || N == 0 || K == 0) {
        wt.reset();
        return;
    }
    const int strips = (N + 31) / 32;
    if (!wt || wt.use_count() > 1) wt = std::make_shared<Tensor>(Shape{strips, K, 32});
    wt->resize({strips, K, 32}, false);
    float* t = wt->data();
    // groups of 8 rows of W over the pool; the padding columns of the last strip are zero
    parallel_for((N + 7) / 8, 8, [&](int64_t b0, int64_t b1) {
        for (int n0 = static_cast<int>(b0) * 8; n0 < std::min<int64_t>(N, b1 * 8); n0 += 8)
            pack_rows8(w, N, K, ldw, n0, t);
    });
    if (N % 32 != 0)
        for (int k = 0; k < K; ++k)
            for (int n = N; n < strips * 32; ++n)
                t[static_cast<int64_t>(n / 32) * K * 32 + static_cast<int64_t>(k) * 32 + n % 32] =
                    0.0f;
}

void refresh_weight_t(WeightT& wt, ConstTensorView w) {
    NZ_CHECK(w.ndim() == 2, "gemm: W must be 2-D, got {}", w.shape().str());
    refresh_weight_t(wt, w.data(), w.dim(0), w.dim(1), w.dim(1));
}

}  // namespace nazar
