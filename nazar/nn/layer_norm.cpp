// Layer normalisation of gate blocks (see layer_norm.h; math in docs/derivations/gru.md §LN).
#include "nazar/nn/layer_norm.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/nn/absent.h"

#include <cmath>

namespace nazar::layer_norm {

namespace {

constexpr int64_t kRows = 16;  // rows per parallel chunk

void check_args(ConstTensorView a, int H, ConstTensorView gamma, const char* what) {
    NZ_CHECK(a.ndim() == 2 && H > 0 && a.dim(1) % H == 0, "{}: rows {} are not blocks of {}", what,
             a.shape().str(), H);
    NZ_CHECK_SHAPE(gamma, {a.dim(1)});
}

// One block of H: y = γ ⊙ â + β in place; returns rstd, writes â when xh is not null.
float block_forward(float* __restrict y, const float* __restrict g, const float* __restrict b,
                    float* __restrict xh, int H) {
    float s = 0.0f;
    for (int j = 0; j < H; ++j) s += y[j];
    const float mu = s / static_cast<float>(H);
    float v = 0.0f;
    for (int j = 0; j < H; ++j) v += (y[j] - mu) * (y[j] - mu);
    const float rs = 1.0f / std::sqrt(v / static_cast<float>(H) + kEps);
    for (int j = 0; j < H; ++j) {
        const float n = (y[j] - mu) * rs;
        if (xh != nullptr) xh[j] = n;
        y[j] = g[j] * n + (b != nullptr ? b[j] : 0.0f);
    }
    return rs;
}

}  // namespace

void blocks_forward(TensorView a, int H, ConstTensorView gamma, ConstTensorView beta,
                    TensorView xhat, TensorView rstd) {
    check_args(a, H, gamma, "layer_norm::blocks_forward");
    const int M = a.dim(0), GH = a.dim(1), G = GH / H;
    if (!absent(beta)) NZ_CHECK_SHAPE(beta, {GH});
    const bool keep = !absent(xhat);
    if (keep) {
        NZ_CHECK_SHAPE(xhat, {M, GH});
        NZ_CHECK_SHAPE(rstd, {M, G});
    }
    if (M == 0) return;
    const float* b = absent(beta) ? nullptr : beta.data();
    parallel_for(M, kRows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            for (int k = 0; k < G; ++k) {
                const int64_t o = r * GH + int64_t{k} * H;
                const float rs = block_forward(a.data() + o, gamma.data() + k * H,
                                               b != nullptr ? b + k * H : nullptr,
                                               keep ? xhat.data() + o : nullptr, H);
                if (keep) rstd.data()[r * G + k] = rs;
            }
    });
}

void blocks_backward(TensorView d, int H, ConstTensorView gamma, ConstTensorView xhat,
                     ConstTensorView rstd, TensorView d_gamma, TensorView d_beta) {
    check_args(d, H, gamma, "layer_norm::blocks_backward");
    const int M = d.dim(0), GH = d.dim(1), G = GH / H;
    NZ_CHECK_SHAPE(xhat, {M, GH});
    NZ_CHECK_SHAPE(rstd, {M, G});
    NZ_CHECK_SHAPE(d_gamma, {GH});
    if (!absent(d_beta)) NZ_CHECK_SHAPE(d_beta, {GH});
    // y = γ ⊙ â + β  =>  d_γ += Σ_rows d_y ⊙ â;  d_β += Σ_rows d_y   (before d becomes d_a)
    float* dg = d_gamma.data();
    float* db = absent(d_beta) ? nullptr : d_beta.data();
    for (int r = 0; r < M; ++r) {
        const float* dy = d.data() + int64_t{r} * GH;
        const float* xh = xhat.data() + int64_t{r} * GH;
        for (int j = 0; j < GH; ++j) dg[j] += dy[j] * xh[j];
        if (db != nullptr)
            for (int j = 0; j < GH; ++j) db[j] += dy[j];
    }
    // â = (a − μ) rstd  =>  d_a = rstd (g − mean(g) − â mean(g ⊙ â)),  g = d_y ⊙ γ
    parallel_for(M, kRows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            for (int k = 0; k < G; ++k) {
                const int64_t o = r * GH + int64_t{k} * H;
                float* dy = d.data() + o;
                const float* xh = xhat.data() + o;
                const float* g = gamma.data() + k * H;
                float sg = 0.0f, sgx = 0.0f;
                for (int j = 0; j < H; ++j) {
                    sg += dy[j] * g[j];
                    sgx += dy[j] * g[j] * xh[j];
                }
                const float mg = sg / static_cast<float>(H), mgx = sgx / static_cast<float>(H);
                const float rs = rstd.data()[r * G + k];
                for (int j = 0; j < H; ++j) dy[j] = rs * (dy[j] * g[j] - mg - xh[j] * mgx);
            }
    });
}

}  // namespace nazar::layer_norm
