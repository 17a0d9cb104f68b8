// Gradient-norm clipping (nazar/train/clip.h): hand values, the 1e-6 in the coefficient,
// a norm over several tensors spanning blocks vs a double reference, non-finite norms, errors.
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/train/clip.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <limits>
#include <vector>

namespace test_train_clip {

using namespace nazar;

namespace {
struct Grads {
    Tensor a = Tensor({2}), b = Tensor({1}), ga = Tensor::from({2}, std::vector<float>{3, 0}),
           gb = Tensor::from({1}, std::vector<float>{4});
    ParamList list() { return {{"a", &a, &ga}, {"b", &b, &gb}}; }
};
}  // namespace

// ‖(3, 0, 4)‖ = 5. max_norm 10: untouched. max_norm 1: coef = 1 / (5 + 1e-6) in float32, as
// PyTorch computes it, so (0.6, 0, 0.8) · (1 − 2e-7): exactly 3·coef and 4·coef.
TEST(Clip, HandValues) {
    Grads g;
    EXPECT_FLOAT_EQ(grad_norm(g.list()), 5.0f);
    EXPECT_FLOAT_EQ(clip_grad_norm(g.list(), 10.0f), 5.0f);
    EXPECT_EQ(g.ga[0], 3.0f);
    EXPECT_EQ(g.gb[0], 4.0f);
    EXPECT_FLOAT_EQ(clip_grad_norm(g.list(), 1.0f), 5.0f);  // returns the norm before clipping
    const float coef = 1.0f / (5.0f + 1e-6f);
    EXPECT_EQ(g.ga[0], 3.0f * coef);
    EXPECT_EQ(g.ga[1], 0.0f);
    EXPECT_EQ(g.gb[0], 4.0f * coef);
    EXPECT_NEAR(g.gb[0], 0.8f, 3e-7);
    EXPECT_NEAR(grad_norm(g.list()), 1.0f, 1e-6);
    // Exactly at the limit: coef = 5 / (5 + 1e-6) < 1 still scales, as PyTorch does.
    Grads h;
    clip_grad_norm(h.list(), 5.0f);
    EXPECT_LT(h.gb[0], 4.0f);
    EXPECT_NEAR(h.gb[0], 4.0f * 5.0f / 5.000001f, 1e-6);
}

// 40 000 + 7 entries in two tensors (three 16384-entry blocks) vs a double-precision reference,
// for 1 and 2 threads (which must agree bit for bit). Tolerance 1e-6: the float result of a
// double sum is correctly rounded up to the double sum's own error (~1e-12).
TEST(Clip, NormOverManyTensorsMatchesDouble) {
    Rng rng(4);
    Tensor v1({200, 200}), v2({7}), g1 = nazar::test::random_tensor(rng, {200, 200}, -3, 3),
                                    g2 = nazar::test::random_tensor(rng, {7}, -3, 3);
    ParamList list{{"x", &v1, &g1}, {"y", &v2, &g2}};
    double ref = 0;
    for (const Tensor* g : {&g1, &g2})
        for (int64_t i = 0; i < g->numel(); ++i) ref += static_cast<double>((*g)[i]) * (*g)[i];
    ref = std::sqrt(ref);
    const int saved = num_threads();
    set_num_threads(1);
    const float n1 = grad_norm(list);
    set_num_threads(2);
    const float n2 = grad_norm(list);
    set_num_threads(saved);
    EXPECT_EQ(n1, n2);
    EXPECT_NEAR(n1, ref, 1e-6 * ref);
    const float before = clip_grad_norm(list, 2.0f);
    EXPECT_EQ(before, n1);
    EXPECT_NEAR(grad_norm(list), 2.0f, 2e-6);
}

TEST(Clip, NonFiniteNormIsReturnedAndGradientsKept) {
    Grads g;
    g.ga[1] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(std::isinf(clip_grad_norm(g.list(), 1.0f)));
    EXPECT_EQ(g.ga[0], 3.0f);  // untouched
    EXPECT_EQ(g.gb[0], 4.0f);
    g.ga[1] = std::nanf("");
    EXPECT_TRUE(std::isnan(clip_grad_norm(g.list(), 1.0f)));
    EXPECT_EQ(g.gb[0], 4.0f);
    // Overflow of the squares is not an issue: they are summed in double.
    Grads big;
    big.ga[0] = 3e30f;
    big.gb[0] = 4e30f;
    EXPECT_FLOAT_EQ(clip_grad_norm(big.list(), 1.0f), 5e30f);
    EXPECT_NEAR(big.gb[0], 0.8f, 1e-6);
}

TEST(Clip, Errors) {
    Grads g;
    EXPECT_THROW(clip_grad_norm(g.list(), 0.0f), Error);
    EXPECT_THROW(clip_grad_norm(g.list(), -1.0f), Error);
    EXPECT_THROW(clip_grad_norm(g.list(), std::nanf("")), Error);
    EXPECT_EQ(grad_norm({}), 0.0f);  // no parameters: norm 0
}

}  // namespace test_train_clip
