// Finite-difference check of Linear::backward on a (B, T, in) input, with and without bias.
#include "nazar/nn/linear.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

namespace test_grad_linear {

using namespace nazar;
using namespace nazar::test;

TEST(LinearGrad, ThreeDimensionalInput) {
    for (const bool bias : {true, false}) {
        Rng rng(41);
        Linear lin({.in_features = 4, .out_features = 3, .bias = bias}, rng);
        Tensor x = random_tensor(rng, {2, 3, 4}), R = random_tensor(rng, {2, 3, 3}), y({2, 3, 3});
        auto loss = [&] {
            lin.forward(x, y);
            return dot_loss(y, R);
        };
        loss();
        Tensor d_x({2, 3, 4});
        lin.backward(R, x, d_x);
        std::vector<GradTarget> targets{{"x", x, d_x},
                                        {"weight", lin.params.weight, lin.grad.weight}};
        if (bias) targets.push_back({"bias", lin.params.bias, lin.grad.bias});
        // Linear in every input: central differences are exact up to float32 rounding of a loss
        // of 18 terms (≈ 1e-6) / 2·eps (2e-2) ≈ 5e-5 < atol.
        EXPECT_TRUE(check_gradients(loss, targets, {.eps = 1e-2, .rtol = 1e-3, .atol = 5e-4}))
            << "bias " << bias;
    }
}

}  // namespace test_grad_linear
