// layer_norm::blocks_forward / blocks_backward (nazar/nn/layer_norm.h) on rows checked by hand,
// and the layer-normalised GRU step (GRUCell with layer_norm) against a float64 oracle written
// from docs/spec.md §2.3 (per-gate loops, sharing no code with the fused kernels), forward and
// input gradients, with a masked row, at H = 16 and 19 (the vector widths and a remainder);
// error paths.
#include "nazar/nn/gru_cell.h"
#include "nazar/nn/layer_norm.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_nn_layer_norm {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

// Row [1, 2, 3 | 4, 4, 4], H = 3: block 0 has μ = 2, σ² = 2/3; block 1 is constant (σ² = 0).
TEST(LayerNorm, BlocksByHand) {
    Tensor a = Tensor::from({1, 6}, std::vector<float>{1, 2, 3, 4, 4, 4});
    const Tensor gamma = Tensor::from({6}, std::vector<float>{1, 2, 3, 1, 1, 1});
    const Tensor beta = Tensor::from({6}, std::vector<float>{0, 0, 0, 0.5f, 0.5f, 0.5f});
    Tensor xhat({1, 6}), rstd({1, 2});
    layer_norm::blocks_forward(a, 3, gamma, beta, xhat, rstd);
    const double rs = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);
    EXPECT_NEAR(rstd.at(0, 0), rs, 1e-5);
    EXPECT_NEAR(rstd.at(0, 1), 1.0 / std::sqrt(1e-5), 1e-2);
    EXPECT_NEAR(a.at(0, 0), -1.0 * rs, 1e-5);
    EXPECT_NEAR(a.at(0, 1), 0.0, 1e-6);
    EXPECT_NEAR(a.at(0, 2), 3.0 * rs, 1e-5);
    for (int j = 3; j < 6; ++j) EXPECT_EQ(a.at(0, j), 0.5f);  // â = 0: only the shift
    // d_y = [1, 0, 0 | 1, 1, 1]: d_γ = d_y ⊙ â, d_β = d_y; the block-constant d_y of block 1
    // has no component that changes â, so its d_a is 0
    Tensor d = Tensor::from({1, 6}, std::vector<float>{1, 0, 0, 1, 1, 1});
    Tensor d_gamma({6}), d_beta({6});
    layer_norm::blocks_backward(d, 3, gamma, xhat, rstd, d_gamma, d_beta);
    EXPECT_NEAR(d_gamma[0], -rs, 1e-5);
    EXPECT_EQ(d_beta[0], 1.0f);
    EXPECT_EQ(d_beta[4], 1.0f);
    for (int j = 3; j < 6; ++j) EXPECT_NEAR(d[j], 0.0, 1e-6);
    // block 0: g = [1, 0, 0], mean g = 1/3, mean g ⊙ â = −rs/3 · (1 ... ) by the formula
    const double xh[3] = {-rs, 0.0, rs}, g[3] = {1, 0, 0};
    const double mg = 1.0 / 3, mgx = xh[0] / 3;
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(d[j], rs * (g[j] - mg - xh[j] * mgx), 1e-4);
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += d[j];
    EXPECT_NEAR(sum, 0.0, 1e-5);  // d_a ⟂ constants: a shift of a block changes nothing
}

// The float64 oracle: one step of the layer-normalised GRU, straight from docs/spec.md §2.3.
std::vector<double> oracle_step(const GRUCell& cell, const Tensor& x, const Tensor& h, int b,
                                bool active) {
    const RNNCellParams& p = cell.params;
    const int I = cell.cfg.input_size, H = cell.cfg.hidden_size;
    std::vector<double> hn(H);
    if (!active) {
        for (int j = 0; j < H; ++j) hn[j] = h.at(b, j);
        return hn;
    }
    const auto ln = [&](const Tensor& W, const Tensor& in, int K, const Tensor& gain,
                        const Tensor& bias) {
        std::vector<double> a(3 * H);
        for (int o = 0; o < 3 * H; ++o) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += static_cast<double>(W.at(o, k)) * in.at(b, k);
            a[o] = s;
        }
        for (int g = 0; g < 3; ++g) {
            double mu = 0, var = 0;
            for (int j = 0; j < H; ++j) mu += a[g * H + j] / H;
            for (int j = 0; j < H; ++j) var += (a[g * H + j] - mu) * (a[g * H + j] - mu) / H;
            for (int j = 0; j < H; ++j) {
                const int o = g * H + j;
                a[o] = (a[o] - mu) / std::sqrt(var + 1e-5) * gain[o] + bias[o];
            }
        }
        return a;
    };
    const std::vector<double> gi = ln(p.weight_ih, x, I, p.ln_weight_ih, p.bias_ih);
    const std::vector<double> gh = ln(p.weight_hh, h, H, p.ln_weight_hh, p.bias_hh);
    const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    for (int j = 0; j < H; ++j) {
        const double r = sig(gi[j] + gh[j]), z = sig(gi[H + j] + gh[H + j]);
        const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
        hn[j] = (1 - z) * n + z * h.at(b, j);
    }
    return hn;
}

TEST(LayerNorm, GRUStepMatchesFloat64Oracle) {
    for (const int H : {16, 19}) {
        Rng rng(static_cast<uint64_t>(H));
        const int N = 5, I = 23;
        GRUCell cell({.input_size = I, .hidden_size = H, .layer_norm = true}, rng);
        EXPECT_EQ(cell.params.ln_weight_ih[0], 1.0f);  // initialised to 1
        rng.fill_uniform(cell.params.ln_weight_ih, 0.5f, 1.5f);
        rng.fill_uniform(cell.params.ln_weight_hh, 0.5f, 1.5f);
        Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H});
        const std::vector<int> lengths{2, 1, 2, 2, 0};
        const StepMask mask{lengths, 1};  // rows 1 and 4 are padding
        Tensor h_new({N, H});
        GRUStepCache cache;
        cell.forward(x, h, h_new, cache, mask);
        Tensor want({N, H});
        for (int b = 0; b < N; ++b) {
            const std::vector<double> o = oracle_step(cell, x, h, b, mask.active(b));
            for (int j = 0; j < H; ++j) want.at(b, j) = static_cast<float>(o[j]);
        }
        EXPECT_TRUE(close_abs(h_new, want, 2e-6)) << "H = " << H;
        // d_x, d_h of loss Σ h' ⊙ R against central differences of the float64 oracle
        const Tensor R = random_tensor(rng, {N, H});
        Tensor d_x({N, I}), d_h({N, H});
        cell.backward(R, x, h, cache, d_x, d_h, mask);
        const auto loss = [&](const Tensor& xx, const Tensor& hh) {
            double l = 0;
            for (int b = 0; b < N; ++b) {
                const std::vector<double> o = oracle_step(cell, xx, hh, b, mask.active(b));
                for (int j = 0; j < H; ++j) l += o[j] * R.at(b, j);
            }
            return l;
        };
        const double eps = 1e-3;  // float inputs: perturb by a representable step
        for (const auto& [t, g] : {std::pair<Tensor*, const Tensor*>{&x, &d_x}, {&h, &d_h}}) {
            Tensor& v = *t;
            for (int64_t i = 0; i < v.numel(); i += 7) {
                const float keep = v[i];
                v[i] = keep + static_cast<float>(eps);
                const double up = loss(x, h);
                v[i] = keep - static_cast<float>(eps);
                const double down = loss(x, h);
                v[i] = keep;
                const double num = (up - down) / (2 * eps);
                EXPECT_NEAR((*g)[i], num, 1e-3 + 1e-3 * std::abs(num)) << "H = " << H << " i " << i;
            }
        }
    }
}

TEST(LayerNorm, ErrorPaths) {
    Tensor a({2, 6}), gamma({6}), xhat({2, 6}), rstd({2, 2});
    EXPECT_THROW(layer_norm::blocks_forward(a, 4, gamma, {}), Error);  // 6 is not blocks of 4
    EXPECT_THROW(layer_norm::blocks_forward(a, 3, Tensor({5}), {}), Error);
    EXPECT_THROW(layer_norm::blocks_forward(a, 3, gamma, {}, xhat, Tensor({2, 3})), Error);
    Tensor dg({6});
    EXPECT_THROW(layer_norm::blocks_backward(a, 3, gamma, Tensor({1, 6}), rstd, dg, {}), Error);
}

}  // namespace test_nn_layer_norm
