// GRUCell: a 1-unit step by hand, masked rows, projected == raw input, the fused step against
// the same step built from simple ops (per-gate affine loops + libm activations, float64),
// forward and backward, and error paths.
#include "nazar/core/params.h"
#include "nazar/nn/gru_cell.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace test_nn_gru_cell {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::close_rel;
using nazar::test::random_tensor;

using test::vec;

// I = H = 1. W_ih = [0.5, −0.5, 1], W_hh = [1, 0.5, −1], b_ih = [0, 0, 0.1], b_hh = [0.1, 0, 0.2]
static GRUCell one_unit_cell() {
    Rng rng(1);
    GRUCell cell({.input_size = 1, .hidden_size = 1}, rng);
    cell.params.weight_ih = Tensor::from({3, 1}, std::vector<float>{0.5f, -0.5f, 1.0f});
    cell.params.weight_hh = Tensor::from({3, 1}, std::vector<float>{1.0f, 0.5f, -1.0f});
    cell.params.bias_ih = vec({0, 0, 0.1f});
    cell.params.bias_hh = vec({0.1f, 0, 0.2f});
    return cell;
}

TEST(GRUCell, OneUnitStepByHand) {
    GRUCell cell = one_unit_cell();
    Tensor x = Tensor::from({1, 1}, std::vector<float>{1.0f});
    Tensor h = Tensor::from({1, 1}, std::vector<float>{0.5f});
    Tensor h_new({1, 1});
    GRUStepCache cache;
    cell.forward(x, h, h_new, cache);
    // r = σ(0.5 + 0.5 + 0.1) = σ(1.1) = 0.7502601
    // z = σ(−0.5 + 0.25)      = σ(−0.25) = 0.4378235
    // gh_n = −0.5 + 0.2 = −0.3;  n = tanh(1 + 0.1 + r · (−0.3)) = tanh(0.8749220) = 0.7038662
    // h' = (1 − z) n + z h = 0.6146088
    EXPECT_NEAR(cache.gates[0], 0.7502601f, 1e-6);
    EXPECT_NEAR(cache.gates[1], 0.4378235f, 1e-6);
    EXPECT_NEAR(cache.gates[2], 0.7038662f, 1e-6);
    EXPECT_NEAR(cache.gh_n[0], -0.3f, 1e-7);
    EXPECT_NEAR(h_new[0], 0.6146088f, 1e-6);

    // d h'/d h, d/d W_hh and d/d b_ih from torch.autograd on the same cell (float64).
    Tensor d_h_new = Tensor::from({1, 1}, std::vector<float>{1.0f});
    Tensor d_h({1, 1}), d_x({1, 1});
    cell.backward(d_h_new, x, h, cache, d_x, d_h);
    EXPECT_NEAR(d_h[0], 0.18397175f, 1e-6);
    EXPECT_NEAR(cell.grad.weight_hh[0], -0.00797236f, 1e-6);
    EXPECT_NEAR(cell.grad.weight_hh[1], -0.02508921f, 1e-6);
    EXPECT_NEAR(cell.grad.weight_hh[2], 0.10640890f, 1e-6);
    EXPECT_NEAR(cell.grad.bias_ih[0], -0.01594473f, 1e-6);
    EXPECT_NEAR(cell.grad.bias_ih[1], -0.05017843f, 1e-6);
    EXPECT_NEAR(cell.grad.bias_ih[2], 0.28365870f, 1e-6);
    // x = 1, so d W_ih = d b_ih; d x = Σ_g W_ig d a_g
    EXPECT_NEAR(cell.grad.weight_ih[2], cell.grad.bias_ih[2], 1e-7);
    EXPECT_NEAR(d_x[0],
                0.5f * cell.grad.bias_ih[0] - 0.5f * cell.grad.bias_ih[1] + cell.grad.bias_ih[2],
                1e-6);
}

TEST(GRUCell, ParamsLayoutAndInit) {
    Rng rng(2);
    GRUCell cell({.input_size = 3, .hidden_size = 4}, rng);
    ParamList pl;
    collect_params(cell.params, cell.grad, "decoder.rnn.", pl);
    ASSERT_EQ(pl.size(), 4u);
    EXPECT_EQ(pl[0].name, "decoder.rnn.weight_ih");
    EXPECT_EQ(pl[0].value->shape(), (Shape{12, 3}));
    EXPECT_EQ(pl[1].value->shape(), (Shape{12, 4}));
    EXPECT_EQ(pl[3].name, "decoder.rnn.bias_hh");
    for (const auto& p : pl)
        for (int64_t i = 0; i < p.value->numel(); ++i)
            EXPECT_LE(std::abs((*p.value)[i]), 0.5f);  // 1/sqrt(4)
    GRUCell nb({.input_size = 3, .hidden_size = 4, .bias = false}, rng);
    ParamList pl2;
    collect_params(nb.params, nb.grad, "", pl2);
    EXPECT_EQ(pl2.size(), 2u);
}

TEST(GRUCell, ProjectedEqualsRawInputAndMaskedRowsKeepState) {
    Rng rng(3);
    GRUCell cell({.input_size = 4, .hidden_size = 5}, rng);
    Tensor x = random_tensor(rng, {3, 4}), h = random_tensor(rng, {3, 5});
    Tensor gi({3, 15}), h1({3, 5}), h2({3, 5});
    GRUStepCache c1, c2;
    cell.forward(x, h, h1, c1);
    cell.project_input(x, gi);
    const std::vector<int> lengths{2, 1, 5};  // at t = 1 row 1 is padding
    cell.forward_projected(gi, h, h2, c2, {.lengths = lengths, .t = 1});
    EXPECT_TRUE(close_abs(h1.select(0), h2.select(0), 0));
    EXPECT_TRUE(close_abs(h1.select(2), h2.select(2), 0));
    EXPECT_TRUE(close_abs(h2.select(1), h.select(1), 0));  // masked row: h' = h

    Tensor dy = random_tensor(rng, {3, 5}), d_gi({3, 15}), d_h({3, 5});
    cell.backward_projected(dy, h, c2, d_gi, d_h, {.lengths = lengths, .t = 1});
    for (int j = 0; j < 5; ++j) {
        // masked row: d_h = d_h' + (d_gh = 0) W_hh
        EXPECT_FLOAT_EQ(d_h.at(1, j), dy.at(1, j));
    }
    for (int j = 0; j < 15; ++j) EXPECT_EQ(d_gi.at(1, j), 0.0f);
}

// forward_projected writes gh = 0 + b_hh once and accumulates h W_hhᵀ onto it (no zeroed buffer,
// no add pass): bit for bit the step of a zeroed buffer plus add_bias_rows plus the product, on
// 1500 rows, with -0 biases and zero state rows among them.
TEST(GRUCell, ProjectedStepBitEqualsZeroedBufferPlusBias) {
    Rng rng(11);
    const int N = 1500, I = 6, H = 8;
    GRUCell cell({.input_size = I, .hidden_size = H}, rng);
    for (int j = 0; j < 3 * H; j += 5) cell.params.bias_hh.data()[j] = -0.0f;
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H});
    for (int n = 0; n < N; n += 7)
        for (int j = 0; j < H; ++j) h.at(n, j) = 0.0f;
    Tensor gi({N, 3 * H}), h1({N, H}), h2({N, H}), gates({N, 3 * H}), gh_n({N, H});
    cell.project_input(x, gi);
    GRUStepCache c;
    cell.forward_projected(gi, h, h1, c);
    cell_add_recurrent(cell.params, h, gates);  // gates zeroed by the constructor
    gru::gates_forward(gi, h, gates, gh_n, h2);
    EXPECT_EQ(std::memcmp(h1.data(), h2.data(), sizeof(float) * N * H), 0);
    EXPECT_EQ(std::memcmp(c.gates.data(), gates.data(), sizeof(float) * N * 3 * H), 0);
    EXPECT_EQ(std::memcmp(c.gh_n.data(), gh_n.data(), sizeof(float) * N * H), 0);
}

// The same step from simple ops, in double: one affine map per gate (W_g (H, I) taken out of
// the stacked weights, plain loops), libm sigmoid/tanh, and the backward of each simple op
// written separately (no fused formula).
struct RefGRU {
    int N = 0, I = 0, H = 0;
    std::vector<double> Wih, Whh, bih, bhh, x, h;  // as the cell stores them
    std::vector<double> out, d_x, d_h, d_Wih, d_Whh, d_bih, d_bhh;

    static double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }
    // y (N, H) = a (N, K) · W[g·H: (g+1)·H, :]ᵀ + b[g·H ...]
    std::vector<double> affine(const std::vector<double>& a, int K, const std::vector<double>& W,
                               const std::vector<double>& b, int g) const {
        std::vector<double> y(N * H);
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; ++j) {
                double s = b[g * H + j];
                for (int k = 0; k < K; ++k) s += a[n * K + k] * W[(g * H + j) * K + k];
                y[n * H + j] = s;
            }
        return y;
    }
    void affine_back(const std::vector<double>& dy, const std::vector<double>& a, int K,
                     const std::vector<double>& W, std::vector<double>& dW, std::vector<double>& db,
                     std::vector<double>& da, int g) const {
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; ++j) {
                const double d = dy[n * H + j];
                db[g * H + j] += d;
                for (int k = 0; k < K; ++k) {
                    dW[(g * H + j) * K + k] += d * a[n * K + k];
                    da[n * K + k] += d * W[(g * H + j) * K + k];
                }
            }
    }
    void run(const std::vector<double>& dy) {
        auto xr = affine(x, I, Wih, bih, 0), xz = affine(x, I, Wih, bih, 1),
             xn = affine(x, I, Wih, bih, 2);
        auto hr = affine(h, H, Whh, bhh, 0), hz = affine(h, H, Whh, bhh, 1),
             hn = affine(h, H, Whh, bhh, 2);
        const int M = N * H;
        std::vector<double> r(M), z(M), n(M), dr(M), dz(M), dn(M), dxr(M), dxz(M), dxn(M), dhr(M),
            dhz(M), dhn(M);
        out.assign(M, 0);
        for (int i = 0; i < M; ++i) {
            r[i] = sig(xr[i] + hr[i]);
            z[i] = sig(xz[i] + hz[i]);
            n[i] = std::tanh(xn[i] + r[i] * hn[i]);
            out[i] = (1 - z[i]) * n[i] + z[i] * h[i];
        }
        d_x.assign(N * I, 0);
        d_h.assign(M, 0);
        d_Wih.assign(Wih.size(), 0);
        d_Whh.assign(Whh.size(), 0);
        d_bih.assign(bih.size(), 0);
        d_bhh.assign(bhh.size(), 0);
        for (int i = 0; i < M; ++i) {
            // out = (1 − z) n + z h
            dn[i] = dy[i] * (1 - z[i]);
            dz[i] = dy[i] * (h[i] - n[i]);
            d_h[i] += dy[i] * z[i];
            // n = tanh(u), u = xn + r hn
            const double du = dn[i] * (1 - n[i] * n[i]);
            dxn[i] = du;
            dhn[i] = du * r[i];
            dr[i] = du * hn[i];
            // r = σ(xr + hr), z = σ(xz + hz)
            dxr[i] = dhr[i] = dr[i] * r[i] * (1 - r[i]);
            dxz[i] = dhz[i] = dz[i] * z[i] * (1 - z[i]);
        }
        affine_back(dxr, x, I, Wih, d_Wih, d_bih, d_x, 0);
        affine_back(dxz, x, I, Wih, d_Wih, d_bih, d_x, 1);
        affine_back(dxn, x, I, Wih, d_Wih, d_bih, d_x, 2);
        affine_back(dhr, h, H, Whh, d_Whh, d_bhh, d_h, 0);
        affine_back(dhz, h, H, Whh, d_Whh, d_bhh, d_h, 1);
        affine_back(dhn, h, H, Whh, d_Whh, d_bhh, d_h, 2);
    }
};

static std::vector<double> to_d(ConstTensorView t) {
    return {t.data(), t.data() + t.numel()};
}
static Tensor to_f(const std::vector<double>& v, Shape s) {
    Tensor t(s);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(v[i]);
    return t;
}

TEST(GRUCell, FusedStepEqualsSimpleOpsForwardAndBackward) {
    Rng rng(4);
    const int N = 3, I = 4, H = 5;
    GRUCell cell({.input_size = I, .hidden_size = H}, rng);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           dy = random_tensor(rng, {N, H});
    Tensor h_new({N, H}), d_x({N, I}), d_h({N, H});
    GRUStepCache cache;
    cell.forward(x, h, h_new, cache);
    cell.backward(dy, x, h, cache, d_x, d_h);

    RefGRU ref;
    ref.N = N, ref.I = I, ref.H = H;
    ref.Wih = to_d(cell.params.weight_ih), ref.Whh = to_d(cell.params.weight_hh);
    ref.bih = to_d(cell.params.bias_ih), ref.bhh = to_d(cell.params.bias_hh);
    ref.x = to_d(x), ref.h = to_d(h);
    ref.run(to_d(dy));
    // float32 with ≈1-2 ulp polynomial activations vs float64 libm: 1e-5 relative is ~100 ulp.
    EXPECT_TRUE(close_rel(h_new, to_f(ref.out, {N, H}), 1e-5));
    EXPECT_TRUE(close_rel(d_x, to_f(ref.d_x, {N, I}), 1e-5));
    EXPECT_TRUE(close_rel(d_h, to_f(ref.d_h, {N, H}), 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.weight_ih, to_f(ref.d_Wih, {3 * H, I}), 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.weight_hh, to_f(ref.d_Whh, {3 * H, H}), 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.bias_ih, to_f(ref.d_bih, {3 * H}), 1e-5));
    EXPECT_TRUE(close_rel(cell.grad.bias_hh, to_f(ref.d_bhh, {3 * H}), 1e-5));
}

TEST(GRUCell, Errors) {
    Rng rng(5);
    EXPECT_THROW(GRUCell({.input_size = 0, .hidden_size = 4}, rng), Error);
    GRUCell cell({.input_size = 3, .hidden_size = 4}, rng);
    Tensor x({2, 3}), h({2, 4}), h_new({2, 4}), bad_h({2, 5}), bad_x({2, 2}), bad_gi({2, 11});
    GRUStepCache cache;
    EXPECT_THROW(cell.forward(bad_x, h, h_new, cache), Error);
    EXPECT_THROW(cell.forward(x, bad_h, h_new, cache), Error);
    EXPECT_THROW(cell.forward_projected(bad_gi, h, h_new, cache), Error);
    Tensor h_new_bad({3, 4});
    EXPECT_THROW(cell.forward(x, h, h_new_bad, cache), Error);
    const std::vector<int> lengths{1, 2, 3};  // 3 lengths for 2 rows
    Tensor gi({2, 12});
    EXPECT_THROW(cell.forward_projected(gi, h, h_new, cache, {.lengths = lengths, .t = 0}), Error);
    cell.forward(x, h, h_new, cache);
    EXPECT_THROW(cell.backward(h_new, x, h, cache, TensorView(), h_new),
                 Error);  // d_h aliases d_h_new
}

}  // namespace test_nn_gru_cell
