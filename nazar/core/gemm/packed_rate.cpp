// measure_packed_rate (packed.h): the reduced-precision GEMM roofline benchmarks set decoding
// against, measured in the same process (nazar bench decode --json, "gemm_roofline").
#include "nazar/core/blas.h"
#include "nazar/core/gemm/packed.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <vector>

namespace nazar {

namespace {

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

PackedRate measure_packed_rate(Precision p, int M, int N, int K, double seconds) {
    NZ_CHECK(M > 0 && N > 0 && K > 0 && seconds > 0, "measure_packed_rate: bad sizes");
    std::vector<float> a(static_cast<std::size_t>(M) * K), w(static_cast<std::size_t>(N) * K),
        c(static_cast<std::size_t>(M) * N);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37f * static_cast<float>(i));
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = 0.1f * std::cos(0.11f * static_cast<float>(i));
    const PackedMatrix m =
        p == Precision::fp32 ? PackedMatrix() : PackedMatrix::pack(w.data(), N, K, K, p);
    const auto once = [&] {
        if (p == Precision::fp32)
            gemm_raw(false, true, M, N, K, 1.0f, a.data(), K, w.data(), K, 0.0f, c.data(), N);
        else
            gemm_packed(M, 0, N, 0, K, 1.0f, a.data(), K, m, 0.0f, c.data(), N);
    };
    once();  // warm-up
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const double c0 = cpu_seconds();
    int64_t runs = 0;
    double wall = 0;
    do {
        once();
        ++runs;
        wall = std::chrono::duration<double>(clock::now() - t0).count();
    } while (wall < seconds);
    const double cpu = cpu_seconds() - c0, flop = 2.0 * M * N * K * static_cast<double>(runs);
    return {flop / wall / 1e9, cpu > 0 ? flop / cpu / 1e9 : 0.0};
}

}  // namespace nazar
