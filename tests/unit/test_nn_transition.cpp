// Deep transition (nn/transition.h) against a double-precision oracle written from the
// equations: every sentence alone, position by position, the layer's GRU cell and then its
// transitions, with and without layer norm and residual connections, at H = 40 (two 16-lane
// vectors and a tail); the parameter names; depth 1 is the plain RNN.
#include "nazar/nn/rnn.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <string>
#include <vector>

namespace test_nn_transition {

using namespace nazar;
using namespace nazar::test;

using Vec = std::vector<double>;

double sigmoid(double v) {
    return 1.0 / (1.0 + std::exp(-v));
}

// y = W h (rows of W: 3H), then per gate block LN with gain γ when given, then + bias
Vec affine(const Tensor& W, const Vec& h, const Tensor& bias, const Tensor& gamma, int H) {
    const int GH = W.dim(0), K = W.dim(1);
    Vec y(GH, 0.0);
    for (int i = 0; i < GH; ++i)
        for (int k = 0; k < K; ++k) y[i] += double{W.data()[int64_t{i} * K + k]} * h[k];
    if (gamma.numel() > 0)
        for (int g = 0; g < GH / H; ++g) {
            double mu = 0, var = 0;
            for (int j = 0; j < H; ++j) mu += y[g * H + j] / H;
            for (int j = 0; j < H; ++j) var += (y[g * H + j] - mu) * (y[g * H + j] - mu) / H;
            for (int j = 0; j < H; ++j)
                y[g * H + j] =
                    gamma.data()[g * H + j] * (y[g * H + j] - mu) / std::sqrt(var + 1e-5);
        }
    if (bias.numel() > 0)
        for (int i = 0; i < GH; ++i) y[i] += bias.data()[i];
    return y;
}

Vec gru(const Vec& gi, const Vec& gh, const Vec& h, int H) {
    Vec out(H);
    for (int j = 0; j < H; ++j) {
        const double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[H + j] + gh[H + j]);
        const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
        out[j] = (1 - z) * n + z * h[j];
    }
    return out;
}

// One layer-direction over one sentence's inputs xs (in time order); returns the outputs.
std::vector<Vec> run_direction(const RNNCellParams& p, const std::vector<TransitionParams>& tr,
                               const std::vector<Vec>& xs, bool reverse, Vec h, int H, Vec& final) {
    std::vector<Vec> out(xs.size());
    const int T = static_cast<int>(xs.size());
    for (int s = 0; s < T; ++s) {
        const int t = reverse ? T - 1 - s : s;
        const Vec gi = affine(p.weight_ih, xs[t], p.bias_ih, p.ln_weight_ih, H);
        h = gru(gi, affine(p.weight_hh, h, p.bias_hh, p.ln_weight_hh, H), h, H);
        for (const TransitionParams& q : tr) {
            Vec b(3 * H, 0.0);
            for (int i = 0; i < 3 * H; ++i) b[i] = q.bias_ih.data()[i];
            h = gru(b, affine(q.weight_hh, h, q.bias_hh, q.ln_weight_hh, H), h, H);
        }
        out[t] = h;
    }
    final = h;
    return out;
}

class Transition : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(Transition, MatchesTheDoublePrecisionOracle) {
    const auto [ln, residual] = GetParam();
    Rng rng(5);
    const int B = 3, T = 5, I = 7, H = 40, L = 2, D = 2, depth = 3;
    RNN rnn({.input_size = I,
             .hidden_size = H,
             .num_layers = L,
             .bidirectional = true,
             .layer_norm = ln,
             .residual = residual,
             .transition_depth = depth},
            rng);
    for (auto& chain : rnn.params.transitions)
        for (auto& p : chain)
            if (ln) rng.fill_uniform(p.ln_weight_hh, 0.5f, 1.5f);
    const std::vector<int> lengths{5, 2, 0};
    const Tensor x = random_tensor(rng, {B, T, I});
    const Tensor h0 = random_tensor(rng, {L * D, B, H}, -0.5f, 0.5f);
    Tensor out({B, T, D * H});
    RNNState final;
    RNNCache cache;
    rnn.forward(x, lengths, {h0, Tensor({0})}, out, final, cache, rng, Mode::eval);

    double worst = 0;
    for (int b = 0; b < B; ++b) {
        const int n = lengths[b];
        std::vector<Vec> in(n);
        for (int t = 0; t < n; ++t)
            for (int i = 0; i < I; ++i) in[t].push_back(x.at(b, t, i));
        for (int k = 0; k < L; ++k) {
            std::vector<Vec> y(n);
            for (int d = 0; d < D; ++d) {
                Vec init(H), last;
                for (int j = 0; j < H; ++j) init[j] = h0.at(k * D + d, b, j);
                const auto o =
                    run_direction(rnn.params.cells[k * D + d], rnn.params.transitions[k * D + d],
                                  in, d == 1, init, H, last);
                for (int t = 0; t < n; ++t) y[t].insert(y[t].end(), o[t].begin(), o[t].end());
                for (int j = 0; j < H; ++j)
                    worst = std::max(worst, std::abs(final.h.at(k * D + d, b, j) - last[j]));
            }
            if (residual && k > 0)
                for (int t = 0; t < n; ++t)
                    for (int j = 0; j < D * H; ++j) y[t][j] += in[t][j];
            in = y;
        }
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < D * H; ++j)
                worst = std::max(worst, std::abs(out.at(b, t, j) - (t < n ? in[t][j] : 0.0)));
    }
    EXPECT_LT(worst, 2e-5) << "layer_norm " << ln << ", residual " << residual;
}

INSTANTIATE_TEST_SUITE_P(Variants, Transition,
                         ::testing::Values(std::tuple{false, false}, std::tuple{true, false},
                                           std::tuple{false, true}, std::tuple{true, true}));

// Names: each layer-direction's tensors, then its transitions' (torch's order per layer: forward
// then _reverse); depth 1 has none, and draws the same values as an RNN without the option.
TEST(Transition, NamesAndDepthOne) {
    Rng a(3), b(3);
    RNN deep({.input_size = 2, .hidden_size = 4, .bidirectional = true, .transition_depth = 3}, a);
    std::vector<std::string> names;
    deep.params.visit([&](const std::string& n, Tensor& t) {
        if (t.numel() > 0) names.push_back(n);
    });
    const std::vector<std::string> expected{"weight_ih_l0",
                                            "weight_hh_l0",
                                            "bias_ih_l0",
                                            "bias_hh_l0",
                                            "weight_hh_l0_t1",
                                            "bias_ih_l0_t1",
                                            "bias_hh_l0_t1",
                                            "weight_hh_l0_t2",
                                            "bias_ih_l0_t2",
                                            "bias_hh_l0_t2",
                                            "weight_ih_l0_reverse",
                                            "weight_hh_l0_reverse",
                                            "bias_ih_l0_reverse",
                                            "bias_hh_l0_reverse",
                                            "weight_hh_l0_reverse_t1",
                                            "bias_ih_l0_reverse_t1",
                                            "bias_hh_l0_reverse_t1",
                                            "weight_hh_l0_reverse_t2",
                                            "bias_ih_l0_reverse_t2",
                                            "bias_hh_l0_reverse_t2"};
    EXPECT_EQ(names, expected);
    Rng c(3);
    RNN one({.input_size = 2, .hidden_size = 4, .bidirectional = true, .transition_depth = 1}, b);
    RNN plain({.input_size = 2, .hidden_size = 4, .bidirectional = true}, c);
    EXPECT_TRUE(close_abs(one.params.cells[1].weight_hh, plain.params.cells[1].weight_hh, 0));
    EXPECT_THROW(
        RNN({.cell = CellType::lstm, .input_size = 2, .hidden_size = 4, .transition_depth = 2}, a),
        Error);
}

}  // namespace test_nn_transition
