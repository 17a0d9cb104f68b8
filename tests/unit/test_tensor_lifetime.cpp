// Tensor ownership: move, swap and copy leave both sides valid (tensor.h). A moved-from Tensor
// used to keep its capacity and shape with a null buffer, so resize() skipped the allocation
// and zeroed through null, and numel() promised elements that were not there.
#include "nazar/core/tensor.h"
#include "tests/common/test_util.h"

#include <utility>
#include <vector>

namespace test_tensor_lifetime {

using namespace nazar;

namespace {

Tensor iota(Shape shape) {
    Tensor t(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(i + 1);
    return t;
}

void expect_empty(const Tensor& t) {
    EXPECT_EQ(t.shape(), (Shape{0}));
    EXPECT_EQ(t.numel(), 0);
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.capacity(), 0);
    EXPECT_EQ(t.data(), nullptr);
    EXPECT_TRUE(t.span().empty());
}

}  // namespace

TEST(TensorLifetime, MoveConstructLeavesSourceEmpty) {
    Tensor a = iota({3, 4});
    const float* p = a.data();
    Tensor b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.shape(), (Shape{3, 4}));
    EXPECT_EQ(b.capacity(), 12);
    EXPECT_EQ(b.at(2, 3), 12.0f);
    expect_empty(a);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
}

TEST(TensorLifetime, MovedFromTensorResizesIntoFreshMemory) {
    Tensor a = iota({3, 4});
    Tensor b = std::move(a);
    a.resize({3, 4});  // NOLINT(bugprone-use-after-move)
    ASSERT_NE(a.data(), nullptr);
    EXPECT_NE(a.data(), b.data());
    EXPECT_EQ(a.capacity(), 12);
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a[i], 0.0f) << i;
    a.fill(5.0f);  // writes land in a's own buffer, not b's
    EXPECT_EQ(b.at(0, 0), 1.0f);
    a.resize({2}, /*zero=*/false);  // smaller: reuses the new buffer
    EXPECT_EQ(a.capacity(), 12);
}

TEST(TensorLifetime, MoveAssignTakesBufferAndFreesTheOldOne) {
    Tensor a = iota({2, 5});
    Tensor b = iota({7});
    const float* p = a.data();
    b = std::move(a);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.shape(), (Shape{2, 5}));
    EXPECT_EQ(b.capacity(), 10);
    EXPECT_EQ(b[9], 10.0f);
    expect_empty(a);   // NOLINT(bugprone-use-after-move)
    a = iota({1, 2});  // a moved-from tensor accepts a new value
    EXPECT_EQ(a.at(0, 1), 2.0f);
}

TEST(TensorLifetime, SelfMoveAssignKeepsTheValue) {
    Tensor a = iota({4});
    Tensor& alias = a;
    a = std::move(alias);
    EXPECT_EQ(a.shape(), (Shape{4}));
    EXPECT_EQ(a[3], 4.0f);
}

TEST(TensorLifetime, SwapExchangesBuffersShapesAndCapacities) {
    Tensor a = iota({6});
    Tensor b = iota({2, 2});
    b.resize({1}, /*zero=*/false);  // capacity 4 > numel 1
    const float* pa = a.data();
    const float* pb = b.data();
    swap(a, b);
    EXPECT_EQ(a.data(), pb);
    EXPECT_EQ(a.shape(), (Shape{1}));
    EXPECT_EQ(a.capacity(), 4);
    EXPECT_EQ(b.data(), pa);
    EXPECT_EQ(b.shape(), (Shape{6}));
    EXPECT_EQ(b.capacity(), 6);
    std::swap(a, b);  // the generic swap goes through the move operations
    EXPECT_EQ(a.data(), pa);
    EXPECT_EQ(b.data(), pb);
    EXPECT_EQ(b.capacity(), 4);
}

TEST(TensorLifetime, CopiesOfEmptyAndMovedFromTensorsAreEmpty) {
    Tensor a = iota({3});
    Tensor b = std::move(a);
    Tensor c(a);  // NOLINT(bugprone-use-after-move)
    expect_empty(c);
    Tensor d = iota({5});
    d = a;  // copy-assigning an empty tensor keeps d's buffer, shape (0,)
    EXPECT_EQ(d.shape(), (Shape{0}));
    EXPECT_EQ(d.capacity(), 5);
    d = b;
    EXPECT_EQ(d.shape(), (Shape{3}));
    EXPECT_NE(d.data(), b.data());
    EXPECT_EQ(d[2], 3.0f);
}

TEST(TensorLifetime, VectorGrowthMovesWithoutLosingData) {
    std::vector<Tensor> v;
    for (int i = 0; i < 9; ++i) v.push_back(iota({i + 1}));  // reallocations move the elements
    for (int i = 0; i < 9; ++i) {
        ASSERT_EQ(v[i].numel(), i + 1);
        EXPECT_EQ(v[i].capacity(), i + 1);
        EXPECT_EQ(v[i][i], static_cast<float>(i + 1));
    }
}

}  // namespace test_tensor_lifetime
