// Inverted dropout (see dropout.h).
#include "nazar/nn/dropout.h"

#include "nazar/nn/absent.h"

namespace nazar {

Dropout::Dropout(Config c) : cfg(c) {
    NZ_CHECK(cfg.p >= 0.0f && cfg.p <= 1.0f, "Dropout: p must be in [0, 1], got {}", cfg.p);
}

void Dropout::forward(ConstTensorView x, TensorView out, DropoutCache& cache, Rng& rng,
                      Mode mode) const {
    NZ_CHECK(out.numel() == x.numel(), "Dropout::forward: out {} vs x {}", out.shape().str(),
             x.shape().str());
    const int64_t n = x.numel();
    if (mode != Mode::train || cfg.p == 0.0f) {
        cache.mask.resize({0});
        if (out.data() != x.data()) out.copy_from(x);
        return;
    }
    // m_i = 1/(1−p) if u_i >= p else 0 (u_i uniform in [0, 1)); p = 1 gives m = 0.
    cache.mask.resize(x.shape(), false);
    const float scale = cfg.p < 1.0f ? 1.0f / (1.0f - cfg.p) : 0.0f;
    float* m = cache.mask.data();
    for (int64_t i = 0; i < n; ++i) m[i] = rng.uniform() >= cfg.p ? scale : 0.0f;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * m[i];
}

void Dropout::backward(ConstTensorView d_out, const DropoutCache& cache, TensorView d_x) const {
    NZ_CHECK(d_x.numel() == d_out.numel(), "Dropout::backward: d_x {} vs d_out {}",
             d_x.shape().str(), d_out.shape().str());
    const int64_t n = d_out.numel();
    // out = x ⊙ m   =>   d_x += d_out ⊙ m   (identity when no mask)
    if (absent(cache.mask)) {
        for (int64_t i = 0; i < n; ++i) d_x[i] += d_out[i];
        return;
    }
    NZ_CHECK(cache.mask.numel() == n, "Dropout::backward: mask of {} for d_out {}",
             cache.mask.numel(), d_out.shape().str());
    const float* m = cache.mask.data();
    for (int64_t i = 0; i < n; ++i) d_x[i] += d_out[i] * m[i];
}

void draw_dropout_mask(TensorView mask, float p, Rng& rng, int shared_axis) {
    NZ_CHECK(p >= 0.0f && p <= 1.0f, "dropout mask: p must be in [0, 1], got {}", p);
    NZ_CHECK(shared_axis >= -1 && shared_axis < mask.ndim(),
             "dropout mask: shared axis {} of a {}-D mask", shared_axis, mask.ndim());
    if (p == 0.0f) {
        mask.fill(1.0f);
        return;
    }
    const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    float* m = mask.data();
    if (shared_axis < 0) {
        for (int64_t i = 0; i < mask.numel(); ++i) m[i] = rng.uniform() >= p ? scale : 0.0f;
        return;
    }
    // (outer, n, inner): draw (outer, inner), repeat along n
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < shared_axis; ++d) outer *= mask.shape()[d];
    for (int d = shared_axis + 1; d < mask.ndim(); ++d) inner *= mask.shape()[d];
    const int64_t n = mask.shape()[shared_axis];
    for (int64_t o = 0; o < outer; ++o) {
        float* row = m + o * n * inner;
        for (int64_t k = 0; k < inner; ++k) {
            const float v = rng.uniform() >= p ? scale : 0.0f;
            for (int64_t j = 0; j < n; ++j) row[j * inner + k] = v;
        }
    }
}

void apply_dropout_mask(TensorView x, ConstTensorView mask) {
    NZ_CHECK(x.numel() == mask.numel(), "dropout: mask {} for a tensor {}", mask.shape().str(),
             x.shape().str());
    float* px = x.data();
    const float* pm = mask.data();
    for (int64_t i = 0; i < x.numel(); ++i) px[i] *= pm[i];
}

}  // namespace nazar
