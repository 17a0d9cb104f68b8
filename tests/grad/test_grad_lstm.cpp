// Finite-difference checks of LSTMCell: the raw-input step (w.r.t. x, h, c and all four
// parameters) and the projected step (w.r.t. gi, h, c, weight_hh, bias_hh), each with a masked
// (padding) row and upstream gradients on both h' and c'; and two chained steps; the
// layer-normalised cell (layer_norm) at H = 16 and 20, and backward_data's split of it.
#include "nazar/nn/lstm_cell.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <vector>

namespace test_grad_lstm {

using namespace nazar;
using namespace nazar::test;

// Tolerances as test_grad_gru.cpp: loss rounding ≈ 1e-6 / 2·eps ≈ 1e-4 < atol; truncation
// ≈ eps² ≈ 1e-4 relative < rtol.
static const GradCheckOptions kTol{.eps = 1e-2, .rtol = 1e-2, .atol = 1e-3};

using test::add_params;

// The step checks shared by the plain and the layer-normalised cell (drawn from `rng` after it).
// A raw-input step with row 1 padding; `n_targets` given: their number (LN: 9).
void check_raw_input_step(LSTMCell& cell, Rng& rng, const GradCheckOptions& tol,
                          std::size_t n_targets = 0) {
    const int N = 3, I = cell.params.weight_ih.dim(1), H = cell.params.weight_hh.dim(1);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           c = random_tensor(rng, {N, H});
    Tensor R = random_tensor(rng, {N, H}), Rc = random_tensor(rng, {N, H});
    const std::vector<int> lengths{3, 1, 2};
    const StepMask mask{lengths, 1};
    Tensor h_new({N, H}), c_new({N, H});
    LSTMStepCache cache;
    auto loss = [&] {
        cell.forward(x, h, c, h_new, c_new, cache, mask);
        return dot_loss(h_new, R) + dot_loss(c_new, Rc);
    };
    loss();
    Tensor d_x({N, I}), d_h({N, H}), d_c({N, H});
    cell.backward(R, Rc, x, h, c, cache, d_x, d_h, d_c, mask);
    std::vector<GradTarget> targets{{"x", x, d_x}, {"h", h, d_h}, {"c", c, d_c}};
    add_params(targets, cell.params, cell.grad);
    if (n_targets) {
        ASSERT_EQ(targets.size(), n_targets);
    }
    EXPECT_TRUE(check_gradients(loss, targets, tol));
}

// A step from given input projections gi, row 0 padding: gi, h, c and the recurrent parameters.
void check_projected_step(LSTMCell& cell, Rng& rng, const GradCheckOptions& tol) {
    const int N = 3, H = cell.params.weight_hh.dim(1);
    Tensor gi = random_tensor(rng, {N, 4 * H}), h = random_tensor(rng, {N, H}),
           c = random_tensor(rng, {N, H});
    Tensor R = random_tensor(rng, {N, H}), Rc = random_tensor(rng, {N, H});
    const std::vector<int> lengths{1, 3, 3};
    const StepMask mask{lengths, 2};
    Tensor h_new({N, H}), c_new({N, H});
    LSTMStepCache cache;
    auto loss = [&] {
        cell.forward_projected(gi, h, c, h_new, c_new, cache, mask);
        return dot_loss(h_new, R) + dot_loss(c_new, Rc);
    };
    loss();
    Tensor d_gi({N, 4 * H}), d_h({N, H}), d_c({N, H});
    cell.backward_projected(R, Rc, h, c, cache, d_gi, d_h, d_c, mask);
    std::vector<GradTarget> targets{{"gi", gi, d_gi},
                                    {"h", h, d_h},
                                    {"c", c, d_c},
                                    {"weight_hh", cell.params.weight_hh, cell.grad.weight_hh},
                                    {"bias_hh", cell.params.bias_hh, cell.grad.bias_hh}};
    if (cell.params.layer_norm())
        targets.push_back({"ln_weight_hh", cell.params.ln_weight_hh, cell.grad.ln_weight_hh});
    EXPECT_TRUE(check_gradients(loss, targets, tol));
}

TEST(LSTMCellGrad, RawInputStepWithMaskedRow) {
    Rng rng(31);
    LSTMCell cell({.input_size = 4, .hidden_size = 4}, rng);
    check_raw_input_step(cell, rng, kTol);
}

TEST(LSTMCellGrad, ProjectedStep) {
    Rng rng(32);
    LSTMCell cell({.input_size = 2, .hidden_size = 4}, rng);
    check_projected_step(cell, rng, kTol);
}

TEST(LSTMCellGrad, TwoChainedStepsWithoutCellUpstream) {
    Rng rng(33);
    const int N = 2, I = 3, H = 4;
    LSTMCell cell({.input_size = I, .hidden_size = H}, rng);
    Tensor x0 = random_tensor(rng, {N, I}), x1 = random_tensor(rng, {N, I});
    Tensor h0 = random_tensor(rng, {N, H}), c0 = random_tensor(rng, {N, H});
    Tensor R0 = random_tensor(rng, {N, H}), R1 = random_tensor(rng, {N, H});
    Tensor h1({N, H}), c1({N, H}), h2({N, H}), c2({N, H});
    LSTMStepCache k0, k1;
    auto loss = [&] {  // loss = h1 · R0 + h2 · R1 (no direct use of c)
        cell.forward(x0, h0, c0, h1, c1, k0);
        cell.forward(x1, h1, c1, h2, c2, k1);
        return dot_loss(h1, R0) + dot_loss(h2, R1);
    };
    loss();
    Tensor d_x0({N, I}), d_x1({N, I}), d_h0({N, H}), d_c0({N, H}), d_h1 = R0, d_c1({N, H});
    cell.backward(R1, TensorView(), x1, h1, c1, k1, d_x1, d_h1, d_c1);  // no upstream into c2
    cell.backward(d_h1, d_c1, x0, h0, c0, k0, d_x0, d_h0, d_c0);
    std::vector<GradTarget> targets{
        {"x0", x0, d_x0}, {"x1", x1, d_x1}, {"h0", h0, d_h0}, {"c0", c0, d_c0}};
    add_params(targets, cell.params, cell.grad);
    EXPECT_TRUE(check_gradients(loss, targets, kTol));
}

// Layer norm (lstm_cell.h): gains drawn away from 1; H = 16 and 20 (vector widths, remainder).
LSTMCell ln_cell(Rng& rng, int I, int H) {
    LSTMCell cell({.input_size = I, .hidden_size = H, .layer_norm = true}, rng);
    rng.fill_uniform(cell.params.ln_weight_ih, 0.5f, 1.5f);
    rng.fill_uniform(cell.params.ln_weight_hh, 0.5f, 1.5f);
    return cell;
}

// as test_grad_gru.cpp's layer-norm steps
static const GradCheckOptions kLnTol{.eps = 1e-2, .rtol = 2e-2, .atol = 2e-3};

TEST(LSTMCellGrad, LayerNormRawInputStepWithMaskedRow) {
    for (const int H : {16, 20}) {
        SCOPED_TRACE(testing::Message() << "H = " << H);
        Rng rng(41);
        LSTMCell cell = ln_cell(rng, 20, H);
        check_raw_input_step(cell, rng, kLnTol, 9);
    }
}

TEST(LSTMCellGrad, LayerNormProjectedStep) {
    Rng rng(42);
    LSTMCell cell = ln_cell(rng, 2, 16);
    check_projected_step(cell, rng, kLnTol);
}

// backward_data (+ the batched weight helpers) gives backward's gradients.
TEST(LSTMCellGrad, LayerNormBackwardDataMatchesBackward) {
    Rng rng(43);
    const int N = 4, I = 19, H = 16;
    LSTMCell cell = ln_cell(rng, I, H);
    Tensor x = random_tensor(rng, {N, I}), h = random_tensor(rng, {N, H}),
           c = random_tensor(rng, {N, H}), R = random_tensor(rng, {N, H}),
           Rc = random_tensor(rng, {N, H}), h_new({N, H}), c_new({N, H});
    const std::vector<int> lengths{2, 2, 1, 2};
    const StepMask mask{lengths, 1};
    LSTMStepCache cache;
    cell.forward(x, h, c, h_new, c_new, cache, mask);
    Tensor d_x({N, I}), d_h({N, H}), d_c({N, H});
    cell.backward(R, Rc, x, h, c, cache, d_x, d_h, d_c, mask);
    LSTMCell split = cell;
    split.grad = make_rnn_cell_params(4, I, H, true, nullptr, ParamMode::training, true);
    Tensor d_gi({N, 4 * H}), d_gh({N, 4 * H}), d_x2({N, I}), d_h2({N, H}), d_c2({N, H});
    split.backward_data(R, Rc, c, cache, d_gi, d_x2, d_h2, d_c2, mask, d_gh);
    cell_project_input_backward(split.params, split.grad, d_gi, x, TensorView());
    cell_add_recurrent_backward(split.params, split.grad, d_gh, h, TensorView());
    EXPECT_TRUE(close_rel(d_x2, d_x, 1e-5));
    EXPECT_TRUE(close_rel(d_h2, d_h, 1e-5));
    EXPECT_TRUE(close_rel(d_c2, d_c, 1e-5));
    std::vector<Tensor*> a, b;
    cell.grad.visit([&](const std::string&, Tensor& t) { a.push_back(&t); });
    split.grad.visit([&](const std::string&, Tensor& t) { b.push_back(&t); });
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(close_rel(*b[i], *a[i], 1e-5));
}

}  // namespace test_grad_lstm
