#include "nazar/train/clip.h"

#include "nazar/core/threads.h"

#include <cmath>
#include <vector>

namespace nazar {

namespace {

constexpr int64_t kBlock = 1 << 14;

struct Block {
    float* data;
    int64_t n;
};

std::vector<Block> grad_blocks(const ParamList& params) {
    std::vector<Block> blocks;
    for (const auto& p : params) {
        NZ_CHECK(p.grad != nullptr, "clip: parameter '{}' has no gradient", p.name);
        const int64_t n = p.grad->numel();
        for (int64_t b = 0; b < n; b += kBlock)
            blocks.push_back({p.grad->data() + b, std::min(kBlock, n - b)});
    }
    return blocks;
}

double sum_squares(const float* x, int64_t n) {
    double acc[4] = {0, 0, 0, 0};  // independent lanes: vectorises, and a shorter error chain
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) acc[k] += static_cast<double>(x[i + k]) * x[i + k];
    double s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
    return s;
}

float norm_of(const std::vector<Block>& blocks) {
    std::vector<double> partial(blocks.size());
    parallel_for(static_cast<int64_t>(blocks.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) partial[k] = sum_squares(blocks[k].data, blocks[k].n);
    });
    double total = 0;
    for (double s : partial) total += s;
    return static_cast<float>(std::sqrt(total));
}

}  // namespace

float grad_norm(const ParamList& params) {
    return norm_of(grad_blocks(params));
}

float clip_grad_norm(const ParamList& params, float max_norm) {
    NZ_CHECK_USAGE(max_norm > 0 && std::isfinite(max_norm),
                   "clip_grad_norm: max_norm must be positive and finite, got {}", max_norm);
    const std::vector<Block> blocks = grad_blocks(params);
    const float norm = norm_of(blocks);
    if (!std::isfinite(norm)) return norm;  // the caller decides; gradients untouched
    const float coef = max_norm / (norm + 1e-6f);
    if (coef >= 1.0f) return norm;  // PyTorch multiplies by the clamped 1.0: a no-op
    parallel_for(static_cast<int64_t>(blocks.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) {
            float* g = blocks[k].data;
            for (int64_t i = 0; i < blocks[k].n; ++i) g[i] *= coef;
        }
    });
    return norm;
}

}  // namespace nazar
