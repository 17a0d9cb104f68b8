// Finite-difference check of Dropout::backward in train mode (mask fixed by re-seeding the Rng
// at every forward) and in eval mode (identity).
#include "nazar/nn/dropout.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

namespace test_grad_dropout {

using namespace nazar;
using namespace nazar::test;

TEST(DropoutGrad, TrainAndEval) {
    for (const Mode mode : {Mode::train, Mode::eval}) {
        Rng rng(61);
        Dropout drop({.p = 0.4f});
        Tensor x = random_tensor(rng, {3, 5}), R = random_tensor(rng, {3, 5}), y({3, 5});
        DropoutCache cache;
        auto loss = [&] {
            Rng r(7);
            drop.forward(x, y, cache, r, mode);
            return dot_loss(y, R);
        };
        loss();
        Tensor d_x({3, 5});
        drop.backward(R, cache, d_x);
        // Linear in x for a fixed mask: exact up to float32 rounding (≈ 1e-6 / 2e-2).
        EXPECT_TRUE(
            check_gradients(loss, {{"x", x, d_x}}, {.eps = 1e-2, .rtol = 1e-3, .atol = 5e-4}));
    }
}

}  // namespace test_grad_dropout
