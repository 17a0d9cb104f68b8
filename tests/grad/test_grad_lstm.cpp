// Finite-difference checks of LSTMCell: the raw-input step (w.r.t. x, h, c and all four
// parameters) and the projected step (w.r.t. gi, h, c, weight_hh, bias_hh), each with a masked
// (padding) row and upstream gradients on both h' and c'; and two chained steps.
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

TEST(LSTMCellGrad, RawInputStepWithMaskedRow) {
    Rng rng(31);
    const int N = 3, I = 4, H = 4;
    LSTMCell cell({.input_size = I, .hidden_size = H}, rng);
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
    EXPECT_TRUE(check_gradients(loss, targets, kTol));
}

TEST(LSTMCellGrad, ProjectedStep) {
    Rng rng(32);
    const int N = 3, H = 4;
    LSTMCell cell({.input_size = 2, .hidden_size = H}, rng);
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
    EXPECT_TRUE(check_gradients(loss,
                                {{"gi", gi, d_gi},
                                 {"h", h, d_h},
                                 {"c", c, d_c},
                                 {"weight_hh", cell.params.weight_hh, cell.grad.weight_hh},
                                 {"bias_hh", cell.params.bias_hh, cell.grad.bias_hh}},
                                kTol));
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

}  // namespace test_grad_lstm
