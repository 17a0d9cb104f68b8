// Finite-difference checks of GRUCell: the raw-input step (w.r.t. x, h and all four
// parameters) and the projected step (w.r.t. gi, h, weight_hh, bias_hh), each with a masked
// (padding) row, and two chained steps (h feeds the next step, gradients add up through +=);
// the same for the layer-normalised cell (layer_norm, with its gains), at H = 16 and 24 so that
// the vector widths and a remainder are used, plus backward_data's split of the gradients.
#include "nazar/nn/gru_cell.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <vector>

namespace test_grad_gru {

using namespace nazar;
using namespace nazar::test;

// Tolerances: one or two steps of a 3-row, H = 4 cell; loss terms ≤ 1, so float32 rounding of
// the loss is ≈ 1e-6, / 2·eps (eps = 1e-2) ≈ 1e-4 < atol = 1e-3; truncation ≈ eps² ≈ 1e-4 < rtol.
static const GradCheckOptions kTol{.eps = 1e-2, .rtol = 1e-2, .atol = 1e-3};

using test::add_params;

// The step checks shared by the plain and the layer-normalised cell (drawn from `rng` after it).
// A raw-input step with row 1 padding at t = 1; `targets` given: their number (LN: 8).
void check_raw_input_step(GRUCell& cell, Rng& rng, const GradCheckOptions& tol,
                          std::size_t n_targets = 0) {
    const int N = 3, I = cell.params.weight_ih.dim(1), H = cell.params.weight_hh.dim(1);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           R = random_tensor(rng, {N, H});
    const std::vector<int> lengths{3, 1, 2};
    const StepMask mask{lengths, 1};  // row 1 is padding at t = 1
    Tensor h_new({N, H});
    GRUStepCache cache;
    auto loss = [&] {
        cell.forward(x, h, h_new, cache, mask);
        return dot_loss(h_new, R);
    };
    loss();
    Tensor d_x({N, I}), d_h({N, H});
    cell.backward(R, x, h, cache, d_x, d_h, mask);
    std::vector<GradTarget> targets{{"x", x, d_x}, {"h", h, d_h}};
    add_params(targets, cell.params, cell.grad);
    if (n_targets) {
        ASSERT_EQ(targets.size(), n_targets);
    }
    EXPECT_TRUE(check_gradients(loss, targets, tol));
}

// A step from given input projections gi, row 0 padding: gi, h and the recurrent parameters.
void check_projected_step(GRUCell& cell, Rng& rng, const GradCheckOptions& tol) {
    const int N = 3, H = cell.params.weight_hh.dim(1);
    Tensor gi = random_tensor(rng, {N, 3 * H}), h = random_tensor(rng, {N, H}),
           R = random_tensor(rng, {N, H});
    const std::vector<int> lengths{1, 3, 3};
    const StepMask mask{lengths, 2};  // row 0 is padding
    Tensor h_new({N, H});
    GRUStepCache cache;
    auto loss = [&] {
        cell.forward_projected(gi, h, h_new, cache, mask);
        return dot_loss(h_new, R);
    };
    loss();
    Tensor d_gi({N, 3 * H}), d_h({N, H});
    cell.backward_projected(R, h, cache, d_gi, d_h, mask);
    std::vector<GradTarget> targets{{"gi", gi, d_gi},
                                    {"h", h, d_h},
                                    {"weight_hh", cell.params.weight_hh, cell.grad.weight_hh},
                                    {"bias_hh", cell.params.bias_hh, cell.grad.bias_hh}};
    if (cell.params.layer_norm())
        targets.push_back({"ln_weight_hh", cell.params.ln_weight_hh, cell.grad.ln_weight_hh});
    EXPECT_TRUE(check_gradients(loss, targets, tol));
}

// Two steps, the second reading the first's state: loss = h1 · R0 + h2 · R1.
void check_two_chained_steps(GRUCell& cell, Rng& rng, const GradCheckOptions& tol) {
    const int N = 2, I = cell.params.weight_ih.dim(1), H = cell.params.weight_hh.dim(1);
    Tensor x0 = random_tensor(rng, {N, I}), x1 = random_tensor(rng, {N, I}),
           h0 = random_tensor(rng, {N, H});
    Tensor R0 = random_tensor(rng, {N, H}), R1 = random_tensor(rng, {N, H});
    Tensor h1({N, H}), h2({N, H});
    GRUStepCache c0, c1;
    auto loss = [&] {
        cell.forward(x0, h0, h1, c0);
        cell.forward(x1, h1, h2, c1);
        return dot_loss(h1, R0) + dot_loss(h2, R1);
    };
    loss();
    Tensor d_x0({N, I}), d_x1({N, I}), d_h0({N, H}),
        d_h1 = R0;  // d_h1 starts with its own upstream
    cell.backward(R1, x1, h1, c1, d_x1, d_h1);
    cell.backward(d_h1, x0, h0, c0, d_x0, d_h0);
    std::vector<GradTarget> targets{{"x0", x0, d_x0}, {"x1", x1, d_x1}, {"h0", h0, d_h0}};
    add_params(targets, cell.params, cell.grad);
    EXPECT_TRUE(check_gradients(loss, targets, tol));
}

TEST(GRUCellGrad, RawInputStepWithMaskedRow) {
    Rng rng(21);
    GRUCell cell({.input_size = 4, .hidden_size = 4}, rng);
    check_raw_input_step(cell, rng, kTol);
}

TEST(GRUCellGrad, ProjectedStep) {
    Rng rng(22);
    GRUCell cell({.input_size = 2, .hidden_size = 4}, rng);
    check_projected_step(cell, rng, kTol);
}

TEST(GRUCellGrad, TwoChainedSteps) {
    Rng rng(23);
    GRUCell cell({.input_size = 3, .hidden_size = 4}, rng);
    check_two_chained_steps(cell, rng, kTol);
}

// Layer norm: gains and biases drawn away from their 1 / U(±1/sqrt(H)) starts, so that a bug
// mixing up γ, β or their gradients cannot hide behind γ = 1.
GRUCell ln_cell(Rng& rng, int I, int H) {
    GRUCell cell({.input_size = I, .hidden_size = H, .layer_norm = true}, rng);
    rng.fill_uniform(cell.params.ln_weight_ih, 0.5f, 1.5f);
    rng.fill_uniform(cell.params.ln_weight_hh, 0.5f, 1.5f);
    return cell;
}

// Tolerances of the LN steps: ≈ 50 loss terms ≤ 1, float32 rounding ≈ 1e-5 / 2·eps ≈ 5e-4 <
// atol = 2e-3; LN's curvature (rstd ≈ 3 here) keeps the truncation near 1e-3 relative < rtol.
static const GradCheckOptions kLnTol{.eps = 1e-2, .rtol = 2e-2, .atol = 2e-3};

TEST(GRUCellGrad, LayerNormRawInputStepWithMaskedRow) {
    for (const int H : {16, 24}) {
        SCOPED_TRACE(testing::Message() << "H = " << H);
        Rng rng(31);
        GRUCell cell = ln_cell(rng, 20, H);
        check_raw_input_step(cell, rng, kLnTol, 8);  // x, h, four tensors, two gains
    }
}

TEST(GRUCellGrad, LayerNormProjectedStep) {
    Rng rng(32);
    GRUCell cell = ln_cell(rng, 2, 16);
    check_projected_step(cell, rng, kLnTol);
}

TEST(GRUCellGrad, LayerNormTwoChainedSteps) {
    Rng rng(33);
    GRUCell cell = ln_cell(rng, 17, 16);
    check_two_chained_steps(cell, rng, kLnTol);
}

// backward_data + the batched weight helpers give backward's gradients (the decoder's split).
TEST(GRUCellGrad, LayerNormBackwardDataMatchesBackward) {
    Rng rng(34);
    const int N = 4, I = 19, H = 16;
    GRUCell cell = ln_cell(rng, I, H);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           R = random_tensor(rng, {N, H}), h_new({N, H});
    const std::vector<int> lengths{2, 2, 1, 2};
    const StepMask mask{lengths, 1};
    GRUStepCache cache;
    cell.forward(x, h, h_new, cache, mask);
    Tensor d_x({N, I}), d_h({N, H});
    cell.backward(R, x, h, cache, d_x, d_h, mask);
    GRUCell split = cell;  // same parameters, zero gradients
    split.grad = make_rnn_cell_params(3, I, H, true, nullptr, ParamMode::training, true);
    Tensor d_gi({N, 3 * H}), d_gh({N, 3 * H}), d_x2({N, I}), d_h2({N, H});
    split.backward_data(R, h, cache, d_gi, d_gh, d_x2, d_h2, mask);
    cell_project_input_backward(split.params, split.grad, d_gi, x, TensorView());
    cell_add_recurrent_backward(split.params, split.grad, d_gh, h, TensorView());
    EXPECT_TRUE(close_rel(d_x2, d_x, 1e-5));
    EXPECT_TRUE(close_rel(d_h2, d_h, 1e-5));
    std::vector<Tensor*> a, b;
    cell.grad.visit([&](const std::string&, Tensor& t) { a.push_back(&t); });
    split.grad.visit([&](const std::string&, Tensor& t) { b.push_back(&t); });
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(close_rel(*b[i], *a[i], 1e-5));
}

}  // namespace test_grad_gru
