// The register block of both fast packed kernels (packed_int8.cpp, packed_bf16.cpp): MB rows of
// activations against NP panels of W, MB x NP zmm accumulators of 16 outputs; each step
// broadcasts one 4-byte group of an activation row against a 64-byte group of each panel. Ops
// gives what differs: the accumulator type, the dot instruction (vpdpbusd / vdpbf16ps) and the
// epilogue of a full panel. Included only by those two files, after every other header and
// inside their `#pragma GCC target` region, so each compiles it for its own instruction set.
// No include guard on purpose: nothing else may include it. Everything here has internal
// linkage, so the two instruction sets' copies never meet at link time.

namespace nazar::packed_detail {
namespace {

inline int32_t load32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// The accumulators stay in registers only if every access to them has a constant index: the
// loops over i and q are unrolled completely (gcc otherwise keeps acc in memory and stores
// all of it every group), and the epilogue reads a copy, `res`.
template <class Ops, int MB, int NP>
void block(const Job& j, int m0, int p0) {
    typename Ops::Acc acc[MB][NP];
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i)
#pragma GCC unroll 8
        for (int q = 0; q < NP; ++q) acc[i][q] = Ops::zero();
    const uint8_t* w[NP];
    for (int q = 0; q < NP; ++q) w[q] = j.W->panel(p0 + q) + static_cast<std::size_t>(j.g0) * 64;
    const uint8_t* a[MB];
    for (int i = 0; i < MB; ++i)
        a[i] = j.act->data.data() + static_cast<std::size_t>(m0 + i) * j.act->stride;
    for (int g = 0; g < j.ng; ++g) {
        __m512i wv[NP];
#pragma GCC unroll 8
        for (int q = 0; q < NP; ++q) wv[q] = _mm512_loadu_si512(w[q] + g * 64);
#pragma GCC unroll 8
        for (int i = 0; i < MB; ++i) {
            const __m512i av = _mm512_set1_epi32(load32(a[i] + 4 * g));
#pragma GCC unroll 8
            for (int q = 0; q < NP; ++q) acc[i][q] = Ops::dot(acc[i][q], av, wv[q]);
        }
    }
    alignas(64) typename Ops::Acc res[MB][NP];
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i)
#pragma GCC unroll 8
        for (int q = 0; q < NP; ++q) res[i][q] = acc[i][q];
    for (int q = 0; q < NP; ++q) {
        const int p = p0 + q;
        const bool full = p * 16 >= j.n0 && p * 16 + 16 <= j.n1;
        const typename Ops::Panel pan = Ops::panel(j, p, full);
        for (int i = 0; i < MB; ++i) {
            const int m = m0 + i;
            if (!full) {
                alignas(64) typename Ops::Lane v[16];
                Ops::store(v, res[i][q]);
                store_scalar(j, m, p, v);
                continue;
            }
            __m512 x = Ops::finish(j, pan, m, res[i][q]);
            float* c = j.C + static_cast<int64_t>(m) * j.ldc + (p * 16 - j.n0);
            if (j.beta != 0.0f)
                x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(j.beta), _mm512_loadu_ps(c)));
            _mm512_storeu_ps(c, x);
        }
    }
}

constexpr int kMaxMB = 6, kNP = 4;

template <class Ops, int MB>
void block_rows(const Job& j, int m0, int p0, int np) {
    switch (np) {
        case 1:
            return block<Ops, MB, 1>(j, m0, p0);
        case 2:
            return block<Ops, MB, 2>(j, m0, p0);
        case 3:
            return block<Ops, MB, 3>(j, m0, p0);
        default:
            return block<Ops, MB, 4>(j, m0, p0);
    }
}

template <class Ops>
void block_any(const Job& j, int m0, int mb, int p0, int np) {
    switch (mb) {
        case 1:
            return block_rows<Ops, 1>(j, m0, p0, np);
        case 2:
            return block_rows<Ops, 2>(j, m0, p0, np);
        case 3:
            return block_rows<Ops, 3>(j, m0, p0, np);
        case 4:
            return block_rows<Ops, 4>(j, m0, p0, np);
        case 5:
            return block_rows<Ops, 5>(j, m0, p0, np);
        default:
            return block_rows<Ops, 6>(j, m0, p0, np);
    }
}

// Panels [p0, p1) for all M rows: kNP panels at a time (kept in L1/L2 while the rows pass).
template <class Ops>
void panels(const Job& j, int p0, int p1, int M) {
    // rows in blocks of at most kMaxMB, as even as possible (5 beams: one block of 5)
    const int nb = (M + kMaxMB - 1) / kMaxMB;
    for (int p = p0; p < p1; p += kNP) {
        const int np = std::min(kNP, p1 - p);
        for (int b = 0, m = 0; b < nb; ++b) {
            const int mb = (M - m) / (nb - b) + ((M - m) % (nb - b) != 0);
            block_any<Ops>(j, m, mb, p, np);
            m += mb;
        }
    }
}

}  // namespace
}  // namespace nazar::packed_detail
