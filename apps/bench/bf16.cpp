// `nazar bench gemm --precision bf16` and the bf16 roofline of `nazar bench train --precision
// bf16` (apps/bench/bf16.h).
#include "apps/bench/bf16.h"

#include "nazar/core/blas.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define NZ_BENCH_BF16_REG 1
#endif

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace nazar::bench {

using nlohmann::json;

namespace {

struct Operands {
    bool ta, tb;
    int M, N, K;
    Tensor a, b, c;
    WeightT wt;
    Operands(bool ta_, bool tb_, int M_, int N_, int K_)
        : ta(ta_),
          tb(tb_),
          M(M_),
          N(N_),
          K(K_),
          a({ta_ ? K_ : M_, ta_ ? M_ : K_}),
          b({tb_ ? N_ : K_, tb_ ? K_ : N_}),
          c({M_, N_}) {
        Rng rng(3);
        rng.fill_uniform(a, -1, 1);
        rng.fill_uniform(b, -1, 1);
    }
    void fp32() {
        if (wt)
            gemm_xwt(M, N, K, 1.0f, a.data(), K, b.data(), K, weight_t_rows(wt), 0.0f, c.data(), N);
        else
            gemm_raw(ta, tb, M, N, K, 1.0f, a.data(), a.dim(1), b.data(), b.dim(1), 0.0f, c.data(),
                     N);
    }
    void on(Bf16Kernel k) {
        gemm_bf16_on(k, ta, tb, M, N, K, 1.0f, a.data(), a.dim(1), b.data(), b.dim(1), 0.0f,
                     c.data(), N);
    }
    // as inside a training step: B constant for the scope, packed on the first call only
    void scoped() {
        gemm_raw(ta, tb, M, N, K, 1.0f, a.data(), a.dim(1), b.data(), b.dim(1), 0.0f, c.data(), N);
    }
};

// Runs each variant for about min_seconds in three interleaved rounds (a loaded machine
// drifts; interleaving keeps the comparison fair) and returns each one's best rate in
// GFLOP/s (wall, all threads) and per CPU-second.
std::map<std::string, std::pair<double, double>> rates(
    double flop, double min_seconds,
    const std::vector<std::pair<std::string, std::function<void()>>>& variants) {
    std::map<std::string, std::pair<double, double>> best;
    for (const auto& [name, f] : variants) f();  // warm-up (and the constant packing)
    for (int round = 0; round < 3; ++round)
        for (const auto& [name, f] : variants) {
            int iters = 0;
            Stopwatch sw;
            sw.start();
            Timing t;
            do {
                f();
                ++iters;
                t = sw.stop();
            } while (t.wall < min_seconds / 3);
            auto& [w, c] = best[name];
            w = std::max(w, flop * iters / t.wall / 1e9);
            c = std::max(c, flop * iters / std::max(t.cpu, 1e-9) / 1e9);
        }
    return best;
}

#ifdef NZ_BENCH_BF16_REG
// Register-only loops on one thread, 24 independent accumulators (no memory traffic): what the
// instructions themselves deliver. vdpbf16ps does 32 multiply-adds (64 FLOPs) per instruction,
// vfmadd231ps 16 (32 FLOPs).
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(long n) {
    __m512 c[24];
    for (int i = 0; i < 24; ++i) c[i] = _mm512_set1_ps(static_cast<float>(i));
    __m512i a = _mm512_set1_epi32(0x3F803F80), b = _mm512_set1_epi32(0x3F003F00);
    for (long k = 0; k < n; ++k) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i)
            c[i] = _mm512_dpbf16_ps(c[i], reinterpret_cast<__m512bh>(a),
                                    reinterpret_cast<__m512bh>(b));
        asm volatile("" : "+v"(a));
    }
    for (int i = 1; i < 24; ++i) c[0] = _mm512_add_ps(c[0], c[i]);
    alignas(64) float v[16];
    _mm512_store_ps(v, c[0]);
    return v[0] + v[15];
}
__attribute__((target("avx512f"))) float fma_loop(long n) {
    __m512 c[24];
    for (int i = 0; i < 24; ++i) c[i] = _mm512_set1_ps(static_cast<float>(i));
    __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
    for (long k = 0; k < n; ++k) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) c[i] = _mm512_fmadd_ps(a, c[i], b);
        asm volatile("" : "+v"(a));
    }
    for (int i = 1; i < 24; ++i) c[0] = _mm512_add_ps(c[0], c[i]);
    alignas(64) float v[16];
    _mm512_store_ps(v, c[0]);
    return v[0] + v[15];
}
#endif

// {"vdpbf16ps", "vfmadd231ps"} GFLOP per CPU-second of one thread, interleaved, best of 3; null
// where the CPU lacks AVX512-BF16.
json instruction_peaks() {
#ifdef NZ_BENCH_BF16_REG
    if (!bf16_fast_available()) return nullptr;
    const long n = 2000000;
    double best_bf = 0, best_fma = 0;
    volatile float sink = 0;
    for (int r = 0; r < 3; ++r) {
        Stopwatch sw;
        sw.start();
        sink = sink + dpbf16_loop(n);
        const double tb = sw.stop().cpu;
        sw.start();
        sink = sink + fma_loop(n);
        const double tf = sw.stop().cpu;
        best_bf = std::max(best_bf, 24.0 * 64 * n / std::max(tb, 1e-9) / 1e9);
        best_fma = std::max(best_fma, 24.0 * 32 * n / std::max(tf, 1e-9) / 1e9);
    }
    return {{"vdpbf16ps_gflops_per_cpu_s", best_bf},
            {"vfmadd231ps_gflops_per_cpu_s", best_fma},
            {"bf16_over_fp32", best_bf / std::max(best_fma, 1e-9)}};
#else
    return nullptr;
#endif
}

json shape_rates(Operands& o, bool weight_b, double min_seconds) {
    std::vector<std::pair<std::string, std::function<void()>>> v;
    v.emplace_back("fp32", [&] { o.fp32(); });
    std::unique_ptr<GemmPrecisionScope> scope;
    if (bf16_fast_available()) {
        v.emplace_back("nazar_bf16", [&] { o.on(Bf16Kernel::avx512_bf16); });
        if (bf16_onednn_available())
            v.emplace_back("onednn_bf16", [&] { o.on(Bf16Kernel::onednn); });
    } else {
        v.emplace_back("fallback_bf16", [&] { o.on(Bf16Kernel::fallback); });
    }
    const bool pays = bf16_product_pays(o.M, o.N, o.K);
    if (weight_b && pays && bf16_fast_available())
        v.emplace_back("nazar_bf16_packed_weight", [&] {
            const GemmPrecisionScope s(GemmPrecision::bf16,
                                       {{o.b.data(), static_cast<std::size_t>(o.b.numel())}});
            o.scoped();
        });
    const auto r = rates(2.0 * o.M * o.N * o.K, min_seconds, v);
    json j = {{"M", o.M}, {"N", o.N}, {"K", o.K}, {"ta", o.ta}, {"tb", o.tb}};
    for (const auto& [name, g] : r) j[name] = {{"gflops", g.first}, {"gflops_per_cpu_s", g.second}};
    return j;
}

}  // namespace

json bf16_gemm_peak(int size) {
    Operands o(false, false, size, size, size);
    const double flop = 2.0 * size * size * size;
    std::vector<std::pair<std::string, std::function<void()>>> v;
    v.emplace_back("fp32", [&] { o.fp32(); });
    if (bf16_fast_available()) {
        v.emplace_back("nazar_bf16", [&] { o.on(Bf16Kernel::avx512_bf16); });
        if (bf16_onednn_available())
            v.emplace_back("onednn_bf16", [&] { o.on(Bf16Kernel::onednn); });
    } else {
        v.emplace_back("fallback_bf16", [&] { o.on(Bf16Kernel::fallback); });
    }
    const auto r = rates(flop, 1.5, v);
    json j = {{"M", size}, {"N", size}, {"K", size}, {"kernel", bf16_description()}};
    double peak = 0, peak_cpu = 0;
    for (const auto& [name, g] : r) {
        j[name] = {{"gflops", g.first}, {"gflops_per_cpu_s", g.second}};
        if (name != "fp32") {
            peak = std::max(peak, g.first);
            peak_cpu = std::max(peak_cpu, g.second);
        }
    }
    j["bf16_gflops"] = peak;  // the roofline: the best bf16 kernel's rate
    j["bf16_gflops_per_cpu_s"] = peak_cpu;
    j["bf16_over_fp32"] = peak / std::max(1e-9, r.at("fp32").first);
    j["instructions"] = instruction_peaks();
    return j;
}

json bench_bf16_gemm(const Preset& p, int size) {
    json j;
    j["what"] = "gemm";
    j["precision"] = "bf16";
    j["kernel"] = bf16_description();
    j["peak"] = bf16_gemm_peak(size);
    const int B = p.batch, S = 35, H = p.dec_hidden, C = 2 * p.enc_hidden, V = p.tgt_vocab,
              E = p.emb;
    struct Shape {
        const char* name;
        bool ta, tb;
        int M, N, K;
        bool weight_b, step;
    };
    const Shape shapes[] = {
        {"generator logits X Wt (256-row chunk)", false, true, 256, V, H, true, false},
        {"generator d_X = dZ W", false, false, 256, H, V, true, false},
        {"generator d_W += dZt X", true, false, V, H, 256, false, false},
        {"encoder input projection (B*S rows)", false, true, B * S, 3 * p.enc_hidden, E, true,
         false},
        {"decoder recurrent h W_hh^T (per step)", false, true, B, 3 * H, H, true, true},
        {"decoder recurrent d_h = d_a W_hh (per step)", false, false, B, H, 3 * H, true, false},
        {"decoder d_W_hh = d_a^T h (B*S rows)", true, false, 3 * H, H, B * S, false, false},
        {"attention keys (B*S rows)", false, true, B * S, H, C, true, false},
    };
    json rows = json::array();
    for (const Shape& s : shapes) {
        Operands o(s.ta, s.tb, s.M, s.N, s.K);
        if (s.step) refresh_weight_t(o.wt, o.b);  // fp32 as the steps run: through packed Wᵀ
        json r = shape_rates(o, s.weight_b, 0.6);
        r["name"] = s.name;
        rows.push_back(r);
    }
    j["shapes"] = rows;
    return j;
}

}  // namespace nazar::bench
