// Packed bf16 / int8 weights and their products (packed.h).
#include "nazar/core/gemm/packed.h"

#include "nazar/core/check.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/threads.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NZ_PACKED_X86 1
#define NZ_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define NZ_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#endif

namespace nazar {

const char* precision_name(Precision p) {
    switch (p) {
        case Precision::fp32:
            return "fp32";
        case Precision::bf16:
            return "bf16";
        case Precision::int8:
            return "int8";
    }
    return "?";
}

Precision parse_precision(std::string_view s) {
    if (s == "fp32") return Precision::fp32;
    if (s == "bf16") return Precision::bf16;
    if (s == "int8") return Precision::int8;
    NZ_FAIL("precision must be one of fp32, bf16, int8; got '{}'", s);
}

uint16_t float_to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
        return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

namespace {

// Bytes per group along K: 2 bf16 or 4 int8 values.
int per_group(Precision p) {
    return p == Precision::int8 ? 4 : 2;
}

std::atomic<bool> g_fast_allowed{true};

bool cpu_has(Precision p) {
    const CpuFeatures& f = cpu_features();
    if (!avx512_allowed() || !f.avx512bw || !f.avx512vl) return false;
    if (p == Precision::int8) return f.avx512_vnni;
    if (p == Precision::bf16) return f.avx512_bf16;
    return false;
}

bool use_fast(Precision p) {
#ifdef NZ_PACKED_X86
    return g_fast_allowed.load(std::memory_order_relaxed) && cpu_has(p);
#else
    (void)p;
    return false;
#endif
}

// Once per process and precision: say that the portable path runs, and why.
void report_portable_once(Precision p) {
    static std::once_flag once_bf16, once_int8;
    std::call_once(p == Precision::int8 ? once_int8 : once_bf16, [p] {
        std::fprintf(stderr,
                     "nazar: %s weight products run on the portable (slower) path: this CPU "
                     "lacks %s (or NAZAR_ISA=avx2)\n",
                     precision_name(p),
                     p == Precision::int8 ? "AVX512-VNNI with AVX-512 F/BW/VL/DQ"
                                          : "AVX512-BF16 with AVX-512 F/BW/VL/DQ");
    });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PackedMatrix

struct PackedMatrix::SumCache {
    std::mutex mu;
    std::map<std::pair<int, int>, std::vector<int32_t>> sums;
};

PackedMatrix::PackedMatrix() : sums_(std::make_unique<SumCache>()) {}
PackedMatrix::~PackedMatrix() = default;
PackedMatrix::PackedMatrix(PackedMatrix&&) noexcept = default;
PackedMatrix& PackedMatrix::operator=(PackedMatrix&&) noexcept = default;

void PackedMatrix::alloc(Precision p, int N, int K) {
    NZ_CHECK(p != Precision::fp32, "PackedMatrix: fp32 weights are not packed");
    NZ_CHECK(N > 0 && K > 0, "PackedMatrix: sizes must be positive, got {} x {}", N, K);
    precision_ = p;
    N_ = N;
    K_ = K;
    G_ = (K + per_group(p) - 1) / per_group(p);
    const std::size_t panels = (static_cast<std::size_t>(N) + 15) / 16;
    data_.assign(panels * static_cast<std::size_t>(G_) * 64, 0);
    if (p == Precision::int8) scales_.assign(N, 0.0f);
}

uint8_t* PackedMatrix::at_byte(int n, int k) {
    const int gs = per_group(precision_);
    const std::size_t off =
        (static_cast<std::size_t>(n / 16) * G_ + k / gs) * 64 + (n % 16) * 4 + (k % gs) * (4 / gs);
    return data_.data() + off;
}

PackedMatrix PackedMatrix::pack(const float* w, int N, int K, int ldw, Precision p) {
    PackedMatrix m;
    m.alloc(p, N, K);
    parallel_for(N, 64, [&](int64_t r0, int64_t r1) {
        for (int n = static_cast<int>(r0); n < r1; ++n) {
            const float* row = w + static_cast<int64_t>(n) * ldw;
            if (p == Precision::bf16) {
                for (int k = 0; k < K; ++k) {
                    const uint16_t b = float_to_bf16(row[k]);
                    std::memcpy(m.at_byte(n, k), &b, 2);
                }
                continue;
            }
            float amax = 0;
            for (int k = 0; k < K; ++k) amax = std::max(amax, std::fabs(row[k]));
            const float s = amax / 127.0f;
            m.scales_[n] = s;
            const float inv = amax > 0 ? 127.0f / amax : 0.0f;
            for (int k = 0; k < K; ++k) {
                const float q = std::clamp(std::nearbyint(row[k] * inv), -127.0f, 127.0f);
                *reinterpret_cast<int8_t*>(m.at_byte(n, k)) = static_cast<int8_t>(q);
            }
        }
    });
    return m;
}

PackedMatrix PackedMatrix::from_int8(const int8_t* q, const float* scales, int N, int K) {
    PackedMatrix m;
    m.alloc(Precision::int8, N, K);
    for (int n = 0; n < N; ++n) {
        m.scales_[n] = scales[n];
        for (int k = 0; k < K; ++k)
            *reinterpret_cast<int8_t*>(m.at_byte(n, k)) = q[static_cast<int64_t>(n) * K + k];
    }
    return m;
}

PackedMatrix PackedMatrix::from_bf16(const uint16_t* b, int N, int K) {
    PackedMatrix m;
    m.alloc(Precision::bf16, N, K);
    for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k)
            std::memcpy(m.at_byte(n, k), b + static_cast<int64_t>(n) * K + k, 2);
    return m;
}

std::size_t PackedMatrix::bytes() const {
    return data_.size() + scales_.size() * sizeof(float);
}

int8_t PackedMatrix::q(int n, int k) const {
    NZ_CHECK(precision_ == Precision::int8, "PackedMatrix::q: not int8");
    return *reinterpret_cast<const int8_t*>(const_cast<PackedMatrix*>(this)->at_byte(n, k));
}

uint16_t PackedMatrix::bf16(int n, int k) const {
    NZ_CHECK(precision_ == Precision::bf16, "PackedMatrix::bf16: not bf16");
    uint16_t b;
    std::memcpy(&b, const_cast<PackedMatrix*>(this)->at_byte(n, k), 2);
    return b;
}

float PackedMatrix::value(int n, int k) const {
    return precision_ == Precision::int8 ? static_cast<float>(q(n, k)) : bf16_to_float(bf16(n, k));
}

void PackedMatrix::dequantize_row(int n, float* out) const {
    for (int k = 0; k < K_; ++k)
        out[k] = precision_ == Precision::int8 ? static_cast<float>(q(n, k)) * scales_[n]
                                               : bf16_to_float(bf16(n, k));
}

const int32_t* PackedMatrix::group_sums(int g0, int g1) const {
    std::lock_guard<std::mutex> lock(sums_->mu);
    auto it = sums_->sums.find({g0, g1});
    if (it != sums_->sums.end()) return it->second.data();
    const int panels = (N_ + 15) / 16;
    std::vector<int32_t> s(static_cast<std::size_t>(panels) * 16, 0);
    for (int p = 0; p < panels; ++p) {
        const int8_t* w = reinterpret_cast<const int8_t*>(panel(p));
        for (int g = g0; g < g1; ++g)
            for (int j = 0; j < 16; ++j)
                for (int b = 0; b < 4; ++b) s[p * 16 + j] += w[g * 64 + j * 4 + b];
    }
    return sums_->sums.emplace(std::make_pair(g0, g1), std::move(s)).first->second.data();
}

// ---------------------------------------------------------------------------------------------
// Activations, made once per call: rows of 4-byte groups covering W's groups [g0, g0 + ng);
// column k of the block sits at position off + k, off = k0 % per_group (positions outside the
// block hold a neutral value: bf16 0, int8 unsigned 128 = signed 0).

namespace {

struct Activations {
    std::vector<uint8_t> data;  // M x (4 ng) bytes
    std::vector<float> scale;   // int8: r_m per row
    int stride = 0;             // bytes per row
};

void prepare_row_portable(Precision p, const float* a, int k, int off, uint8_t* out, float* r) {
    if (p == Precision::bf16) {
        for (int i = 0; i < k; ++i) {
            const uint16_t b = float_to_bf16(a[i]);
            std::memcpy(out + 2 * (off + i), &b, 2);
        }
        return;
    }
    float amax = 0;
    for (int i = 0; i < k; ++i) amax = std::max(amax, std::fabs(a[i]));
    *r = amax / 127.0f;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    for (int i = 0; i < k; ++i) {
        const float q = std::clamp(std::nearbyint(a[i] * inv), -127.0f, 127.0f);
        out[off + i] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
}

#ifdef NZ_PACKED_X86
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// The same values as prepare_row_portable (same IEEE operations, round to nearest even).
NZ_TARGET_BF16 void prepare_row_bf16(const float* a, int k, int off, uint8_t* out) {
    uint16_t* o = reinterpret_cast<uint16_t*>(out) + off;
    int i = 0;
    for (; i + 32 <= k; i += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(a + i));
        _mm512_storeu_si512(o + i, reinterpret_cast<const __m512i&>(v));
    }
    for (; i < k; ++i) o[i] = float_to_bf16(a[i]);
}

NZ_TARGET_VNNI void prepare_row_int8(const float* a, int k, int off, uint8_t* out, float* r) {
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
#pragma GCC diagnostic pop
#endif

void prepare(Precision p, bool fast, int M, const float* A, int lda, int k, int off, int ng,
             Activations& act) {
    act.stride = 4 * ng;
    act.data.resize(static_cast<std::size_t>(M) * act.stride);
    act.scale.resize(M);
    const uint8_t neutral = p == Precision::int8 ? 128 : 0;
    const auto rows = [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
            uint8_t* out = act.data.data() + m * act.stride;
            const float* a = A + m * lda;
            std::memset(out, neutral, off * (p == Precision::int8 ? 1 : 2));
            const int used = (off + k) * (p == Precision::int8 ? 1 : 2);
            std::memset(out + used, neutral, act.stride - used);
#ifdef NZ_PACKED_X86
            if (fast) {
                if (p == Precision::int8)
                    prepare_row_int8(a, k, off, out, &act.scale[m]);
                else
                    prepare_row_bf16(a, k, off, out);
                continue;
            }
#endif
            prepare_row_portable(p, a, k, off, out, &act.scale[m]);
        }
    };
    (void)fast;
    if (static_cast<int64_t>(M) * k < (1 << 16))
        rows(0, M);
    else
        parallel_for(M, 8, rows);
}

// What one product needs besides the activations.
struct Job {
    Precision p;
    const PackedMatrix* W;
    const Activations* act;
    int g0, ng;          // W's groups
    const int32_t* sum;  // int8: Σ w_q over the groups, per row of W
    int n0, n1;          // rows of W = columns of C
    float alpha, beta;
    float* C;
    int ldc;
};

// One 16-wide output value set: C[m][n - n0] for the in-range n of panel p, from v[16] (int32
// sums for int8, fp32 sums for bf16). The portable path and the fast kernels both end here
// (the fast kernels only when the panel is partial), so the epilogues agree.
void store_scalar(const Job& j, int m, int p, const void* v) {
    for (int l = 0; l < 16; ++l) {
        const int n = p * 16 + l;
        if (n < j.n0 || n >= j.n1) continue;
        float x;
        if (j.p == Precision::int8) {
            const int32_t d = static_cast<const int32_t*>(v)[l] - 128 * j.sum[n];
            x = static_cast<float>(d) * (j.alpha * j.act->scale[m]) * j.W->scales()[n];
        } else {
            x = static_cast<const float*>(v)[l] * j.alpha;
        }
        float& c = j.C[static_cast<int64_t>(m) * j.ldc + (n - j.n0)];
        c = j.beta == 0.0f ? x : x + j.beta * c;
    }
}

void panels_portable(const Job& j, int p0, int p1, int M) {
    for (int p = p0; p < p1; ++p) {
        const uint8_t* w = j.W->panel(p) + static_cast<std::size_t>(j.g0) * 64;
        for (int m = 0; m < M; ++m) {
            const uint8_t* a = j.act->data.data() + static_cast<std::size_t>(m) * j.act->stride;
            if (j.p == Precision::int8) {
                int32_t v[16] = {};
                for (int g = 0; g < j.ng; ++g)
                    for (int l = 0; l < 16; ++l)
                        for (int b = 0; b < 4; ++b)
                            v[l] += static_cast<int32_t>(a[4 * g + b]) *
                                    static_cast<int8_t>(w[g * 64 + l * 4 + b]);
                store_scalar(j, m, p, v);
            } else {
                float v[16] = {};
                for (int g = 0; g < j.ng; ++g)
                    for (int l = 0; l < 16; ++l)
                        for (int b = 0; b < 2; ++b) {
                            uint16_t x, y;
                            std::memcpy(&x, a + 4 * g + 2 * b, 2);
                            std::memcpy(&y, w + g * 64 + l * 4 + 2 * b, 2);
                            v[l] += bf16_to_float(x) * bf16_to_float(y);
                        }
                store_scalar(j, m, p, v);
            }
        }
    }
}

#ifdef NZ_PACKED_X86
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

inline int32_t load32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// MB rows of A (from m0) against NP panels (from p0): MB x NP accumulators of 16 outputs.
template <int MB, int NP>
NZ_TARGET_VNNI void block_int8(const Job& j, int m0, int p0) {
    __m512i acc[MB][NP];
    for (int i = 0; i < MB; ++i)
        for (int q = 0; q < NP; ++q) acc[i][q] = _mm512_setzero_si512();
    const uint8_t* w[NP];
    for (int q = 0; q < NP; ++q) w[q] = j.W->panel(p0 + q) + static_cast<std::size_t>(j.g0) * 64;
    const uint8_t* a[MB];
    for (int i = 0; i < MB; ++i)
        a[i] = j.act->data.data() + static_cast<std::size_t>(m0 + i) * j.act->stride;
    for (int g = 0; g < j.ng; ++g) {
        __m512i wv[NP];
        for (int q = 0; q < NP; ++q) wv[q] = _mm512_loadu_si512(w[q] + g * 64);
        for (int i = 0; i < MB; ++i) {
            const __m512i av = _mm512_set1_epi32(load32(a[i] + 4 * g));
            for (int q = 0; q < NP; ++q) acc[i][q] = _mm512_dpbusd_epi32(acc[i][q], av, wv[q]);
        }
    }
    for (int q = 0; q < NP; ++q) {
        const int p = p0 + q;
        const bool full = p * 16 >= j.n0 && p * 16 + 16 <= j.n1;
        const __m512i corr = _mm512_slli_epi32(_mm512_loadu_si512(j.sum + p * 16), 7);
        // scales: N floats, read 16 at a time only for panels wholly inside [n0, n1)
        const __m512 ws = full ? _mm512_loadu_ps(j.W->scales() + p * 16) : _mm512_setzero_ps();
        for (int i = 0; i < MB; ++i) {
            const int m = m0 + i;
            if (!full) {
                alignas(64) int32_t v[16];
                _mm512_store_si512(v, acc[i][q]);
                store_scalar(j, m, p, v);
                continue;
            }
            const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][q], corr));
            __m512 x =
                _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(j.alpha * j.act->scale[m])), ws);
            float* c = j.C + static_cast<int64_t>(m) * j.ldc + (p * 16 - j.n0);
            if (j.beta != 0.0f)
                x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(j.beta), _mm512_loadu_ps(c)));
            _mm512_storeu_ps(c, x);
        }
    }
}

template <int MB, int NP>
NZ_TARGET_BF16 void block_bf16(const Job& j, int m0, int p0) {
    __m512 acc[MB][NP];
    for (int i = 0; i < MB; ++i)
        for (int q = 0; q < NP; ++q) acc[i][q] = _mm512_setzero_ps();
    const uint8_t* w[NP];
    for (int q = 0; q < NP; ++q) w[q] = j.W->panel(p0 + q) + static_cast<std::size_t>(j.g0) * 64;
    const uint8_t* a[MB];
    for (int i = 0; i < MB; ++i)
        a[i] = j.act->data.data() + static_cast<std::size_t>(m0 + i) * j.act->stride;
    for (int g = 0; g < j.ng; ++g) {
        __m512bh wv[NP];
        for (int q = 0; q < NP; ++q) {
            const __m512i x = _mm512_loadu_si512(w[q] + g * 64);
            wv[q] = reinterpret_cast<const __m512bh&>(x);
        }
        for (int i = 0; i < MB; ++i) {
            const __m512i x = _mm512_set1_epi32(load32(a[i] + 4 * g));
            const __m512bh av = reinterpret_cast<const __m512bh&>(x);
            for (int q = 0; q < NP; ++q) acc[i][q] = _mm512_dpbf16_ps(acc[i][q], av, wv[q]);
        }
    }
    for (int q = 0; q < NP; ++q) {
        const int p = p0 + q;
        const bool full = p * 16 >= j.n0 && p * 16 + 16 <= j.n1;
        for (int i = 0; i < MB; ++i) {
            const int m = m0 + i;
            if (!full) {
                alignas(64) float v[16];
                _mm512_store_ps(v, acc[i][q]);
                store_scalar(j, m, p, v);
                continue;
            }
            __m512 x = _mm512_mul_ps(acc[i][q], _mm512_set1_ps(j.alpha));
            float* c = j.C + static_cast<int64_t>(m) * j.ldc + (p * 16 - j.n0);
            if (j.beta != 0.0f)
                x = _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(j.beta), _mm512_loadu_ps(c)));
            _mm512_storeu_ps(c, x);
        }
    }
}
#pragma GCC diagnostic pop

constexpr int kMaxMB = 6, kNP = 4;

template <int MB>
void block_rows(const Job& j, int m0, int p0, int np) {
    const bool i8 = j.p == Precision::int8;
    switch (np) {
        case 1:
            return i8 ? block_int8<MB, 1>(j, m0, p0) : block_bf16<MB, 1>(j, m0, p0);
        case 2:
            return i8 ? block_int8<MB, 2>(j, m0, p0) : block_bf16<MB, 2>(j, m0, p0);
        case 3:
            return i8 ? block_int8<MB, 3>(j, m0, p0) : block_bf16<MB, 3>(j, m0, p0);
        default:
            return i8 ? block_int8<MB, 4>(j, m0, p0) : block_bf16<MB, 4>(j, m0, p0);
    }
}

void block(const Job& j, int m0, int mb, int p0, int np) {
    switch (mb) {
        case 1:
            return block_rows<1>(j, m0, p0, np);
        case 2:
            return block_rows<2>(j, m0, p0, np);
        case 3:
            return block_rows<3>(j, m0, p0, np);
        case 4:
            return block_rows<4>(j, m0, p0, np);
        case 5:
            return block_rows<5>(j, m0, p0, np);
        default:
            return block_rows<6>(j, m0, p0, np);
    }
}

// Panels [p0, p1) for all M rows: kNP panels at a time (kept in L1/L2 while the rows pass).
void panels_fast(const Job& j, int p0, int p1, int M) {
    // rows in blocks of at most kMaxMB, as even as possible (5 beams: one block of 5)
    const int nb = (M + kMaxMB - 1) / kMaxMB;
    for (int p = p0; p < p1; p += kNP) {
        const int np = std::min(kNP, p1 - p);
        for (int b = 0, m = 0; b < nb; ++b) {
            const int mb = (M - m) / (nb - b) + ((M - m) % (nb - b) != 0);
            block(j, m, mb, p, np);
            m += mb;
        }
    }
}
#endif

}  // namespace

void gemm_packed(int M, int n0, int n1, int k0, int k, float alpha, const float* A, int lda,
                 const PackedMatrix& W, float beta, float* C, int ldc) {
    const Precision p = W.precision();
    NZ_CHECK(p != Precision::fp32, "gemm_packed: matrix not packed");
    NZ_CHECK(0 <= n0 && n0 <= n1 && n1 <= W.rows() && 0 <= k0 && k >= 0 && k0 + k <= W.cols(),
             "gemm_packed: rows [{}, {}) columns [{}, {}) outside W ({} x {})", n0, n1, k0, k0 + k,
             W.rows(), W.cols());
    if (M == 0 || n0 == n1) return;
    const int N = n1 - n0;
    if (k == 0) {
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                float& c = C[static_cast<int64_t>(m) * ldc + n];
                c = beta == 0.0f ? 0.0f : beta * c;
            }
        return;
    }
    const bool fast = use_fast(p);
    if (!fast) report_portable_once(p);
    const int gs = per_group(p), off = k0 % gs, g0 = k0 / gs, ng = (off + k + gs - 1) / gs;
    thread_local Activations act;
    prepare(p, fast, M, A, lda, k, off, ng, act);
    Job j{p, &W, &act, g0, ng, nullptr, n0, n1, alpha, beta, C, ldc};
    if (p == Precision::int8) j.sum = W.group_sums(g0, g0 + ng);
    const int pa = n0 / 16, pb = (n1 + 15) / 16;
    const auto run = [&](int q0, int q1) {
#ifdef NZ_PACKED_X86
        if (fast) return panels_fast(j, q0, q1, M);
#endif
        panels_portable(j, q0, q1, M);
    };
    if (num_threads() < 2 || 2.0 * M * N * k < gemm_detail::kSplitFlops) {
        run(pa, pb);
        return;
    }
    // blocks of 4 panels (64 outputs) over the pool
    const int units = (pb - pa + 3) / 4;
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) {
        run(pa + static_cast<int>(u0) * 4, std::min(pb, pa + static_cast<int>(u1) * 4));
    });
}

const char* packed_kernel(Precision p) {
    if (p == Precision::fp32) return "fp32";
    if (use_fast(p)) return p == Precision::int8 ? "avx512-vnni" : "avx512-bf16";
    return "portable";
}

void set_packed_fast(bool allowed) {
    g_fast_allowed.store(allowed);
}

bool packed_fast_available(Precision p) {
    return p != Precision::fp32 && cpu_has(p);
}

// ---------------------------------------------------------------------------------------------
// The registry behind gemm's packed path.

namespace {

struct Entry {
    int N = 0, K = 0;
    std::shared_ptr<const PackedMatrix> m;
};

struct Registry {
    std::shared_mutex mu;
    std::map<const float*, Entry, std::less<>> entries;
    std::atomic<int> count{0};
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

namespace gemm_detail {

bool any_packed() {
    return registry().count.load(std::memory_order_acquire) > 0;
}

const PackedMatrix* find_packed(const float* B, int ldb, int* n0, int* k0) {
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    auto it = r.entries.upper_bound(B);
    if (it == r.entries.begin()) return nullptr;
    --it;
    const Entry& e = it->second;
    const std::less<const float*> lt;
    if (!lt(B, it->first + static_cast<int64_t>(e.N) * e.K) || ldb != e.K) return nullptr;
    const int64_t off = B - it->first;
    *n0 = static_cast<int>(off / e.K);
    *k0 = static_cast<int>(off % e.K);
    return e.m.get();
}

bool try_packed(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc) {
    if (!any_packed()) return false;
    int n0 = 0, k0 = 0;
    const PackedMatrix* m = find_packed(B, ldb, &n0, &k0);
    if (!m || n0 + N > m->rows() || k0 + K > m->cols()) return false;
    GemmProfile* prof = profile();
    const auto t0 =
        prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    gemm_packed(M, n0, n0 + N, k0, K, alpha, A, lda, *m, beta, C, ldc);
    if (prof)
        profile_add(prof, false, true, M, N, K,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                    true, false);
    return true;
}

}  // namespace gemm_detail

PackedWeights::~PackedWeights() {
    clear();
}

void PackedWeights::add(const float* w, int N, int K, Precision p) {
    add(w, PackedMatrix::pack(w, N, K, K, p));
}

void PackedWeights::add(const float* w, PackedMatrix m) {
    NZ_CHECK(w != nullptr, "PackedWeights::add: null matrix");
    Registry& r = registry();
    std::unique_lock lock(r.mu);
    const int N = m.rows(), K = m.cols();
    const bool fresh =
        r.entries.emplace(w, Entry{N, K, std::make_shared<const PackedMatrix>(std::move(m))})
            .second;
    NZ_CHECK(fresh, "PackedWeights::add: matrix {} registered twice", static_cast<const void*>(w));
    entries_.push_back(w);
    r.count.fetch_add(1, std::memory_order_release);
}

std::size_t PackedWeights::bytes() const {
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    std::size_t b = 0;
    for (const float* w : entries_) b += r.entries.at(w).m->bytes();
    return b;
}

void PackedWeights::clear() {
    Registry& r = registry();
    std::unique_lock lock(r.mu);
    for (const float* w : entries_) {
        r.entries.erase(w);
        r.count.fetch_sub(1, std::memory_order_release);
    }
    entries_.clear();
}

}  // namespace nazar
