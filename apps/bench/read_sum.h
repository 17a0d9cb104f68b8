// The read loop of the bandwidth measurements: `nazar bench`'s read bandwidth beside a decoder
// step (apps/bench/util.cpp read_bandwidth_gbs) and the micro-benchmarks bench/bench_stream.cpp
// and bench_step_roofline.cpp. The sum of n floats with 8 independent 8-lane accumulators, so
// that the loads, not the adds' latency, set the pace.
#pragma once

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <cstdint>

namespace nazar::bench {

inline float sum_floats(const float* x, int64_t n) {
    int64_t i = 0;
    float r = 0;
#if defined(__AVX__)
    __m256 s[8];
    for (auto& v : s) v = _mm256_setzero_ps();
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 8; ++j) s[j] = _mm256_add_ps(s[j], _mm256_loadu_ps(x + i + 8 * j));
    for (int j = 1; j < 8; ++j) s[0] = _mm256_add_ps(s[0], s[j]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s[0]);
    for (float v : lanes) r += v;
#endif
    for (; i < n; ++i) r += x[i];
    return r;
}

}  // namespace nazar::bench
