// The AMX kernel of int8 packed products (packed.h), where the CPU has AMX-INT8 and Linux granted
// this process the tile state (cpu_features.h). It reads what the AVX512-VNNI kernel reads
// (packed_int8.cpp): activation rows quantized per row and offset to unsigned, and W's panels,
// whose 64-byte groups (16 outputs x 4 bytes along K) are exactly the rows of an AMX B tile.
// TDPBUSD multiplies unsigned by signed bytes into int32, as vpdpbusd does, so the sums are the
// VNNI kernel's exactly, and the epilogue (C = alpha r_m s_n (Σ a_q w_q − 128 Σ w_q) + beta C) is
// the same arithmetic: the two kernels give the same bits (tests/unit/test_gemm_packed.cpp).
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

NZ_PACKED_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,amx-tile,amx-int8")

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
#define NZ_AMX_PANEL(q, a, b, w) \
    do {                         \
        _tile_loadd(b, w, 64);   \
        _tile_dpbusd(q, a, b);   \
    } while (0)

// NP panels from p0 for rows [m0, m0 + mb): their int32 sums into out[q] (mb rows of 16).
template <int NP>
void sums(const Job& j, int m0, int p0, int32_t (*out)[16][16]) {
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

// The epilogue of packed_int8.cpp (Int8Ops::finish and block's stores), value for value.
void finish(const Job& j, int m0, int mb, int p0, int np, int32_t (*res)[16][16]) {
    for (int q = 0; q < np; ++q) {
        const int p = p0 + q;
        const bool full = p * 16 >= j.n0 && p * 16 + 16 <= j.n1;
        if (!full) {
            for (int i = 0; i < mb; ++i) store_scalar(j, m0 + i, p, res[q][i]);
            continue;
        }
        const __m512i corr = _mm512_slli_epi32(_mm512_loadu_si512(j.sum + p * 16), 7);
        const __m512 ws = _mm512_loadu_ps(j.W->scales() + p * 16);
        for (int i = 0; i < mb; ++i) {
            const int m = m0 + i;
            const __m512 d =
                _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(res[q][i]), corr));
            __m512 x =
                _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(j.alpha * j.act->scale[m])), ws);
            float* c = j.C + static_cast<int64_t>(m) * j.ldc + (p * 16 - j.n0);
            if (j.beta != 0.0f)
                x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(j.beta), _mm512_loadu_ps(c)));
            _mm512_storeu_ps(c, x);
        }
    }
}

}  // namespace

void panels_amx_int8(const Job& j, int p0, int p1, int M) {
    // Panels outer, rows inner: a group of 4 panels (K x 64 bytes: 32 KB at K = 512) is read from
    // memory once and reused from L1/L2 by every block of 16 rows. The full blocks share one tile
    // configuration, the last partial block has its own.
    alignas(64) int32_t res[4][16][16];
    const int full = M / 16, rest = M % 16;
    for (const int mb : {16, rest}) {
        if (mb == 0 || (mb == 16 && full == 0)) continue;
        const int b0 = mb == 16 ? 0 : full, b1 = mb == 16 ? full : full + 1;
        configure(mb, j.ng % 16);
        for (int p = p0; p < p1; p += 4) {
            const int np = std::min(4, p1 - p);
            for (int b = b0; b < b1; ++b) {
                const int m0 = b * 16;
                switch (np) {
                    case 1:
                        sums<1>(j, m0, p, res);
                        break;
                    case 2:
                        sums<2>(j, m0, p, res);
                        break;
                    case 3:
                        sums<3>(j, m0, p, res);
                        break;
                    default:
                        sums<4>(j, m0, p, res);
                }
                finish(j, m0, mb, p, np, res);
            }
        }
    }
    _tile_release();
}

}  // namespace nazar::packed_detail

NZ_PACKED_TARGET_END
#endif
