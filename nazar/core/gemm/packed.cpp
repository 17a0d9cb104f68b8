// Packed bf16 / int8 weights and their products (packed.h): PackedMatrix, the gemm_packed
// driver (activations, the split over the pool) and its portable path. The fast kernels are
// packed_int8.cpp and packed_bf16.cpp (one register block, packed_block.h); the registry gemm
// consults is packed_registry.cpp.
#include "nazar/core/gemm/packed.h"

#include "nazar/core/check.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/gemm/packed_internal.h"
#include "nazar/core/threads.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace nazar {

using packed_detail::Activations;
using packed_detail::Job;
using packed_detail::store_scalar;

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
std::atomic<bool> g_amx_allowed{!switches().amx_off};

// From how many rows a product runs on AMX tiles (docs/performance.md, "bf16 and int8 inference").
constexpr int kAmxMinRowsInt8 = 8, kAmxMinRowsBf16 = 1;

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

bool amx_has(Precision p) {
    const CpuFeatures& f = cpu_features();
    return p == Precision::int8 ? f.amx_int8 : p == Precision::bf16 && f.amx_bf16;
}

int amx_min_rows(Precision p) {
    return p == Precision::int8 ? kAmxMinRowsInt8 : kAmxMinRowsBf16;
}

bool use_amx(Precision p, int M) {
    return M >= amx_min_rows(p) && g_amx_allowed.load(std::memory_order_relaxed) && amx_has(p) &&
           use_fast(p);
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
    data_.assign(panels * static_cast<std::size_t>(G_) * 64, '\0');
    if (p == Precision::int8) scales_.assign(N, 0.0f);
}

uint8_t* PackedMatrix::at_byte(int n, int k) {
    const int gs = per_group(precision_);
    const std::size_t off =
        (static_cast<std::size_t>(n / 16) * G_ + k / gs) * 64 + (n % 16) * 4 + (k % gs) * (4 / gs);
    return bytes_data() + off;
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

PackedMatrix PackedMatrix::adopt_rows(Precision p, std::string&& rows, const float* scales, int N,
                                      int K) {
    NZ_CHECK(p != Precision::fp32, "PackedMatrix: fp32 weights are not packed");
    NZ_CHECK(N > 0 && K > 0, "PackedMatrix: sizes must be positive, got {} x {}", N, K);
    const bool int8 = p == Precision::int8;
    const std::size_t row_bytes = static_cast<std::size_t>(K) * (int8 ? 1 : 2);
    NZ_CHECK(rows.size() == static_cast<std::size_t>(N) * row_bytes,
             "PackedMatrix::adopt_rows: {} bytes for {} x {} {}", rows.size(), N, K,
             int8 ? "int8" : "bf16");
    if (K % per_group(p) != 0)
        return int8 ? from_int8(reinterpret_cast<const int8_t*>(rows.data()), scales, N, K)
                    : from_bf16(reinterpret_cast<const uint16_t*>(rows.data()), N, K);
    PackedMatrix m;
    m.precision_ = p;
    m.N_ = N;
    m.K_ = K;
    m.G_ = K / per_group(p);  // a row is G groups of 4 bytes: row_bytes = 4·G
    const std::size_t panels = (static_cast<std::size_t>(N) + 15) / 16,
                      panel_bytes = 16 * row_bytes;
    rows.resize(panels * panel_bytes, '\0');  // the last panel's missing rows: zeros
    std::vector<uint8_t> rows_of_panel(panel_bytes);
    uint8_t* const base = reinterpret_cast<uint8_t*>(rows.data());
    for (std::size_t q = 0; q < panels; ++q) {
        // rows 16q .. 16q+15, row-major, become group g of row r at g·64 + r·4 (at_byte)
        uint8_t* const panel = base + q * panel_bytes;
        std::memcpy(rows_of_panel.data(), panel, panel_bytes);
        for (int r = 0; r < 16; ++r)
            for (int g = 0; g < m.G_; ++g)
                std::memcpy(panel + g * 64 + r * 4, rows_of_panel.data() + r * row_bytes + g * 4,
                            4);
    }
    m.data_ = std::move(rows);
    if (int8) m.scales_.assign(scales, scales + N);
    return m;
}

PackedMatrix PackedMatrix::select_rows(std::span<const int32_t> rows) const {
    NZ_CHECK(!rows.empty(), "PackedMatrix::select_rows: no rows");
    PackedMatrix m;
    m.alloc(precision_, static_cast<int>(rows.size()), K_);
    for (std::size_t j = 0; j < rows.size(); ++j) {
        const int n = rows[j];
        NZ_CHECK(n >= 0 && n < N_, "PackedMatrix::select_rows: row {} of {}", n, N_);
        // row n: 4 bytes per group, at lane n % 16 of panel n / 16
        const uint8_t* src =
            bytes_data() + static_cast<std::size_t>(n / 16) * G_ * 64 + (n % 16) * 4;
        uint8_t* dst = m.bytes_data() + (j / 16) * static_cast<std::size_t>(G_) * 64 + (j % 16) * 4;
        for (int g = 0; g < G_; ++g) std::memcpy(dst + g * 64, src + g * 64, 4);
        if (precision_ == Precision::int8) m.scales_[j] = scales_[n];
    }
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
// Activations (packed_internal.h) and the portable path.

namespace {

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
                    packed_detail::prepare_row_int8(a, k, off, out, &act.scale[m]);
                else
                    packed_detail::prepare_row_bf16(a, k, off, out);
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

}  // namespace

void packed_detail::store_scalar(const Job& j, int m, int p, const void* v) {
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
#ifdef NZ_PACKED_X86
    const bool amx = fast && use_amx(p, M);  // decided once for every panel block
#endif
    const auto run = [&](int q0, int q1) {
#ifdef NZ_PACKED_X86
        if (amx)
            return p == Precision::int8 ? packed_detail::panels_amx_int8(j, q0, q1, M)
                                        : packed_detail::panels_amx_bf16(j, q0, q1, M);
        if (fast)
            return p == Precision::int8 ? packed_detail::panels_int8(j, q0, q1, M)
                                        : packed_detail::panels_bf16(j, q0, q1, M);
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

const char* packed_kernel(Precision p, int M) {
    if (use_amx(p, M)) return p == Precision::int8 ? "amx-int8" : "amx-bf16";
    return packed_kernel(p);
}

int packed_amx_min_rows(Precision p) {
    return amx_min_rows(p);
}

bool packed_amx_available(Precision p) {
    return p != Precision::fp32 && cpu_has(p) && amx_has(p);
}

bool set_packed_amx(bool allowed) {
    return g_amx_allowed.exchange(allowed);
}

void set_packed_fast(bool allowed) {
    g_fast_allowed.store(allowed);
}

bool packed_fast_available(Precision p) {
    return p != Precision::fp32 && cpu_has(p);
}

}  // namespace nazar
