#include "nazar/nn/softmax_xent.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nazar {

namespace {

// Reductions with 8 independent lanes: GCC vectorises them without -ffast-math (a single
// float accumulator would be a serial dependency chain), and the pairwise-ish order is
// more accurate than one running sum.
float max8(const float* x, int n) {
    float acc[8];
    for (float& a : acc) a = -std::numeric_limits<float>::infinity();
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] = std::max(acc[k], x[i + k]);
    float m = -std::numeric_limits<float>::infinity();
    for (; i < n; ++i) m = std::max(m, x[i]);
    for (float a : acc) m = std::max(m, a);
    return m;
}

float sum8(const float* x, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
    float s = 0;
    for (; i < n; ++i) s += x[i];
    return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

double sum8_double(const float* x, int n) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
    double s = 0;
    for (; i < n; ++i) s += x[i];
    for (double a : acc) s += a;
    return s;
}

// d_b += Σ_r z[r], column blocks over the pool; each column sums its rows in order, as
// kernels::sum_rows_into does on one thread (bit-identical).
void sum_rows_by_columns(ConstTensorView z, TensorView d_b) {
    const int R = z.dim(0), V = z.dim(1);
    constexpr int kCols = 512;
    parallel_for((V + kCols - 1) / kCols, 1, [&](int64_t u0, int64_t u1) {
        const int j0 = static_cast<int>(u0) * kCols, j1 = std::min(V, static_cast<int>(u1) * kCols);
        float* db = d_b.data();
        for (int r = 0; r < R; ++r) {
            const float* zr = z.data() + static_cast<int64_t>(r) * V;
            for (int j = j0; j < j1; ++j) db[j] += zr[j];
        }
    });
}

struct RowResult {
    double loss;
    bool correct;
};

// One row of logits z (V), bias already added, target y. Computes the loss; with `backward`,
// overwrites z by d z = scale · (p − (1−ε)·onehot(y) − ε/V).
//   loss = lse − (1−ε) z_y − ε · mean_v z_v      (since −log p_v = lse − z_v)
RowResult xent_row(float* z, int V, int y, float eps, bool backward, float scale) {
    const float m = max8(z, V);
    const float z_y = z[y];
    const double mean_z = eps > 0 ? sum8_double(z, V) / V : 0.0;
    for (int v = 0; v < V; ++v) z[v] -= m;
    kernels::exp(z, z, V);
    const float s = sum8(z, V);
    const double lse = static_cast<double>(m) + std::log(static_cast<double>(s));
    const double loss = lse - (1.0 - eps) * z_y - eps * mean_z;
    if (backward) {
        const float inv = scale / s;
        const float uniform = eps * scale / static_cast<float>(V);
        for (int v = 0; v < V; ++v) z[v] = z[v] * inv - uniform;
        z[y] -= (1.0f - eps) * scale;
    }
    return {loss, z_y >= m};
}

// An absent bias is an empty view. A default-constructed Tensor has shape () and numel 1 but
// no data, so both spellings of "none" are accepted.
bool present(ConstTensorView t) {
    return t.data() != nullptr && t.numel() > 0;
}

// The shapes of SoftmaxXent::run's arguments (the gradients only when `backward`).
void check_shapes(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                  std::span<const int> targets, bool backward, ConstTensorView d_X,
                  ConstTensorView d_W, ConstTensorView d_b) {
    NZ_CHECK(X.ndim() == 2 && W.ndim() == 2, "softmax_xent: X {} and W {} must be 2-D",
             X.shape().str(), W.shape().str());
    const int N = X.dim(0), H = X.dim(1), V = W.dim(0);
    NZ_CHECK_SHAPE(W, {V, H});
    const bool has_bias = present(b);
    NZ_CHECK(!has_bias || (b.ndim() == 1 && b.numel() == V), "softmax_xent: bias {} for V = {}",
             b.shape().str(), V);
    NZ_CHECK(static_cast<int64_t>(targets.size()) == N, "softmax_xent: {} targets for {} rows",
             targets.size(), N);
    if (backward) {
        NZ_CHECK_SHAPE(d_X, {N, H});
        NZ_CHECK_SHAPE(d_W, {V, H});
        NZ_CHECK(present(d_b) == has_bias && (!has_bias || d_b.shape() == b.shape()),
                 "softmax_xent: d_b {} for bias {}", d_b.shape().str(), b.shape().str());
    }
}

}  // namespace

int64_t count_targets(std::span<const int> targets, int ignore_index) {
    int64_t n = 0;
    for (int y : targets) n += (y != ignore_index);
    return n;
}

SoftmaxXent::SoftmaxXent(SoftmaxXentOptions opt) : opt_(opt) {
    NZ_CHECK(opt.chunk_rows > 0, "SoftmaxXent: chunk_rows must be positive, got {}",
             opt.chunk_rows);
    NZ_CHECK(opt.label_smoothing >= 0.0f && opt.label_smoothing < 1.0f,
             "SoftmaxXent: label_smoothing must be in [0, 1), got {}", opt.label_smoothing);
}

XentStats SoftmaxXent::forward(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                               std::span<const int> targets) {
    return run(X, W, b, targets, false, 0.0f, {}, {}, {});
}

XentStats SoftmaxXent::forward_backward(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                                        std::span<const int> targets, float grad_scale,
                                        TensorView d_X, TensorView d_W, TensorView d_b) {
    return run(X, W, b, targets, true, grad_scale, d_X, d_W, d_b);
}

XentStats SoftmaxXent::run(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                           std::span<const int> targets, bool backward, float grad_scale,
                           TensorView d_X, TensorView d_W, TensorView d_b) {
    check_shapes(X, W, b, targets, backward, d_X, d_W, d_b);
    const int N = X.dim(0), H = X.dim(1), V = W.dim(0);
    const bool has_bias = present(b);
    rows_.clear();
    for (int n = 0; n < N; ++n) {
        const int y = targets[n];
        if (y == opt_.ignore_index) continue;
        NZ_CHECK(0 <= y && y < V,
                 "softmax_xent: target {} at row {} outside [0, {}) (ignore_index {})", y, n, V,
                 opt_.ignore_index);
        rows_.push_back(n);
    }
    XentStats stats;
    stats.tokens = static_cast<int64_t>(rows_.size());
    if (rows_.empty()) return stats;

    const int chunk = std::min<int>(opt_.chunk_rows, static_cast<int>(rows_.size()));
    x_chunk_.resize({chunk, H}, false);
    logits_.resize({chunk, V}, false);
    dx_chunk_.resize({chunk, H}, false);
    row_loss_.resize(chunk);
    correct_.resize(chunk);
    const float eps = opt_.label_smoothing;

    for (int c0 = 0; c0 < static_cast<int>(rows_.size()); c0 += chunk) {
        const int R = std::min<int>(chunk, static_cast<int>(rows_.size()) - c0);
        const int* rows = rows_.data() + c0;
        // Runs without padding are used in place; otherwise the counted rows are gathered.
        const bool contiguous = rows[R - 1] - rows[0] == R - 1;
        const TensorView gathered = x_chunk_.slice(0, R);
        if (!contiguous)
            for (int r = 0; r < R; ++r)
                std::copy_n(X.data() + static_cast<int64_t>(rows[r]) * H, H,
                            gathered.data() + static_cast<int64_t>(r) * H);
        const ConstTensorView xc = contiguous ? X.slice(rows[0], rows[0] + R) : gathered;

        // z = X_c Wᵀ + b
        TensorView z = logits_.slice(0, R);
        gemm(xc, false, W, true, z, 1.0f, 0.0f);

        // Bias, then fused log-softmax + NLL (+ smoothing) per row, each row while it is in
        // cache; z becomes d z when backward.
        parallel_for(R, 8, [&](int64_t r0, int64_t r1) {
            if (has_bias) kernels::add_bias_rows(z.slice(r0, r1), b);
            for (int64_t r = r0; r < r1; ++r) {
                const RowResult rr =
                    xent_row(z.data() + r * V, V, targets[rows[r]], eps, backward, grad_scale);
                row_loss_[r] = rr.loss;
                correct_[r] = rr.correct;
            }
        });
        for (int r = 0; r < R; ++r) {
            stats.loss += row_loss_[r];
            stats.correct += correct_[r];
        }
        if (!backward) continue;

        // z = X_c Wᵀ + b  =>  d_X_c += d z W;  d_W += d zᵀ X_c;  d_b += Σ_r d z[r]
        if (contiguous) {
            gemm(z, false, W, false, d_X.slice(rows[0], rows[0] + R), 1.0f, 1.0f);
        } else {
            TensorView dxc = dx_chunk_.slice(0, R);
            gemm(z, false, W, false, dxc, 1.0f, 0.0f);
            for (int r = 0; r < R; ++r)
                kernels::axpy(H, 1.0f, dxc.data() + static_cast<int64_t>(r) * H,
                              d_X.data() + static_cast<int64_t>(rows[r]) * H);
        }
        gemm(z, true, xc, false, d_W, 1.0f, 1.0f);
        if (has_bias) sum_rows_by_columns(z, d_b);
    }
    return stats;
}

void output_log_probs(ConstTensorView X, ConstTensorView W, ConstTensorView b, TensorView out,
                      WeightTRows wt) {
    NZ_CHECK(X.ndim() == 2 && W.ndim() == 2, "output_log_probs: X {} and W {} must be 2-D",
             X.shape().str(), W.shape().str());
    const int R = X.dim(0), H = X.dim(1), V = W.dim(0);
    NZ_CHECK_SHAPE(W, {V, H});
    NZ_CHECK_SHAPE(out, {R, V});
    NZ_CHECK(!present(b) || (b.ndim() == 1 && b.numel() == V),
             "output_log_probs: bias {} for V = {}", b.shape().str(), V);
    gemm_xwt(R, V, H, 1.0f, X.data(), H, W.data(), H, wt, 0.0f, out.data(), V);  // no wt: X Wᵀ
    // Bias and log-softmax row by row in one parallel region (rows are independent, so the
    // result does not depend on the split). A grain of ~16K floats per piece: at V = 8000 the
    // 5 rows of beam-5 batch-1 decoding go to both threads (2 + 3) instead of one.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max(V, 1));
    parallel_for(R, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {  // one row at a time: it stays in cache
            const TensorView row = out.slice(r, r + 1);
            if (present(b)) kernels::add_bias_rows(row, b);
            kernels::log_softmax(row, row);
        }
    });
}

}  // namespace nazar
