// nazar::gemm on the square peak shape and on the standard model's own shapes
// (docs/performance.md), for both threadings (GemmThreading::pool: OpenBLAS single-threaded, blocks
// over nazar's pool;
// ::blas: OpenBLAS's own pthreads), and the small-M kernel of decoding (M = 1 and 5 rows against
// the 8000 x 512 generator). Every shape is validated against gemm_naive before timing (exit 1 on a
// mismatch). Counters: GFLOP/s (wall) and GFLOP per CPU-second (process CPU time, meaningful on a
// shared machine). Arguments: M, N, K, transpose-B, threading (0 pool, 1 blas).
#include "nazar/core/blas.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

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

// Relative error of gemm vs the oracle on a few sampled rows (full oracle on small shapes).
void validate(int M, int N, int K, bool tb) {
    Rng rng(static_cast<uint64_t>(M + N + K));
    Tensor a({M, K}), b(tb ? Shape{N, K} : Shape{K, N}), c({M, N});
    rng.fill_uniform(a, -1, 1);
    rng.fill_uniform(b, -1, 1);
    gemm(a, false, b, tb, c);
    const int rows = std::min(M, 4);
    std::vector<float> ref(static_cast<std::size_t>(rows) * N);
    gemm_naive(false, tb, rows, N, K, 1.0f, a.data(), K, b.data(), tb ? K : N, 0.0f, ref.data(), N);
    double worst = 0;
    for (int i = 0; i < rows * N; ++i)
        worst = std::max(worst, std::abs(static_cast<double>(c[i]) - ref[i]));
    if (worst > 1e-4 * K) {
        std::fprintf(stderr, "bench_gemm: %dx%dx%d tb=%d differs from the oracle by %g\n", M, N, K,
                     tb, worst);
        std::exit(1);
    }
}

void BM_gemm(benchmark::State& st) {
    const int M = static_cast<int>(st.range(0)), N = static_cast<int>(st.range(1)),
              K = static_cast<int>(st.range(2));
    const bool tb = st.range(3) != 0;
    set_gemm_threading(st.range(4) ? GemmThreading::blas : GemmThreading::pool);
    set_num_threads(0);
    validate(M, N, K, tb);
    Rng rng(1);
    Tensor a({M, K}), b(tb ? Shape{N, K} : Shape{K, N}), c({M, N});
    rng.fill_uniform(a, -1, 1);
    rng.fill_uniform(b, -1, 1);
    const double c0 = cpu_now();
    for (auto _ : st) {
        gemm(a, false, b, tb, c);
        benchmark::DoNotOptimize(c.data());
    }
    const double flop = 2.0 * M * N * K * static_cast<double>(st.iterations());
    st.counters["GFLOP/s"] = benchmark::Counter(flop / 1e9, benchmark::Counter::kIsRate);
    st.counters["GFLOP/cpu-s"] = flop / 1e9 / (cpu_now() - c0);
    st.SetLabel(fmt::format("{} {}", st.range(4) ? "blas-threads" : "pool", blas_description()));
    set_gemm_threading(GemmThreading::pool);
}

void shapes(benchmark::internal::Benchmark* b) {
    for (int mode : {0, 1}) {
        b->Args({1024, 1024, 1024, 0, mode});  // square (peak; `nazar bench gemm` uses 2048)
        b->Args({256, 8000, 512, 1, mode});    // generator logits, one 256-row chunk
        b->Args({2240, 768, 256, 1, mode});    // encoder input projection, B·S rows
        b->Args({64, 1536, 768, 1, mode});     // decoder input [e; c] per step
        b->Args({64, 1536, 512, 1, mode});     // decoder recurrent
        b->Args({1, 8000, 512, 1, mode});      // greedy decoding, batch 1: generator
        b->Args({5, 8000, 512, 1, mode});      // beam 5, batch 1: generator
        b->Args({5, 1536, 768, 1, mode});      // beam 5, batch 1: decoder input [e; c]
        b->Args({5, 1536, 512, 1, mode});      // beam 5, batch 1: decoder recurrent
        b->Args({1, 512, 512, 1, mode});       // greedy, batch 1: attention query (1 MB)
    }
}

// The four weight products of one beam-5 decoding step at batch 1 (standard Bahdanau: the
// attention query 512x512, the GRU input [e; c] 1536x768 and recurrent 1536x512, the 8000x512
// generator), back to back in the step's order, so each weight is streamed after the others as
// in the decoder: the floor of a step's time when nothing but these products cost anything
// (docs/performance.md, "Roofline of the decoding targets"). Counter: us per step.
void BM_beam1_step_products(benchmark::State& st) {
    set_num_threads(0);
    validate(5, 1536, 768, true);
    Rng rng(2);
    Tensor gen({8000, 512}), wih({1536, 768}), whh({1536, 512}), wq({512, 512});
    Tensor s({5, 512}), x0({5, 768}), logits({5, 8000}), gi({5, 1536}), gh({5, 1536}), u({5, 512});
    for (Tensor* t : {&gen, &wih, &whh, &wq, &s, &x0}) rng.fill_uniform(*t, -1, 1);
    for (auto _ : st) {
        gemm(s, false, wq, true, u);
        gemm(x0, false, wih, true, gi);
        gemm(s, false, whh, true, gh);
        gemm(s, false, gen, true, logits);
        benchmark::DoNotOptimize(logits.data());
    }
    const double bytes = 4.0 * (gen.numel() + wih.numel() + whh.numel() + wq.numel());
    st.counters["weights GB/s"] = benchmark::Counter(
        bytes * static_cast<double>(st.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_gemm)->Apply(shapes)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_beam1_step_products)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
