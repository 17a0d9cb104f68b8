// The read loop of the bandwidth benchmarks (bench/bench_stream.cpp, bench_step_roofline.cpp):
// the sum of n floats with 8 independent 8-lane accumulators, so that the loads, not the adds'
// latency, set the pace.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace nazar::bench {

inline float sum_floats(const float* x, int64_t n) {
    __m256 s[8];
    for (auto& v : s) v = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int j = 0; j < 8; ++j) s[j] = _mm256_add_ps(s[j], _mm256_loadu_ps(x + i + 8 * j));
    for (int j = 1; j < 8; ++j) s[0] = _mm256_add_ps(s[0], s[j]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s[0]);
    float r = 0;
    for (float v : lanes) r += v;
    for (; i < n; ++i) r += x[i];
    return r;
}

}  // namespace nazar::bench
