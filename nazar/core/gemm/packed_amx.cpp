// size: NZ_PACKED_TARGET_BEGIN() opens a target pragma region (a macro), not a function.
// The AMX kernels of packed products (packed.h), where the CPU has AMX-INT8 / AMX-BF16 and Linux
// granted this process the tile state (cpu_features.h). They read what the AVX-512 kernels read
// (packed_int8.cpp, packed_bf16.cpp): the activation rows made per call, and W's panels, whose
// 64-byte groups (16 outputs x 4 bytes along K) are exactly the rows of an AMX B tile.
// int8: TDPBUSD multiplies unsigned by signed bytes into int32, as vpdpbusd does, so the sums are
// the VNNI kernel's exactly, and the epilogue (C = alpha r_m s_n (Σ a_q w_q − 128 Σ w_q) + beta C)
// is the same arithmetic: the two kernels give the same bits (tests/unit/test_gemm_packed.cpp).
// bf16: TDPBF16PS sums the same bf16 products into fp32 in another order than vdpbf16ps (and
// flushes denormals), so it meets the bf16 bounds, not the AVX512-BF16 kernel's bits.
//
// Tiles: 0-3 accumulate 4 panels (mb <= 16 rows x 16 int32 each); 4 holds mb activation rows of
// 16 groups (64 bytes), 5 those of the last, partial chunk of groups; 6 holds 16 groups of a
// panel, 7 the last chunk's. One configuration for the blocks of 16 rows, one for the last
// partial block; the tile state is released after.
#include "nazar/core/gemm/packed_internal.h"

#ifdef NZ_PACKED_X86
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

NZ_PACKED_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-int8,amx-bf16")

namespace nazar::packed_detail {

namespace {

struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};  // bytes per row of tile t
    uint8_t rows[16] = {};
};

// Tiles for blocks of mb rows and chunks of 16 groups, the last chunk `tail` groups (0: none).
void configure(int mb, int tail) {
    TileConfig c;
    for (int t = 0; t < 4; ++t) {
        c.rows[t] = static_cast<uint8_t>(mb);
        c.colsb[t] = 64;
    }
    c.rows[4] = c.rows[5] = static_cast<uint8_t>(mb);
    c.colsb[4] = 64;
    c.colsb[5] = static_cast<uint16_t>(tail > 0 ? 4 * tail : 64);
    c.rows[6] = 16;
    c.rows[7] = static_cast<uint8_t>(tail > 0 ? tail : 16);
    c.colsb[6] = c.colsb[7] = 64;
    _tile_loadconfig(&c);
}

// Accumulator q += the chunk's activations (tile a) times panel w's chunk (into tile b).
#define NZ_AMX_PANEL(q, a, b, w)     \
    do {                             \
        _tile_loadd(b, w, 64);       \
        if constexpr (Int8)          \
            _tile_dpbusd(q, a, b);   \
        else                         \
            _tile_dpbf16ps(q, a, b); \
    } while (0)

// NP panels from p0 for rows [m0, m0 + mb): their sums (int8: int32, bf16: fp32) into out[q]
// (mb rows of 16).
template <bool Int8, int NP>
void sums(const Job& j, int m0, int p0, void* res) {
    uint32_t(*out)[16][16] = static_cast<uint32_t(*)[16][16]>(res);
    const std::ptrdiff_t stride = j.act->stride;
    const uint8_t* a = j.act->data.data() + static_cast<std::ptrdiff_t>(m0) * stride;
    const uint8_t* w[4] = {};
    for (int q = 0; q < NP; ++q) w[q] = j.W->panel(p0 + q) + static_cast<std::size_t>(j.g0) * 64;
    _tile_zero(0);
    if constexpr (NP > 1) _tile_zero(1);
    if constexpr (NP > 2) _tile_zero(2);
    if constexpr (NP > 3) _tile_zero(3);
    const int chunks = j.ng / 16, tail = j.ng % 16;
    for (int c = 0; c < chunks; ++c) {
        const std::size_t at = static_cast<std::size_t>(c) * 1024;  // 16 groups of 64 bytes
        _tile_loadd(4, a + c * 64, stride);
        NZ_AMX_PANEL(0, 4, 6, w[0] + at);
        if constexpr (NP > 1) NZ_AMX_PANEL(1, 4, 6, w[1] + at);
        if constexpr (NP > 2) NZ_AMX_PANEL(2, 4, 6, w[2] + at);
        if constexpr (NP > 3) NZ_AMX_PANEL(3, 4, 6, w[3] + at);
    }
    if (tail > 0) {
        const std::size_t at = static_cast<std::size_t>(chunks) * 1024;
        _tile_loadd(5, a + chunks * 64, stride);
        NZ_AMX_PANEL(0, 5, 7, w[0] + at);
        if constexpr (NP > 1) NZ_AMX_PANEL(1, 5, 7, w[1] + at);
        if constexpr (NP > 2) NZ_AMX_PANEL(2, 5, 7, w[2] + at);
        if constexpr (NP > 3) NZ_AMX_PANEL(3, 5, 7, w[3] + at);
    }
    _tile_stored(0, out[0], 64);
    if constexpr (NP > 1) _tile_stored(1, out[1], 64);
    if constexpr (NP > 2) _tile_stored(2, out[2], 64);
    if constexpr (NP > 3) _tile_stored(3, out[3], 64);
}

#undef NZ_AMX_PANEL

// The epilogues of packed_int8.cpp and packed_bf16.cpp (Ops::finish and block's stores), value
// for value.
template <bool Int8>
void finish(const Job& j, int m0, int mb, int p0, int np, const void* sums_out) {
    const auto* res = static_cast<const uint32_t(*)[16][16]>(sums_out);
    for (int q = 0; q < np; ++q) {
        const int p = p0 + q;
        const bool full = p * 16 >= j.n0 && p * 16 + 16 <= j.n1;
        if (!full) {
            for (int i = 0; i < mb; ++i) store_scalar(j, m0 + i, p, res[q][i]);
            continue;
        }
        const __m512i corr =
            Int8 ? _mm512_slli_epi32(_mm512_loadu_si512(j.sum + p * 16), 7) : __m512i{};
        const __m512 ws = Int8 ? _mm512_loadu_ps(j.W->scales() + p * 16) : __m512{};
        for (int i = 0; i < mb; ++i) {
            const int m = m0 + i;
            __m512 x;
            if constexpr (Int8) {
                const __m512 d =
                    _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(res[q][i]), corr));
                x = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(j.alpha * j.act->scale[m])), ws);
            } else {
                x = _mm512_mul_ps(_mm512_load_ps(reinterpret_cast<const float*>(res[q][i])),
                                  _mm512_set1_ps(j.alpha));
            }
            float* c = j.C + static_cast<int64_t>(m) * j.ldc + (p * 16 - j.n0);
            if (j.beta != 0.0f)
                x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(j.beta), _mm512_loadu_ps(c)));
            _mm512_storeu_ps(c, x);
        }
    }
}

template <bool Int8>
void panels_amx(const Job& j, int p0, int p1, int M) {
    // Panels outer, rows inner: a group of 4 panels (K x 64 bytes: 32 KB at K = 512) is read from
    // memory once and reused from L1/L2 by every block of 16 rows. The full blocks share one tile
    // configuration, the last partial block has its own.
    alignas(64) uint32_t res[4][16][16];
    // Row blocks [b0, b1) of mb rows each, under one tile configuration.
    const auto blocks = [&](int mb, int b0, int b1) {
        configure(mb, j.ng % 16);
        for (int p = p0; p < p1; p += 4) {
            const int np = std::min(4, p1 - p);
            for (int b = b0; b < b1; ++b) {
                const int m0 = b * 16;
                switch (np) {
                    case 1:
                        sums<Int8, 1>(j, m0, p, res);
                        break;
                    case 2:
                        sums<Int8, 2>(j, m0, p, res);
                        break;
                    case 3:
                        sums<Int8, 3>(j, m0, p, res);
                        break;
                    default:
                        sums<Int8, 4>(j, m0, p, res);
                }
                finish<Int8>(j, m0, mb, p, np, res);
            }
        }
    };
    const int full = M / 16, rest = M % 16;
    if (full > 0) blocks(16, 0, full);
    if (rest > 0) blocks(rest, full, full + 1);
    _tile_release();
}

}  // namespace

void panels_amx_int8(const Job& j, int p0, int p1, int M) {
    panels_amx<true>(j, p0, p1, M);
}

void panels_amx_bf16(const Job& j, int p0, int p1, int M) {
    panels_amx<false>(j, p0, p1, M);
}

}  // namespace nazar::packed_detail

NZ_PACKED_TARGET_END
#endif
