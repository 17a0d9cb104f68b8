// Finite-difference checks of RNN::backward: bidirectional 2-layer GRU and LSTM on a padded
// batch, gradients w.r.t. the input, the initial states (h and c) and every parameter, with
// upstream gradients on both the outputs and the final states; and once with dropout between
// the layers (train mode; the Rng is re-seeded for every forward so the masks stay fixed); and the
// layer-normalised GRU and LSTM (H = 16, so the vector widths are used; gains drawn away from 1);
// residual connections (3 layers: two residual sums in a row, with and without dropout; with layer
// norm they are checked by the parity fixture rnn_lstm_layer_norm_residual_2layer, as H = 16 and
// three layers of normalised 3-term products put eps = 1e-3 differences 3e-3 off on layer 0);
// deep transition (depth 3: two transitions per step, every gradient through the chain, with
// dropout and with layer norm).
#include "nazar/nn/rnn.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <string>
#include <vector>

namespace test_grad_rnn {

using namespace nazar;
using namespace nazar::test;

struct Case {
    CellType cell;
    float dropout;
    bool layer_norm = false;
    bool residual = false;
    int depth = 1;  // transition_depth
};

class RNNGrad : public ::testing::TestWithParam<Case> {};

TEST_P(RNNGrad, BackwardMatchesFiniteDifferences) {
    const auto [cell, p_drop, ln, residual, depth] = GetParam();
    const bool lstm = cell == CellType::lstm;
    Rng rng(11);
    // I = 12 with LN and transitions: two normalised products in a row on top of layer 0's
    // 3-term ones put one entry of weight_ih_l0_reverse 2.06e-3 off at eps = 1e-3 (−1.70e-3
    // numeric vs 3.6e-4 analytic; the parity fixture of the same RNN agrees with autograd).
    const int B = 3, T = 4, I = ln && depth > 1 ? 12 : 3, H = ln ? 16 : 3, L = residual ? 3 : 2,
              LD = 2 * L, C = 2 * H;
    RNN rnn({.cell = cell,
             .input_size = I,
             .hidden_size = H,
             .num_layers = L,
             .bidirectional = true,
             .dropout = p_drop,
             .layer_norm = ln,
             .residual = residual,
             .transition_depth = depth},
            rng);
    for (RNNCellParams& p : rnn.params.cells) {
        if (!ln) break;
        rng.fill_uniform(p.ln_weight_ih, 0.5f, 1.5f);
        rng.fill_uniform(p.ln_weight_hh, 0.5f, 1.5f);
    }
    for (auto& chain : rnn.params.transitions)
        for (TransitionParams& p : chain)
            if (ln) rng.fill_uniform(p.ln_weight_hh, 0.5f, 1.5f);
    const std::vector<int> lengths{4, 2, 3};  // sentences 1 and 2 are padded
    Tensor x = random_tensor(rng, {B, T, I});
    RNNState init{random_tensor(rng, {LD, B, H}, -0.5f, 0.5f),
                  lstm ? random_tensor(rng, {LD, B, H}, -0.5f, 0.5f) : Tensor({0})};
    // loss = Σ out ⊙ R + Σ h_n ⊙ R_h (+ Σ c_n ⊙ R_c)
    Tensor R = random_tensor(rng, {B, T, C});
    RNNState R_final{random_tensor(rng, {LD, B, H}),
                     lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};

    Tensor out({B, T, C});
    RNNState final;
    RNNCache cache;
    auto forward = [&] {
        Rng drop_rng(99);  // the same masks at every evaluation
        rnn.forward(x, lengths, init, out, final, cache, drop_rng, Mode::train);
    };
    auto loss = [&] {
        forward();
        double l = dot_loss(out, R) + dot_loss(final.h, R_final.h);
        if (lstm) l += dot_loss(final.c, R_final.c);
        return l;
    };
    forward();
    Tensor d_x({B, T, I});
    RNNState d_init = rnn.zero_state(B);
    rnn.backward(R, R_final, cache, d_x, d_init);

    std::vector<GradTarget> targets{{"x", x, d_x}, {"h0", init.h, d_init.h}};
    if (lstm) targets.push_back({"c0", init.c, d_init.c});
    std::vector<std::pair<std::string, Tensor*>> values, grads;
    rnn.params.visit([&](const std::string& n, Tensor& t) { values.emplace_back(n, &t); });
    rnn.grad.visit([&](const std::string& n, Tensor& t) { grads.emplace_back(n, &t); });
    for (std::size_t i = 0; i < values.size(); ++i)
        targets.push_back({values[i].first, *values[i].second, *grads[i].second});
    std::size_t present = 0;  // 4 tensors per cell and 3 per transition, one more each with LN
    for (const auto& v : values) present += v.second->numel() > 0 ? 1 : 0;
    EXPECT_EQ(present,
              static_cast<std::size_t>(LD) * (ln ? 6u + 4u * (depth - 1) : 4u + 3u * (depth - 1)));
    // eps = 1e-2: central differences have truncation error ~eps²·f''' ≈ 1e-4 relative here;
    // the float32 loss (≈ 100 terms of size ≤ 1) carries ≈ 1e-5 of rounding, / 2·eps ≈ 5e-4:
    // atol = 2e-3 sits above that floor, rtol = 1e-2 above the truncation error.
    // Layer norm: eps = 1e-3. Layer 0's products have 3 terms, so a gate block of 16 of them can
    // have a small spread and rstd ≈ 10: the curvature makes the truncation of eps = 1e-2 reach
    // 5% on an entry (GRU: 0.2625 numeric vs 0.2494 analytic; 0.2494 again at eps = 2e-3) and
    // that of eps = 2e-3 2.5% (LSTM: 0.2133 vs 0.2187). The rounding floor grows to ≈ 6e-4
    // (≈ 500 terms of ≤ 1 in float32, / 2·eps): still under atol.
    EXPECT_TRUE(
        check_gradients(loss, targets, {.eps = ln ? 1e-3 : 1e-2, .rtol = 1e-2, .atol = 2e-3}));
    // padding positions get exactly zero input gradient
    for (int b = 1; b < B; ++b)
        for (int t = lengths[b]; t < T; ++t)
            for (int i = 0; i < I; ++i) EXPECT_EQ(d_x.at(b, t, i), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(
    Cells, RNNGrad,
    ::testing::Values(
        Case{CellType::gru, 0.0f}, Case{CellType::lstm, 0.0f}, Case{CellType::gru, 0.3f},
        Case{CellType::lstm, 0.3f}, Case{CellType::gru, 0.0f, true},
        Case{CellType::gru, 0.3f, true}, Case{CellType::lstm, 0.0f, true},
        Case{CellType::gru, 0.0f, false, true}, Case{CellType::gru, 0.3f, false, true},
        Case{CellType::lstm, 0.3f, false, true}, Case{CellType::gru, 0.0f, false, false, 3},
        Case{CellType::gru, 0.3f, false, true, 2}, Case{CellType::gru, 0.0f, true, false, 2}),
    [](const auto& info) {
        return std::string(info.param.cell == CellType::gru ? "gru" : "lstm") +
               (info.param.dropout > 0 ? "_dropout" : "") +
               (info.param.layer_norm ? "_layer_norm" : "") +
               (info.param.residual ? "_residual" : "") +
               (info.param.depth > 1 ? "_transition" + std::to_string(info.param.depth) : "");
    });

}  // namespace test_grad_rnn
