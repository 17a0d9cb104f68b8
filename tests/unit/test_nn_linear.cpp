// Linear: hand-checked values, 3-D inputs, absent bias, error paths.
#include "nazar/core/params.h"
#include "nazar/nn/linear.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_nn_linear {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

[[maybe_unused]] static Tensor T2(int r, int c, std::vector<float> v) {
    return Tensor::from({r, c}, v);
}

TEST(Linear, ForwardBackwardByHand) {
    Rng rng(1);
    Linear lin({.in_features = 2, .out_features = 3}, rng);
    lin.params.weight = T2(3, 2, {1, 2, 3, 4, 5, 6});
    lin.params.bias = Tensor::from({3}, std::vector<float>{0.5f, -1, 0});
    Tensor x = T2(2, 2, {1, -1, 2, 0.5f});
    Tensor y({2, 3});
    lin.forward(x, y);
    // row 0: [1−2+0.5, 3−4−1, 5−6+0] = [−0.5, −2, −1];  row 1: [2+1+0.5, 6+2−1, 10+3] = [3.5, 7,
    // 13]
    EXPECT_TRUE(close_abs(y, T2(2, 3, {-0.5f, -2, -1, 3.5f, 7, 13}), 1e-6));

    Tensor dy = T2(2, 3, {1, 0, 0, 0, 1, 1});
    Tensor dx = T2(2, 2, {10, 10, 10, 10});  // += contract: starts non-zero
    lin.backward(dy, x, dx);
    // d_x = d_y W: row 0 = W[0] = [1, 2]; row 1 = W[1] + W[2] = [8, 10]
    EXPECT_TRUE(close_abs(dx, T2(2, 2, {11, 12, 18, 20}), 1e-6));
    // d_W = d_yᵀ x: W[0] row gets x[0] = [1, −1]; W[1], W[2] get x[1] = [2, 0.5]
    EXPECT_TRUE(close_abs(lin.grad.weight, T2(3, 2, {1, -1, 2, 0.5f, 2, 0.5f}), 1e-6));
    EXPECT_TRUE(close_abs(lin.grad.bias, Tensor::from({3}, std::vector<float>{1, 1, 1}), 1e-6));
    lin.backward(dy, x, TensorView());  // accumulates again; d_x not needed
    EXPECT_FLOAT_EQ(lin.grad.bias[0], 2.0f);
}

TEST(Linear, ThreeDimensionalInputAndNoBias) {
    Rng rng(2);
    Linear lin({.in_features = 4, .out_features = 3, .bias = false}, rng);
    EXPECT_TRUE(lin.params.bias.empty());
    const float bound = 0.5f;  // 1/sqrt(4)
    for (int64_t i = 0; i < lin.params.weight.numel(); ++i)
        EXPECT_LE(std::abs(lin.params.weight[i]), bound);
    Tensor x = random_tensor(rng, {2, 5, 4});
    Tensor y({2, 5, 3}), y2({10, 3});
    lin.forward(x, y);
    lin.forward(x.reshape({10, 4}), y2);
    EXPECT_TRUE(close_abs(y.reshape({10, 3}), y2, 0));
    ParamList pl;
    collect_params(lin.params, lin.grad, "generator.", pl);
    ASSERT_EQ(pl.size(), 1u);  // absent bias skipped
    EXPECT_EQ(pl[0].name, "generator.weight");
}

TEST(Linear, Errors) {
    Rng rng(3);
    EXPECT_THROW(Linear({.in_features = 0, .out_features = 3}, rng), Error);
    Linear lin({.in_features = 4, .out_features = 3}, rng);
    Tensor x({2, 5}), y({2, 3});
    EXPECT_THROW(lin.forward(x, y), Error);
    Tensor x4({2, 4}), ybad({3, 3});
    EXPECT_THROW(lin.forward(x4, ybad), Error);
    Tensor dxbad({2, 5});
    EXPECT_THROW(lin.backward(y, x4, dxbad), Error);
}

}  // namespace test_nn_linear
