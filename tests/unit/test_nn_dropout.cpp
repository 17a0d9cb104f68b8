// Dropout: inverted scaling, determinism, eval identity, error paths.
#include "nazar/core/params.h"
#include "nazar/nn/dropout.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_nn_dropout {

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

// ---- masks drawn ahead of a forward (the seq2seq dropout sites) ----

// The expected fraction of zeros, the exact 1/(1−p) scale of the kept values, one draw each.
TEST(DropoutMask, FractionAndScale) {
    for (const float p : {0.1f, 0.3f, 0.5f}) {
        Rng rng(12);
        Tensor m({100, 2000});  // N = 200000: the zero fraction's sd is <= 0.0012
        draw_dropout_mask(m, p, rng);
        int64_t zeros = 0;
        for (int64_t i = 0; i < m.numel(); ++i) {
            ASSERT_TRUE(m[i] == 0.0f || m[i] == 1.0f / (1.0f - p)) << m[i];
            zeros += m[i] == 0.0f;
        }
        EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(m.numel()), p, 0.006);
        // one uniform per element: the generator advanced by exactly numel draws
        Rng again(12);
        for (int64_t i = 0; i < m.numel(); ++i) again.uniform();
        EXPECT_EQ(rng.state(), again.state());
    }
}

TEST(DropoutMask, ZeroAndOne) {
    Rng rng(3);
    const Rng::State before = rng.state();
    Tensor m({4, 5});
    draw_dropout_mask(m, 0.0f, rng);  // p = 0: all ones, nothing drawn
    for (int64_t i = 0; i < m.numel(); ++i) EXPECT_EQ(m[i], 1.0f);
    EXPECT_EQ(rng.state(), before);
    draw_dropout_mask(m, 1.0f, rng);  // p = 1: everything dropped
    for (int64_t i = 0; i < m.numel(); ++i) EXPECT_EQ(m[i], 0.0f);
    EXPECT_THROW(draw_dropout_mask(m, 1.5f, rng), Error);
    EXPECT_THROW(draw_dropout_mask(m, 0.5f, rng, 2), Error);  // no axis 2 in a 2-D mask
}

// Variational: one draw per element of the shape without the shared axis, repeated along it.
TEST(DropoutMask, PerSequenceSharesAlongTheAxis) {
    const float p = 0.4f;
    for (const int axis : {0, 1}) {
        Rng rng(9);
        Tensor m({60, 50, 40});  // (T, B, E) shared along 0, or (B, S, E) shared along 1
        draw_dropout_mask(m, p, rng, axis);
        int64_t zeros = 0, first = 0;
        for (int64_t a = 0; a < 60; ++a)
            for (int64_t b = 0; b < 50; ++b)
                for (int64_t e = 0; e < 40; ++e) {
                    const float v = m.at(a, b, e);
                    const float ref = axis == 0 ? m.at(0, b, e) : m.at(a, 0, e);
                    ASSERT_EQ(v, ref) << "not shared along axis " << axis;
                    ASSERT_TRUE(v == 0.0f || v == 1.0f / (1.0f - p));
                    zeros += v == 0.0f;
                    first += (axis == 0 ? a == 0 : b == 0);
                }
        EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(m.numel()), p, 0.03);
        Rng again(9);  // draws: the numel of the shape without the axis
        for (int64_t i = 0; i < first; ++i) again.uniform();
        EXPECT_EQ(rng.state(), again.state());
    }
}

TEST(DropoutMask, ApplyMultiplies) {
    Tensor x = Tensor::from({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    const Tensor m = Tensor::from({2, 3}, std::vector<float>{0, 2, 2, 0, 0, 2});
    apply_dropout_mask(x, m);
    const std::vector<float> want{0, 4, 6, 0, 0, 12};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], want[static_cast<std::size_t>(i)]);
    Tensor wrong({5});
    EXPECT_THROW(apply_dropout_mask(x, wrong), Error);
}

}  // namespace test_nn_dropout
