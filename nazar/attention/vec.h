// Small inline vector helpers shared by the attention kernels. A float dot product written as
// one running sum does not vectorise (GCC keeps the summation order without -ffast-math); eight
// partial sums do, and the order stays fixed, so results are deterministic.
#pragma once

namespace nazar::attn {

inline float dot8(const float* a, const float* b, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
    float s = 0;
    for (; i < n; ++i) s += a[i] * b[i];
    return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace nazar::attn
