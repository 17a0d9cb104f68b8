// Inverted dropout (see dropout.h).
#include "nazar/nn/dropout.h"

namespace nazar {

// "Absent" = no data or no elements: a default-constructed Tensor/TensorView (whose shape () has
// numel 1, so empty() is false) or a (0)-shaped one.
static bool absent(ConstTensorView v) {
    return v.data() == nullptr || v.numel() == 0;
}

Dropout::Dropout(Config c) : cfg(c) {
    NZ_CHECK(cfg.p >= 0.0f && cfg.p <= 1.0f, "Dropout: p must be in [0, 1], got {}", cfg.p);
}

void Dropout::forward(ConstTensorView x, TensorView out, DropoutCache& cache, Rng& rng,
                      Mode mode) const {
    NZ_CHECK(out.numel() == x.numel(), "Dropout::forward: out {} vs x {}", out.shape().str(),
             x.shape().str());
    const int64_t n = x.numel();
    if (mode == Mode::eval || cfg.p == 0.0f) {
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

}  // namespace nazar
