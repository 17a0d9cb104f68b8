// gemm_bf16 and the precision switch of gemm (bf16.h): which kernel runs a bf16 product, the
// fallback, and the per-scope cache of packed constant operands (the model's weights).
#include "nazar/core/gemm/bf16.h"

#include "nazar/core/check.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/bf16_internal.h"
#include "nazar/core/gemm/internal.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace nazar {

using namespace bf16_detail;

uint16_t bf16_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

float bf16_value(uint16_t bits) {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

bool bf16_fast_available() {
    return cpu_features().avx512_bf16 && avx512_allowed();
}

bool bf16_onednn_available() {
    return onednn_bf16_built();
}

Bf16Kernel bf16_auto_kernel() {
    if (cpu_features().amx_bf16 && avx512_allowed() && onednn_bf16_built())
        return Bf16Kernel::onednn;
    return bf16_fast_available() ? Bf16Kernel::avx512_bf16 : Bf16Kernel::fallback;
}

std::string bf16_description() {
    switch (bf16_auto_kernel()) {
        case Bf16Kernel::onednn:
            return "oneDNN bf16 matmul (AMX-BF16 usable)";
        case Bf16Kernel::avx512_bf16:
            return "nazar AVX512-BF16 kernel (vdpbf16ps, 12x32 tiles)";
        default:
            return "fallback: fp32 arithmetic on bf16-rounded inputs (no AVX512-BF16 usable here)";
    }
}

namespace {

// op(X) of a rows x cols view rounded to bf16 values held in fp32, contiguous (ld = cols).
std::vector<float> rounded(const float* x, int rows, int cols, int ld) {
    std::vector<float> out(static_cast<size_t>(rows) * cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            out[static_cast<size_t>(r) * cols + c] =
                bf16_round(x[static_cast<int64_t>(r) * ld + c]);
    return out;
}

void fallback(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc) {
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    const std::vector<float> a = rounded(A, ar, ac, lda), b = rounded(B, br, bc, ldb);
    gemm_detail::gemm_fp32(ta, tb, M, N, K, alpha, a.data(), ac, b.data(), bc, beta, C, ldc);
}

void report_fallback_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        std::fprintf(stderr,
                     "nazar: bf16 products run as fp32 arithmetic on bf16-rounded inputs: this CPU "
                     "%s (correct, but slower than fp32)\n",
                     cpu_features().avx512_bf16 ? "has AVX512-BF16 but NAZAR_ISA=avx2 caps it"
                                                : "has no AVX512-BF16");
    });
}

void on_nazar(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc, const PackedB* packed_b) {
    PackedA pa;
    pack_a(ta, M, K, A, lda, pa);
    if (packed_b) return gemm_packed(pa, *packed_b, alpha, beta, C, ldc);
    PackedB pb;
    pack_b(tb, K, N, B, ldb, pb);
    gemm_packed(pa, pb, alpha, beta, C, ldc);
}

// C = beta C for K = 0 (no product terms).
void scale_only(int M, int N, float beta, float* C, int ldc) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float& c = C[static_cast<int64_t>(i) * ldc + j];
            c = beta == 0.0f ? 0.0f : beta * c;
        }
}

// ---- the precision switch ----
std::atomic<int> g_precision{0};

struct ScopeState {
    std::vector<ConstantRange> constant;
    using Key = std::tuple<const float*, bool, int, int, int>;
    std::map<Key, std::shared_ptr<PackedB>> packed;
};
std::mutex g_state_mu;
ScopeState* g_state = nullptr;  // the innermost scope's, under g_state_mu

struct Counters {
    std::atomic<int64_t> products{0};
    std::atomic<double> flops{0}, seconds{0};
} g_counters;

void add(std::atomic<double>& a, double v) {
    double cur = a.load(std::memory_order_relaxed);
    while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
}

bool inside(const std::vector<ConstantRange>& rs, const float* first, const float* last) {
    for (const ConstantRange& r : rs)
        if (first >= r.begin && last <= r.begin + r.count) return true;
    return false;
}

// The scope's packed op(B) when B lies inside its constant memory (packed on first use).
std::shared_ptr<PackedB> constant_b(bool tb, int K, int N, const float* B, int ldb) {
    std::lock_guard lk(g_state_mu);
    if (!g_state) return nullptr;
    const int64_t rows = tb ? N : K, cols = tb ? K : N;
    if (!inside(g_state->constant, B, B + (rows - 1) * ldb + cols)) return nullptr;
    auto& slot = g_state->packed[{B, tb, K, N, ldb}];
    if (!slot) {
        slot = std::make_shared<PackedB>();
        pack_b(tb, K, N, B, ldb, *slot);
    }
    return slot;
}

}  // namespace

void gemm_bf16_on(Bf16Kernel kernel, bool ta, bool tb, int M, int N, int K, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) return scale_only(M, N, beta, C, ldc);
    if (kernel == Bf16Kernel::automatic) kernel = bf16_auto_kernel();
    switch (kernel) {
        case Bf16Kernel::avx512_bf16:
            NZ_CHECK(bf16_fast_available(), "gemm_bf16: the AVX512-BF16 kernel cannot run here: {}",
                     bf16_description());
            return on_nazar(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
        case Bf16Kernel::onednn:
            return gemm_onednn_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        default:
            if (!bf16_fast_available()) report_fallback_once();
            return fallback(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

void gemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
    gemm_bf16_on(Bf16Kernel::automatic, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char* precision_name(GemmPrecision p) {
    return p == GemmPrecision::bf16 ? "bf16" : "fp32";
}

GemmPrecision parse_gemm_precision(const std::string& s) {
    if (s == "fp32") return GemmPrecision::fp32;
    if (s == "bf16") return GemmPrecision::bf16;
    throw UsageError(fmt::format("precision: '{}' is not one of fp32, bf16", s));
}

Bf16Verdict bf16_verdict() {
    switch (bf16_auto_kernel()) {
        case Bf16Kernel::onednn:
            return {true, "AMX-BF16 is usable (oneDNN's bf16 matmul on tiles)"};
        case Bf16Kernel::avx512_bf16:
            if (cpu_features().vendor == "AuthenticAMD")
                return {true, "this AMD CPU's vdpbf16ps keeps up with its FMAs"};
            return {false,
                    "this CPU has AVX512-BF16 but no usable AMX: vdpbf16ps runs at half the fp32 "
                    "FMA rate (bf16 training measured at 0.54x fp32)"};
        default:
            return {false,
                    cpu_features().avx512_bf16
                        ? "NAZAR_ISA=avx2 caps AVX512-BF16 (bf16 would run on fp32 arithmetic)"
                        : "this CPU has no AVX512-BF16 (bf16 would run on fp32 arithmetic)"};
    }
}

GemmPrecision training_gemm_precision(const std::string& choice) {
    if (choice == "fp32") return GemmPrecision::fp32;
    if (choice == "bf16") return bf16_verdict().pays ? GemmPrecision::bf16 : GemmPrecision::fp32;
    if (choice == "bf16-always") return GemmPrecision::bf16;
    throw UsageError(fmt::format("precision: '{}' is not one of fp32, bf16, bf16-always", choice));
}

GemmPrecision gemm_precision() {
    return g_precision.load(std::memory_order_relaxed) ? GemmPrecision::bf16 : GemmPrecision::fp32;
}

bool bf16_product_pays(int M, int N, int K) {
    return M >= 16 && N >= 32 && K >= 32 && 2.0 * M * N * K >= 1e6;
}

struct GemmPrecisionScope::Saved {
    int precision;
    ScopeState* state;
    std::unique_ptr<ScopeState> mine;
};

GemmPrecisionScope::GemmPrecisionScope(GemmPrecision p, std::vector<ConstantRange> constant)
    : saved_(new Saved) {
    saved_->precision = g_precision.load();
    saved_->mine = std::make_unique<ScopeState>();
    saved_->mine->constant = std::move(constant);
    {
        std::lock_guard lk(g_state_mu);
        saved_->state = g_state;
        g_state = saved_->mine.get();
    }
    g_precision.store(p == GemmPrecision::bf16 ? 1 : 0);
}

GemmPrecisionScope::~GemmPrecisionScope() {
    g_precision.store(saved_->precision);
    {
        std::lock_guard lk(g_state_mu);
        g_state = saved_->state;
    }
    delete saved_;
}

std::vector<ConstantRange> constant_ranges(const ParamList& params) {
    std::vector<ConstantRange> out;
    for (const ParamRef& p : params)
        if (p.value->numel() > 0)
            out.push_back({p.value->data(), static_cast<std::size_t>(p.value->numel())});
    return out;
}

Bf16Counters bf16_counters() {
    return {g_counters.products.load(), g_counters.flops.load(), g_counters.seconds.load()};
}

namespace gemm_detail {

void gemm_bf16_scoped(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
    const auto t0 = std::chrono::steady_clock::now();
    const Bf16Kernel k = bf16_auto_kernel();
    if (k == Bf16Kernel::onednn) {
        gemm_onednn_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else if (k == Bf16Kernel::avx512_bf16) {
        const std::shared_ptr<PackedB> pb = constant_b(tb, K, N, B, ldb);
        on_nazar(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pb.get());
    } else {
        report_fallback_once();
        fallback(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    g_counters.products.fetch_add(1, std::memory_order_relaxed);
    add(g_counters.flops, 2.0 * M * N * K);
    add(g_counters.seconds,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace gemm_detail

}  // namespace nazar
