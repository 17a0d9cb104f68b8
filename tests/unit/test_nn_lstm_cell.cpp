// LSTMCell: a 1-unit step by hand, masked rows, projected == raw input, the fused step against
// the same step built from simple ops (double precision, libm), forward and backward; errors.
#include "nazar/core/params.h"
#include "nazar/nn/lstm_cell.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_nn_lstm_cell {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::close_rel;
using nazar::test::random_tensor;

using test::vec;
static Tensor scalar(float v) {
    return Tensor::from({1, 1}, std::vector<float>{v});
}

TEST(LSTMCell, OneUnitStepByHand) {
    Rng rng(1);
    LSTMCell cell({.input_size = 1, .hidden_size = 1}, rng);
    cell.params.weight_ih = Tensor::from({4, 1}, std::vector<float>{0.5f, -0.5f, 1.0f, 0.25f});
    cell.params.weight_hh = Tensor::from({4, 1}, std::vector<float>{1.0f, 0.5f, -1.0f, 0.0f});
    cell.params.bias_ih = vec({0, 0, 0.1f, 0});
    cell.params.bias_hh = vec({0.1f, 0, 0.2f, -0.1f});
    Tensor x = scalar(1.0f), h = scalar(0.5f), c = scalar(-0.3f), h_new({1, 1}), c_new({1, 1});
    LSTMStepCache cache;
    cell.forward(x, h, c, h_new, c_new, cache);
    // i = σ(0.5 + 0.5 + 0.1) = 0.7502601     f = σ(−0.5 + 0.25) = 0.4378235
    // g = tanh(1 + 0.1 − 0.5 + 0.2) = 0.6640368   o = σ(0.25 − 0.1) = 0.5374298
    // c' = f · (−0.3) + i · g = 0.3668532     h' = o · tanh(c') = 0.1887648
    EXPECT_NEAR(cache.gates[0], 0.7502601f, 1e-6);
    EXPECT_NEAR(cache.gates[1], 0.4378235f, 1e-6);
    EXPECT_NEAR(cache.gates[2], 0.6640368f, 1e-6);
    EXPECT_NEAR(cache.gates[3], 0.5374298f, 1e-6);
    EXPECT_NEAR(c_new[0], 0.3668532f, 1e-6);
    EXPECT_NEAR(h_new[0], 0.1887648f, 1e-6);
    // loss = h' + c': d h = −0.48832121, d c = 0.64409476 (torch.autograd, float64)
    Tensor ones = scalar(1.0f), d_h({1, 1}), d_c({1, 1});
    cell.backward(ones, ones, x, h, c, cache, TensorView(), d_h, d_c);
    EXPECT_NEAR(d_h[0], -0.48832121f, 1e-6);
    EXPECT_NEAR(d_c[0], 0.64409476f, 1e-6);
}

TEST(LSTMCell, ProjectedEqualsRawInputAndMaskedRowsKeepState) {
    Rng rng(3);
    LSTMCell cell({.input_size = 4, .hidden_size = 5}, rng);
    Tensor x = random_tensor(rng, {3, 4}), h = random_tensor(rng, {3, 5}),
           c = random_tensor(rng, {3, 5});
    Tensor gi({3, 20}), h1({3, 5}), c1({3, 5}), h2({3, 5}), c2({3, 5});
    LSTMStepCache k1, k2;
    cell.forward(x, h, c, h1, c1, k1);
    cell.project_input(x, gi);
    const std::vector<int> lengths{2, 1, 5};  // at t = 1 row 1 is padding
    cell.forward_projected(gi, h, c, h2, c2, k2, {.lengths = lengths, .t = 1});
    EXPECT_TRUE(close_abs(h1.select(0), h2.select(0), 0));
    EXPECT_TRUE(close_abs(c1.select(2), c2.select(2), 0));
    EXPECT_TRUE(close_abs(h2.select(1), h.select(1), 0));
    EXPECT_TRUE(close_abs(c2.select(1), c.select(1), 0));

    Tensor dy = random_tensor(rng, {3, 5}), dcy = random_tensor(rng, {3, 5});
    Tensor d_gi({3, 20}), d_h({3, 5}), d_c({3, 5});
    cell.backward_projected(dy, dcy, h, c, k2, d_gi, d_h, d_c, {.lengths = lengths, .t = 1});
    for (int j = 0; j < 5; ++j) {
        EXPECT_FLOAT_EQ(d_h.at(1, j), dy.at(1, j));
        EXPECT_FLOAT_EQ(d_c.at(1, j), dcy.at(1, j));
    }
    for (int j = 0; j < 20; ++j) EXPECT_EQ(d_gi.at(1, j), 0.0f);
}

// The same step from simple ops in double: per-gate affine maps, libm activations, and the
// backward of each simple op on its own.
TEST(LSTMCell, FusedStepEqualsSimpleOpsForwardAndBackward) {
    Rng rng(4);
    const int N = 3, I = 4, H = 5;
    LSTMCell cell({.input_size = I, .hidden_size = H}, rng);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           c = random_tensor(rng, {N, H});
    Tensor dy = random_tensor(rng, {N, H}), dcy = random_tensor(rng, {N, H});
    Tensor h_new({N, H}), c_new({N, H}), d_x({N, I}), d_h({N, H}), d_c({N, H});
    LSTMStepCache cache;
    cell.forward(x, h, c, h_new, c_new, cache);
    cell.backward(dy, dcy, x, h, c, cache, d_x, d_h, d_c);

    const auto& P = cell.params;
    auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    // a_g[n, j] = W_ih[gH + j] · x[n] + b_ih + W_hh[gH + j] · h[n] + b_hh
    auto pre = [&](int g, int n, int j) {
        double s = P.bias_ih[g * H + j] + P.bias_hh[g * H + j];
        for (int k = 0; k < I; ++k) s += double(P.weight_ih.at(g * H + j, k)) * x.at(n, k);
        for (int k = 0; k < H; ++k) s += double(P.weight_hh.at(g * H + j, k)) * h.at(n, k);
        return s;
    };
    Tensor ref_h({N, H}), ref_c({N, H}), ref_dx({N, I}), ref_dh({N, H}), ref_dc({N, H});
    Tensor ref_dWih({4 * H, I}), ref_dWhh({4 * H, H}), ref_db({4 * H});
    std::vector<double> acc_dx(N * I, 0), acc_dh(N * H, 0), acc_dWih(4 * H * I, 0),
        acc_dWhh(4 * H * H, 0), acc_db(4 * H, 0);
    for (int n = 0; n < N; ++n)
        for (int j = 0; j < H; ++j) {
            const double i = sig(pre(0, n, j)), f = sig(pre(1, n, j)), g = std::tanh(pre(2, n, j)),
                         o = sig(pre(3, n, j));
            const double cn = f * c.at(n, j) + i * g, tc = std::tanh(cn);
            ref_c.at(n, j) = static_cast<float>(cn);
            ref_h.at(n, j) = static_cast<float>(o * tc);
            // h' = o · t, t = tanh(c');  c' = f c + i g   (each op's derivative on its own)
            const double d_o = dy.at(n, j) * tc;
            const double d_t = dy.at(n, j) * o;
            const double d_cn = dcy.at(n, j) + d_t * (1 - tc * tc);
            ref_dc.at(n, j) = static_cast<float>(d_cn * f);
            const double d_pre[4] = {d_cn * g * i * (1 - i), d_cn * c.at(n, j) * f * (1 - f),
                                     d_cn * i * (1 - g * g), d_o * o * (1 - o)};
            for (int q = 0; q < 4; ++q) {
                const int row = q * H + j;
                acc_db[row] += d_pre[q];
                for (int k = 0; k < I; ++k) {
                    acc_dWih[row * I + k] += d_pre[q] * x.at(n, k);
                    acc_dx[n * I + k] += d_pre[q] * P.weight_ih.at(row, k);
                }
                for (int k = 0; k < H; ++k) {
                    acc_dWhh[row * H + k] += d_pre[q] * h.at(n, k);
                    acc_dh[n * H + k] += d_pre[q] * P.weight_hh.at(row, k);
                }
            }
        }
    for (int i = 0; i < N * I; ++i) ref_dx[i] = static_cast<float>(acc_dx[i]);
    for (int i = 0; i < N * H; ++i) ref_dh[i] = static_cast<float>(acc_dh[i]);
    for (int i = 0; i < 4 * H * I; ++i) ref_dWih[i] = static_cast<float>(acc_dWih[i]);
    for (int i = 0; i < 4 * H * H; ++i) ref_dWhh[i] = static_cast<float>(acc_dWhh[i]);
    for (int i = 0; i < 4 * H; ++i) ref_db[i] = static_cast<float>(acc_db[i]);
    // float32 fused kernels (≈1-2 ulp activations) vs float64 libm: 1e-5 relative.
    EXPECT_TRUE(close_rel(h_new, ref_h, 1e-5));
    EXPECT_TRUE(close_rel(c_new, ref_c, 1e-5));
    EXPECT_TRUE(close_rel(d_x, ref_dx, 1e-5));
    EXPECT_TRUE(close_rel(d_h, ref_dh, 1e-5));
    EXPECT_TRUE(close_rel(d_c, ref_dc, 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.weight_ih, ref_dWih, 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.weight_hh, ref_dWhh, 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.bias_ih, ref_db, 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.bias_hh, ref_db, 1e-5));
}

TEST(LSTMCell, ParamsAndErrors) {
    Rng rng(5);
    EXPECT_THROW(LSTMCell({.input_size = 3, .hidden_size = 0}, rng), Error);
    LSTMCell cell({.input_size = 3, .hidden_size = 4}, rng);
    EXPECT_EQ(cell.params.weight_ih.shape(), (Shape{16, 3}));
    EXPECT_EQ(cell.params.weight_hh.shape(), (Shape{16, 4}));
    Tensor x({2, 3}), h({2, 4}), c({2, 4}), hn({2, 4}), cn({2, 4}), bad_c({2, 3}), bad_x({2, 4});
    LSTMStepCache cache;
    EXPECT_THROW(cell.forward(bad_x, h, c, hn, cn, cache), Error);
    EXPECT_THROW(cell.forward(x, h, bad_c, hn, cn, cache), Error);
    Tensor gi({2, 12});
    EXPECT_THROW(cell.forward_projected(gi, h, c, hn, cn, cache), Error);
    cell.forward(x, h, c, hn, cn, cache);
    Tensor d_h({2, 4});
    EXPECT_THROW(cell.backward(hn, cn, x, h, c, cache, TensorView(), d_h, cn),
                 Error);  // d_c aliases d_c_new
}

}  // namespace test_nn_lstm_cell
