// Finite-difference checks of GRUCell: the raw-input step (w.r.t. x, h and all four
// parameters) and the projected step (w.r.t. gi, h, weight_hh, bias_hh), each with a masked
// (padding) row, and two chained steps (h feeds the next step, gradients add up through +=).
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

TEST(GRUCellGrad, RawInputStepWithMaskedRow) {
    Rng rng(21);
    const int N = 3, I = 4, H = 4;
    GRUCell cell({.input_size = I, .hidden_size = H}, rng);
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
    EXPECT_TRUE(check_gradients(loss, targets, kTol));
}

TEST(GRUCellGrad, ProjectedStep) {
    Rng rng(22);
    const int N = 3, H = 4;
    GRUCell cell({.input_size = 2, .hidden_size = H}, rng);
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
    EXPECT_TRUE(check_gradients(loss,
                                {{"gi", gi, d_gi},
                                 {"h", h, d_h},
                                 {"weight_hh", cell.params.weight_hh, cell.grad.weight_hh},
                                 {"bias_hh", cell.params.bias_hh, cell.grad.bias_hh}},
                                kTol));
}

TEST(GRUCellGrad, TwoChainedSteps) {
    Rng rng(23);
    const int N = 2, I = 3, H = 4;
    GRUCell cell({.input_size = I, .hidden_size = H}, rng);
    Tensor x0 = random_tensor(rng, {N, I}), x1 = random_tensor(rng, {N, I}),
           h0 = random_tensor(rng, {N, H});
    Tensor R0 = random_tensor(rng, {N, H}), R1 = random_tensor(rng, {N, H});
    Tensor h1({N, H}), h2({N, H});
    GRUStepCache c0, c1;
    auto loss = [&] {  // loss = h1 · R0 + h2 · R1
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
    EXPECT_TRUE(check_gradients(loss, targets, kTol));
}

}  // namespace test_grad_gru
