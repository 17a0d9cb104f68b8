// SoftmaxXent (nazar/nn/softmax_xent.h): hand-checked values (label smoothing included), the
// fused chunked path against the unfused composition Linear + log_softmax + NLL built in double,
// finite differences, and the error paths.
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/rng.h"
#include "nazar/nn/softmax_xent.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_grad_softmax_xent {

using namespace nazar;
using nazar::test::close_rel;
using nazar::test::random_tensor;

namespace {

// Unfused reference in double: z = X Wᵀ + b; lp = log_softmax(z); loss = Σ (1−ε)(−lp_y) + ε
// mean(−lp); d z = scale (softmax(z) − (1−ε) onehot − ε/V);  d_X = d z W;  d_W = d zᵀ X;  d_b = Σ_n
// d z.
struct Reference {
    double loss = 0;
    int64_t tokens = 0;
    Tensor d_X, d_W, d_b;
};

Reference unfused(ConstTensorView X, ConstTensorView W, ConstTensorView b,
                  const std::vector<int>& y, int pad, float eps, float scale) {
    const int N = X.dim(0), H = X.dim(1), V = W.dim(0);
    Tensor z({N, V}), lp({N, V});
    gemm_naive(false, true, N, V, H, 1.0f, X.data(), H, W.data(), H, 0.0f, z.data(), V);  // Linear
    kernels::add_bias_rows(z, b);
    kernels::naive::log_softmax(z, lp);
    Reference ref;
    ref.d_X = Tensor({N, H});
    ref.d_W = Tensor({V, H});
    ref.d_b = Tensor({V});
    for (int n = 0; n < N; ++n) {
        if (y[n] == pad) continue;
        ++ref.tokens;
        double mean_nll = 0;
        for (int v = 0; v < V; ++v) mean_nll += -static_cast<double>(lp.at(n, v)) / V;
        ref.loss += (1.0 - eps) * -static_cast<double>(lp.at(n, y[n])) + eps * mean_nll;
        for (int v = 0; v < V; ++v) {
            const double dz =
                scale * (std::exp(static_cast<double>(lp.at(n, v))) -
                         (v == y[n] ? 1.0 - eps : 0.0) - static_cast<double>(eps) / V);
            ref.d_b[v] += static_cast<float>(dz);
            for (int h = 0; h < H; ++h) {
                ref.d_X.at(n, h) += static_cast<float>(dz * W.at(v, h));
                ref.d_W.at(v, h) += static_cast<float>(dz * X.at(n, h));
            }
        }
    }
    return ref;
}

}  // namespace

// V = 3, H = 2: W = [[1,0],[0,1],[0,0]], b = 0, so x = (1, 0) has logits z = (1, 0, 0).
//   lse = log(e + 2) = 1.5514447139...
//   ε = 0:   loss = lse − 1                               = 0.5514447139
//   ε = 0.1: loss = lse − 0.9·1 − 0.1·mean(1,0,0)         = 1.5514447139 − 0.9 − 0.0333333333 =
//   0.6181113806 d z = p − (1−ε) onehot(0) − ε/3 with p = (e, 1, 1)/(e + 2) = (0.5761169,
//   0.2119416, 0.2119416)
// PyTorch agrees: F.cross_entropy(z, y, ignore_index=2, label_smoothing=ε, reduction='sum') on
// z = [[1, 0, 0], [5, 5, 0]], y = [0, 2] gives 0.55144465 and 0.61811131 (float32).
TEST(SoftmaxXent, HandCheckedLossAndSmoothing) {
    Tensor W = Tensor::from({3, 2}, std::vector<float>{1, 0, 0, 1, 0, 0});
    Tensor b({3});
    Tensor X = Tensor::from({2, 2}, std::vector<float>{1, 0, 5, 5});  // row 1 is padding
    const std::vector<int> y{0, 2};
    for (float eps : {0.0f, 0.1f}) {
        SoftmaxXent xent({.ignore_index = 2, .label_smoothing = eps});
        Tensor d_X({2, 2}), d_W({3, 2}), d_b({3});
        const XentStats s = xent.forward_backward(X, W, b, y, 1.0f, d_X, d_W, d_b);
        EXPECT_EQ(s.tokens, 1);
        EXPECT_EQ(s.correct, 1);  // target 0 has the largest logit
        EXPECT_NEAR(s.loss, eps == 0.0f ? 0.5514447139 : 0.6181113806, 1e-6);
        const double p0 = 0.5761168847, p1 = 0.2119415576;
        EXPECT_NEAR(d_b[0], p0 - (1 - eps) - eps / 3, 1e-6);
        EXPECT_NEAR(d_b[1], p1 - eps / 3, 1e-6);
        EXPECT_NEAR(d_b[2], p1 - eps / 3, 1e-6);
        // d_W = d zᵀ x with x = (1, 0); d_X[0] = d z W = (d z_0, d z_1); the padded row gets
        // nothing.
        EXPECT_NEAR(d_W.at(0, 0), d_b[0], 1e-7);
        EXPECT_EQ(d_W.at(0, 1), 0.0f);
        EXPECT_NEAR(d_X.at(0, 0), d_b[0], 1e-7);
        EXPECT_NEAR(d_X.at(0, 1), d_b[1], 1e-7);
        EXPECT_EQ(d_X.at(1, 0), 0.0f);
        EXPECT_EQ(d_X.at(1, 1), 0.0f);
        EXPECT_NEAR(xent.forward(X, W, b, y).loss, s.loss, 1e-12);  // forward alone agrees
    }
    // The target is not the arg-max -> not counted as correct.
    SoftmaxXent xent({.ignore_index = -1});
    EXPECT_EQ(xent.forward(X, W, b, std::vector<int>{1, 2}).correct, 0);
}

// Fused + chunked (chunks of 5, padding scattered so both the gathered and the in-place paths
// run) against the double-precision composition. Gradients are accumulated onto non-zero
// values to check `+=`. Tolerance 2e-5: float logits/gemm vs double reference, V = 11, H = 6.
TEST(SoftmaxXent, MatchesUnfusedComposition) {
    Rng rng(11);
    const int N = 37, H = 6, V = 11, pad = 0;
    Tensor X = random_tensor(rng, {N, H}, -2, 2), W = random_tensor(rng, {V, H}),
           b = random_tensor(rng, {V});
    std::vector<int> y(N);
    for (int n = 0; n < N; ++n)
        y[n] = (n % 7 == 3 || n >= 33 || n == 12) ? pad : 1 + static_cast<int>(rng.below(V - 1));
    for (float eps : {0.0f, 0.2f}) {
        const float scale = 1.0f / static_cast<float>(count_targets(y, pad));
        const Reference ref = unfused(X, W, b, y, pad, eps, scale);
        Tensor d_X0 = random_tensor(rng, {N, H}), d_W0 = random_tensor(rng, {V, H}),
               d_b0 = random_tensor(rng, {V});
        Tensor d_X = d_X0, d_W = d_W0, d_b = d_b0;
        SoftmaxXent xent({.ignore_index = pad, .label_smoothing = eps, .chunk_rows = 5});
        const XentStats s = xent.forward_backward(X, W, b, y, scale, d_X, d_W, d_b);
        EXPECT_EQ(s.tokens, ref.tokens);
        EXPECT_NEAR(s.loss, ref.loss, 1e-5 * ref.loss);
        for (int64_t i = 0; i < d_X.numel(); ++i) d_X[i] -= d_X0[i];
        for (int64_t i = 0; i < d_W.numel(); ++i) d_W[i] -= d_W0[i];
        for (int64_t i = 0; i < d_b.numel(); ++i) d_b[i] -= d_b0[i];
        EXPECT_TRUE(close_rel(d_X, ref.d_X, 2e-5)) << "eps " << eps;
        EXPECT_TRUE(close_rel(d_W, ref.d_W, 2e-5)) << "eps " << eps;
        EXPECT_TRUE(close_rel(d_b, ref.d_b, 2e-5)) << "eps " << eps;
        EXPECT_EQ(xent.logits_scratch(), 5 * V);  // one chunk of logits, not N × V
        // Chunk size changes only the summation order.
        SoftmaxXent one_chunk({.ignore_index = pad, .label_smoothing = eps, .chunk_rows = 1000});
        EXPECT_NEAR(one_chunk.forward(X, W, b, y).loss, s.loss, 1e-5 * s.loss);
    }
}

// Finite differences on the summed loss (a scalar, so no random projection R is needed), with
// label smoothing, a bias, padding in the middle, chunks of 3 and grad_scale 0.5.
// eps = 1e-2: loss ≈ 0.5 · 7 · log 5 ≈ 6, float noise ≈ 6e-7 / 2e-2 = 3e-5 per slope;
// truncation O(eps²) ≈ 1e-4 relative. atol 5e-4, rtol 5e-3 sit above both.
TEST(SoftmaxXent, BackwardMatchesFiniteDifferences) {
    Rng rng(5);
    const int N = 9, H = 4, V = 5, pad = 4;
    Tensor X = random_tensor(rng, {N, H}), W = random_tensor(rng, {V, H}),
           b = random_tensor(rng, {V});
    const std::vector<int> y{1, 0, pad, 3, 2, pad, 1, 0, 2};
    const float scale = 0.5f;
    SoftmaxXent xent({.ignore_index = pad, .label_smoothing = 0.15f, .chunk_rows = 3});
    Tensor d_X({N, H}), d_W({V, H}), d_b({V});
    xent.forward_backward(X, W, b, y, scale, d_X, d_W, d_b);
    SoftmaxXent probe({.ignore_index = pad, .label_smoothing = 0.15f, .chunk_rows = 3});
    auto loss = [&] { return scale * probe.forward(X, W, b, y).loss; };
    EXPECT_TRUE(nazar::test::check_gradients(loss, {{"X", X, d_X}, {"W", W, d_W}, {"b", b, d_b}},
                                             {.eps = 1e-2, .rtol = 5e-3, .atol = 5e-4}));
    // Padded rows get exactly zero gradient.
    for (int h = 0; h < H; ++h) {
        EXPECT_EQ(d_X.at(2, h), 0.0f);
        EXPECT_EQ(d_X.at(5, h), 0.0f);
    }
}

TEST(SoftmaxXent, NoBiasAndAllPadding) {
    Rng rng(3);
    const int N = 4, H = 3, V = 6;
    Tensor X = random_tensor(rng, {N, H}), W = random_tensor(rng, {V, H}), none;
    Tensor zero_b({V});
    const std::vector<int> y{5, 1, 0, 2};
    SoftmaxXent xent({.ignore_index = 0});
    Tensor d_X({N, H}), d_W({V, H}), d_b_none, d_b({V});
    const XentStats s = xent.forward_backward(X, W, none, y, 1.0f, d_X, d_W, d_b_none);
    const Reference ref = unfused(X, W, zero_b, y, 0, 0.0f, 1.0f);
    EXPECT_NEAR(s.loss, ref.loss, 1e-5 * ref.loss);
    EXPECT_TRUE(close_rel(d_W, ref.d_W, 2e-5));
    // Every target ignored: nothing counted, gradients untouched.
    Tensor d_W2({V, H});
    const XentStats e =
        xent.forward_backward(X, W, none, std::vector<int>{0, 0, 0, 0}, 1.0f, d_X, d_W2, d_b_none);
    EXPECT_EQ(e.tokens, 0);
    EXPECT_EQ(e.loss, 0.0);
    for (int64_t i = 0; i < d_W2.numel(); ++i) EXPECT_EQ(d_W2[i], 0.0f);
}

TEST(SoftmaxXent, OutputLogProbsMatchNaive) {
    Rng rng(9);
    const int R = 7, H = 5, V = 13;
    Tensor X = random_tensor(rng, {R, H}, -3, 3), W = random_tensor(rng, {V, H}),
           b = random_tensor(rng, {V});
    Tensor out({R, V}), z({R, V}), ref({R, V});
    output_log_probs(X, W, b, out);
    gemm_naive(false, true, R, V, H, 1.0f, X.data(), H, W.data(), H, 0.0f, z.data(), V);
    kernels::add_bias_rows(z, b);
    kernels::naive::log_softmax(z, ref);
    EXPECT_TRUE(close_rel(out, ref, 1e-5));
    for (int r = 0; r < R; ++r) {
        double s = 0;
        for (int v = 0; v < V; ++v) s += std::exp(static_cast<double>(out.at(r, v)));
        EXPECT_NEAR(s, 1.0, 1e-5);  // rows are normalised
    }
}

TEST(SoftmaxXent, ErrorsCarryValues) {
    Tensor X({2, 3}), W({4, 3}), b({4}), d_X({2, 3}), d_W({4, 3}), d_b({4});
    SoftmaxXent xent({.ignore_index = 0});
    try {
        xent.forward(X, W, b, std::vector<int>{1, 4});
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("target 4 at row 1 outside [0, 4)"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(xent.forward(X, W, b, std::vector<int>{1}), Error);                  // count
    EXPECT_THROW(xent.forward(X, Tensor({4, 2}), b, std::vector<int>{1, 2}), Error);  // H mismatch
    EXPECT_THROW(xent.forward(X, W, Tensor({3}), std::vector<int>{1, 2}), Error);     // bias size
    EXPECT_THROW(
        xent.forward_backward(X, W, b, std::vector<int>{1, 2}, 1.0f, Tensor({3, 3}), d_W, d_b),
        Error);
    EXPECT_THROW(xent.forward_backward(X, W, b, std::vector<int>{1, 2}, 1.0f, d_X, d_W, Tensor()),
                 Error);
    EXPECT_THROW(SoftmaxXent({.label_smoothing = 1.0f}), Error);
    EXPECT_THROW(SoftmaxXent({.chunk_rows = 0}), Error);
    Tensor out({2, 5});
    EXPECT_THROW(output_log_probs(X, W, b, out), Error);
}

}  // namespace test_grad_softmax_xent
