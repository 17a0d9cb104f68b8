// Reduced-precision weight products on the decoder's shapes (docs/performance.md, "bf16 and int8
// inference"): C (M x N) = A (M x K) Wᵀ with W packed once (nazar/core/gemm/packed.h), against
// nazar's fp32 gemm of the same shape, and against oneDNN 2.6.3's matmul primitive with the
// weights reordered ONCE into the layout it asks for (format `any`: its brgemm kernels, AMX
// where present), bf16 x bf16 -> f32 and u8 x s8 -> s32 (activations converted per call as
// nazar's are; 2.6.3's C API has no bf16 gemm function, and dnnl_gemm_u8s8s32 would re-lay the
// weights on every call). M = 5 (beam 5, batch 1) and 320 (beam 5,
// batch 64); W = the standard Bahdanau's attention query 512x512, GRU input 1536x768, recurrent
// 1536x512 and the 8000x512 generator. Each kernel is checked against an fp64 product on a few
// rows first (exit 1 beyond 2^-6 of Σ|a w|). One thread (set_num_threads(1)): kernel speed, not
// scaling. Counters: GFLOP/s (wall) and GFLOP per CPU-second.
// Arguments: M, N, K, kernel (0 nazar fp32, 1 nazar bf16, 2 nazar int8, 3 oneDNN bf16,
// 4 oneDNN int8).
#include "nazar/core/blas.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#if NAZAR_BLAS_ONEDNN && __has_include(<oneapi/dnnl/dnnl.h>)
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#define NZ_BENCH_ONEDNN 1
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

using namespace nazar;

namespace {

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

#ifdef NZ_BENCH_ONEDNN
void ok(dnnl_status_t st, const char* what) {
    if (st != dnnl_success) {
        std::fprintf(stderr, "bench_packed: oneDNN %s failed (status %d)\n", what,
                     static_cast<int>(st));
        std::exit(1);
    }
}

// src (M x K, row-major, sdt) x W (given N x K row-major = K x N "ba") -> dst (M x N, ddt),
// W reordered once into the primitive's own layout.
struct OnednnMatmul {
    dnnl_engine_t eng = nullptr;
    dnnl_stream_t stream = nullptr;
    dnnl_primitive_t prim = nullptr;
    dnnl_memory_t src = nullptr, wei = nullptr, dst = nullptr;

    void init(int M, int N, int K, dnnl_data_type_t sdt, dnnl_data_type_t wdt, dnnl_data_type_t ddt,
              void* src_ptr, void* w_ptr, void* dst_ptr) {
        ok(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine");
        ok(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags), "stream");
        dnnl_memory_desc_t smd, wmd_any, wmd_user, dmd;
        const dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
        ok(dnnl_memory_desc_init_by_tag(&smd, 2, sd, sdt, dnnl_ab), "src md");
        ok(dnnl_memory_desc_init_by_tag(&wmd_any, 2, wd, wdt, dnnl_format_tag_any), "wei md");
        ok(dnnl_memory_desc_init_by_tag(&wmd_user, 2, wd, wdt, dnnl_ba), "user wei md");
        ok(dnnl_memory_desc_init_by_tag(&dmd, 2, dd, ddt, dnnl_ab), "dst md");
        dnnl_matmul_desc_t desc;
        ok(dnnl_matmul_desc_init(&desc, &smd, &wmd_any, nullptr, &dmd), "matmul desc");
        dnnl_primitive_desc_t pd;
        ok(dnnl_primitive_desc_create(&pd, &desc, nullptr, eng, nullptr), "matmul pd");
        const dnnl_memory_desc_t* wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        ok(dnnl_primitive_create(&prim, pd), "matmul");
        ok(dnnl_memory_create(&src, &smd, eng, src_ptr), "src");
        ok(dnnl_memory_create(&dst, &dmd, eng, dst_ptr), "dst");
        ok(dnnl_memory_create(&wei, wmd, eng, DNNL_MEMORY_ALLOCATE), "wei");
        dnnl_memory_t user;
        ok(dnnl_memory_create(&user, &wmd_user, eng, w_ptr), "user wei");
        dnnl_primitive_desc_t rpd;
        ok(dnnl_reorder_primitive_desc_create(&rpd, &wmd_user, eng, wmd, eng, nullptr),
           "reorder pd");
        dnnl_primitive_t reorder;
        ok(dnnl_primitive_create(&reorder, rpd), "reorder");
        const dnnl_exec_arg_t rargs[] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, wei}};
        ok(dnnl_primitive_execute(reorder, stream, 2, rargs), "reorder run");
        ok(dnnl_stream_wait(stream), "wait");
        dnnl_primitive_destroy(reorder);
        dnnl_primitive_desc_destroy(rpd);
        dnnl_memory_destroy(user);
        dnnl_primitive_desc_destroy(pd);
    }
    void run() {
        const dnnl_exec_arg_t args[] = {
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
        ok(dnnl_primitive_execute(prim, stream, 3, args), "matmul run");
        ok(dnnl_stream_wait(stream), "wait");
    }
    ~OnednnMatmul() {
        for (dnnl_memory_t m : {src, wei, dst})
            if (m) dnnl_memory_destroy(m);
        if (prim) dnnl_primitive_destroy(prim);
        if (stream) dnnl_stream_destroy(stream);
        if (eng) dnnl_engine_destroy(eng);
    }
};
#endif

const char* kKernelNames[] = {"nazar fp32", "nazar bf16", "nazar int8", "oneDNN bf16",
                              "oneDNN int8"};

// One product C = A Wᵀ by the chosen kernel; weights prepared once in the constructor.
struct Product {
    int M, N, K, kernel;
    Tensor a, w, c;
    PackedMatrix packed;
    std::vector<uint16_t> w16, a16;  // oneDNN bf16
    std::vector<int8_t> w8;          // oneDNN int8: per-row scales as nazar's
    std::vector<float> ws, as;
    std::vector<uint8_t> a8;
    std::vector<int32_t> c32, wsum;
#ifdef NZ_BENCH_ONEDNN
    OnednnMatmul mm;
#endif

    Product(int m, int n, int k, int kern) : M(m), N(n), K(k), kernel(kern) {
        Rng rng(static_cast<uint64_t>(m + n + k));
        a = Tensor({M, K});
        w = Tensor({N, K});
        c = Tensor({M, N});
        rng.fill_uniform(a, -1, 1);
        rng.fill_uniform(w, -1, 1);
        if (kernel == 1) packed = PackedMatrix::pack(w.data(), N, K, K, Precision::bf16);
        if (kernel == 2) packed = PackedMatrix::pack(w.data(), N, K, K, Precision::int8);
        if (kernel == 3) {
            w16.resize(w.numel());
            a16.resize(a.numel());
            for (int64_t i = 0; i < w.numel(); ++i) w16[i] = float_to_bf16(w[i]);
#ifdef NZ_BENCH_ONEDNN
            mm.init(M, N, K, dnnl_bf16, dnnl_bf16, dnnl_f32, a16.data(), w16.data(), c.data());
#endif
        }
        if (kernel == 4) {
            const PackedMatrix q = PackedMatrix::pack(w.data(), N, K, K, Precision::int8);
            w8.resize(w.numel());
            ws.assign(q.scales(), q.scales() + N);
            wsum.assign(N, 0);
            for (int n = 0; n < N; ++n)
                for (int i = 0; i < K; ++i) {
                    w8[static_cast<std::size_t>(n) * K + i] = q.q(n, i);
                    wsum[n] += q.q(n, i);
                }
            a8.resize(a.numel());
            as.resize(M);
            c32.resize(c.numel());
#ifdef NZ_BENCH_ONEDNN
            mm.init(M, N, K, dnnl_u8, dnnl_s8, dnnl_s32, a8.data(), w8.data(), c32.data());
#endif
        }
    }

    void run() {
        switch (kernel) {
            case 0:
                gemm(a, false, w, true, c);
                return;
            case 1:
            case 2:
                gemm_packed(M, 0, N, 0, K, 1.0f, a.data(), K, packed, 0.0f, c.data(), N);
                return;
#ifdef NZ_BENCH_ONEDNN
            case 3: {
                for (int64_t i = 0; i < a.numel(); ++i) a16[i] = float_to_bf16(a[i]);
                mm.run();
                return;
            }
            case 4: {
                for (int m = 0; m < M; ++m) {
                    const float* r = a.data() + static_cast<int64_t>(m) * K;
                    float amax = 0;
                    for (int i = 0; i < K; ++i) amax = std::max(amax, std::fabs(r[i]));
                    as[m] = amax / 127;
                    const float inv = amax > 0 ? 127 / amax : 0;
                    for (int i = 0; i < K; ++i)
                        a8[static_cast<std::size_t>(m) * K + i] =
                            static_cast<uint8_t>(std::nearbyint(r[i] * inv) + 128);
                }
                mm.run();
                for (int m = 0; m < M; ++m)
                    for (int n = 0; n < N; ++n) {
                        const int64_t i = static_cast<int64_t>(m) * N + n;
                        c[i] = static_cast<float>(c32[i] - 128 * wsum[n]) * as[m] * ws[n];
                    }
                return;
            }
#endif
            default:
                std::fprintf(stderr, "bench_packed: kernel %d not built\n", kernel);
                std::exit(1);
        }
    }

    // fp64 oracle on the first rows: |err| <= 2^-6 Σ|a w| (int8 and bf16 both well inside).
    void validate() {
        run();
        for (int m = 0; m < std::min(M, 3); ++m)
            for (int n = 0; n < N; ++n) {
                double want = 0, mag = 0;
                for (int i = 0; i < K; ++i) {
                    const double p = double{a[int64_t{m} * K + i]} * w[int64_t{n} * K + i];
                    want += p;
                    mag += std::fabs(p);
                }
                if (std::fabs(c[int64_t{m} * N + n] - want) > std::ldexp(mag, -6)) {
                    std::fprintf(stderr, "bench_packed: %s %dx%dx%d row %d col %d: %g vs %g\n",
                                 kKernelNames[kernel], M, N, K, m, n, c[int64_t{m} * N + n], want);
                    std::exit(1);
                }
            }
    }
};

void BM_product(benchmark::State& st) {
    const int M = static_cast<int>(st.range(0)), N = static_cast<int>(st.range(1)),
              K = static_cast<int>(st.range(2)), kernel = static_cast<int>(st.range(3));
#ifndef NZ_BENCH_ONEDNN
    if (kernel >= 3) {
        st.SkipWithError("oneDNN not built");
        return;
    }
#endif
    set_num_threads(1);
#ifdef NZ_BENCH_ONEDNN
    omp_set_num_threads(1);
#endif
    Product p(M, N, K, kernel);
    p.validate();
    const double c0 = cpu_now();
    for (auto _ : st) {
        p.run();
        benchmark::DoNotOptimize(p.c.data());
    }
    const double flop = 2.0 * M * N * K * static_cast<double>(st.iterations());
    st.counters["GFLOP/s"] = benchmark::Counter(flop / 1e9, benchmark::Counter::kIsRate);
    st.counters["GFLOP/cpu-s"] = flop / 1e9 / (cpu_now() - c0);
    const Precision pr = kernel == 1   ? Precision::bf16
                         : kernel == 2 ? Precision::int8
                                       : Precision::fp32;
    st.SetLabel(kernel == 1 || kernel == 2
                    ? fmt::format("{} [{}]", kKernelNames[kernel], packed_kernel(pr, M))
                    : kKernelNames[kernel]);
}

void shapes(benchmark::internal::Benchmark* b) {
    // 5 and 320: beam 5 at batch 1 and 64; 8-64 where AMX's 16-row tiles start to fill (int8 with
    // NAZAR_AMX=0 against the default: AVX512-VNNI against AMX where the CPU has it)
    for (int M : {5, 8, 16, 64, 320})
        for (auto [N, K] : {std::pair{512, 512}, {1536, 768}, {1536, 512}, {8000, 512}})
            for (int kernel = 0; kernel < 5; ++kernel) b->Args({M, N, K, kernel});
    for (int kernel = 0; kernel < 5; ++kernel) b->Args({1024, 1024, 1024, kernel});  // peak
}

}  // namespace

BENCHMARK(BM_product)->Apply(shapes)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
