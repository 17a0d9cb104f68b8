// Read bandwidth of the machine for working sets from L2 to memory: the roofline of decoding at
// batch 1, whose products stream every weight once per step with 2.5 FLOP per byte
// (docs/performance.md, "Roofline of the decoding targets": 25 MB of weights per beam-5 step).
// Each iteration sums a float buffer of the given size, split into one contiguous part per
// thread of nazar's pool (as gemm() splits a product), with 8 independent 8-lane accumulators.
// The sum is validated against a double-precision scalar oracle before timing. Counter: GB/s.
// Argument: buffer size in MB.
#include "apps/bench/read_sum.h"
#include "nazar/core/threads.h"

#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace nazar;

namespace {

float pooled_sum(const std::vector<float>& buf) {
    const int parts = num_threads();
    std::vector<float> part(static_cast<std::size_t>(parts));
    const auto n = static_cast<int64_t>(buf.size());
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t b = n * p / parts, e = n * (p + 1) / parts;
            part[static_cast<std::size_t>(p)] = bench::sum_floats(buf.data() + b, e - b);
        }
    });
    float r = 0;
    for (float v : part) r += v;
    return r;
}

void BM_read(benchmark::State& st) {
    set_num_threads(0);
    const int64_t n = st.range(0) * (1 << 20) / 4;
    std::vector<float> buf(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        buf[static_cast<std::size_t>(i)] = 1.0f / static_cast<float>(1 + i % 7);
    double want = 0;
    for (float v : buf) want += v;
    const float got = pooled_sum(buf);
    if (std::abs(got - want) > 1e-3 * want) {  // float lanes over up to 2^26 terms
        std::fprintf(stderr, "bench_stream: sum %g, oracle %g\n", static_cast<double>(got), want);
        std::exit(1);
    }
    for (auto _ : st) benchmark::DoNotOptimize(pooled_sum(buf));
    st.counters["GB/s"] =
        benchmark::Counter(static_cast<double>(n) * 4 * static_cast<double>(st.iterations()) / 1e9,
                           benchmark::Counter::kIsRate);
    st.SetLabel(std::to_string(num_threads()) + " thread(s)");
}

}  // namespace

// 1 MB: L2; 8, 16, 25 MB: L3 (25 MB = the weights of one beam-5 decoding step); 256 MB: memory.
BENCHMARK(BM_read)->Arg(1)->Arg(8)->Arg(16)->Arg(25)->Arg(256)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

BENCHMARK_MAIN();
