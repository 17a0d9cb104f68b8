// Dropout: inverted scaling, determinism, eval identity, error paths.
#include "nazar/core/params.h"
#include "nazar/nn/dropout.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

[[maybe_unused]] static Tensor T2(int r, int c, std::vector<float> v) {
    return Tensor::from({r, c}, v);
}

TEST(Dropout, MaskScalingAndEval) {
    Rng rng(6);
    Dropout drop({.p = 0.25f});
    Tensor x({1000});
    x.fill(2.0f);
    Tensor y({1000});
    DropoutCache cache;
    drop.forward(x, y, cache, rng, Mode::train);
    int kept = 0;
    for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(y[i] == 0.0f || std::abs(y[i] - 2.0f / 0.75f) < 1e-6f) << y[i];
        kept += y[i] != 0.0f;
    }
    EXPECT_GT(kept, 700);  // ~750 expected; binomial sd ≈ 14
    EXPECT_LT(kept, 800);
    Tensor dx({1000});
    dx.fill(1.0f);
    Tensor dy({1000});
    dy.fill(3.0f);
    drop.backward(dy, cache, dx);
    for (int i = 0; i < 1000; ++i)
        EXPECT_FLOAT_EQ(dx[i], 1.0f + (y[i] != 0.0f ? 3.0f / 0.75f : 0.0f));

    // Same seed, same mask; eval mode is the identity and draws nothing.
    Rng a(9), b(9);
    Tensor y1({1000}), y2({1000});
    DropoutCache c1, c2;
    drop.forward(x, y1, c1, a, Mode::train);
    drop.forward(x, y2, c2, b, Mode::train);
    EXPECT_TRUE(close_abs(y1, y2, 0));
    const auto before = a.state();
    drop.forward(x, y1, c1, a, Mode::eval);
    EXPECT_EQ(a.state(), before);
    EXPECT_TRUE(close_abs(y1, x, 0));
    EXPECT_TRUE(c1.mask.empty());

    Dropout all({.p = 1.0f});
    all.forward(x, y1, c1, a, Mode::train);
    EXPECT_TRUE(close_abs(y1, Tensor({1000}), 0));
    EXPECT_THROW(Dropout({.p = 1.5f}), Error);
    EXPECT_THROW(Dropout({.p = -0.1f}), Error);
}
