#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/rng.h"
#include "nazar/core/simd.h"
#include "nazar/core/tensor.h"
#include "nazar/core/threads.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace test_core {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::close_rel;
using nazar::test::random_tensor;

TEST(Tensor, ShapeViewsAndErrors) {
    Tensor t = Tensor::from({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    EXPECT_EQ(t.dim(0), 2);
    EXPECT_EQ(t.numel(), 6);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % kAlignment, 0u);
    EXPECT_EQ(t.at(1, 2), 6.0f);
    EXPECT_EQ(t.select(1)[0], 4.0f);
    EXPECT_EQ(t.slice(1, 2).shape(), (Shape{1, 3}));
    EXPECT_EQ(t.reshape({3, 2}).at(2, 1), 6.0f);
    EXPECT_EQ(Shape({4, 7, 512}).str(), "(4, 7, 512)");
    EXPECT_THROW(t.reshape({4, 2}), Error);
    EXPECT_THROW(t.slice(1, 3), Error);
    try {
        NZ_CHECK_SHAPE(t, {3, 2});
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("t: expected (3, 2), got (2, 3)"), std::string::npos)
            << e.what();
    }
}

// Constness is deep (tensor.h): what a const Tensor& or a ConstTensorView gives cannot write.
// These fail at compile time when the contract breaks.
template <class V>
concept Fillable = requires(V v) {
    v.fill(0.0f);
};
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().data()), const float*>);
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().data()), float*>);
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>()[0]), const float&>);
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().at(0, 0)), const float&>);
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().select(0)), ConstTensorView>);
static_assert(std::is_same_v<decltype(std::declval<ConstTensorView>().data()), const float*>);
static_assert(
    std::is_same_v<decltype(std::declval<ConstTensorView>().span()), std::span<const float>>);
static_assert(!std::is_convertible_v<const Tensor&, TensorView>);
static_assert(!std::is_convertible_v<ConstTensorView, TensorView>);
static_assert(std::is_convertible_v<TensorView, ConstTensorView>);
static_assert(std::is_convertible_v<Tensor&, TensorView>);
static_assert(std::is_convertible_v<Tensor&, ConstTensorView>);
static_assert(std::is_convertible_v<const Tensor&, ConstTensorView>);
static_assert(Fillable<TensorView> && Fillable<Tensor&>);
static_assert(!Fillable<ConstTensorView> && !Fillable<const Tensor&>);

TEST(Tensor, ConstViewsReadTheSameMemory) {
    Tensor t = Tensor::from({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    const Tensor& c = t;
    const ConstTensorView v = t.view();  // writable -> read-only
    EXPECT_EQ(v.data(), c.data());
    EXPECT_EQ(c.select(1).data(), t.select(1).data());
    EXPECT_EQ(v.at(1, 2), 6.0f);
    t.at(1, 2) = 7.0f;  // the view sees writes made through the tensor
    EXPECT_EQ(v.at(1, 2), 7.0f);
    EXPECT_EQ(c.as_matrix().shape(), (Shape{2, 3}));
    EXPECT_EQ(Tensor::clone(c.slice(1, 2)).at(0, 2), 7.0f);
}

TEST(Tensor, CopyIsDeepAndResizeReusesMemory) {
    Tensor a = Tensor::from({2, 2}, std::vector<float>{1, 2, 3, 4});
    Tensor b = a;
    b[0] = 9;
    EXPECT_EQ(a[0], 1.0f);
    float* p = b.data();
    b.resize({1, 3});
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b[2], 0.0f);
    b.resize({10, 10});
    EXPECT_NE(b.numel(), 4);
}

TEST(Arena, BumpsAlignsAndReuses) {
    Arena arena(1024);
    TensorView x = arena.alloc({3, 5});
    TensorView y = arena.zeros({1000});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data()) % kAlignment, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(y.data()) % kAlignment, 0u);
    EXPECT_EQ(y[999], 0.0f);
    arena.reset();
    const std::size_t cap = arena.capacity();
    for (int round = 0; round < 3; ++round) {  // steady state: no growth
        arena.alloc({3, 5});
        arena.alloc({1000});
        arena.reset();
        EXPECT_EQ(arena.capacity(), cap);
    }
}

// gemm against the naive oracle, every transpose combination, alpha/beta, sub-blocks.
TEST(Gemm, MatchesNaiveForAllTransposes) {
    Rng rng(1);
    const int M = 7, N = 5, K = 9;
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            Tensor A = random_tensor(rng, ta ? Shape{K, M} : Shape{M, K});
            Tensor B = random_tensor(rng, tb ? Shape{N, K} : Shape{K, N});
            Tensor C = random_tensor(rng, {M, N});
            Tensor ref = C;
            gemm(A, ta, B, tb, C, 0.5f, 2.0f);
            gemm_naive(ta, tb, M, N, K, 0.5f, A.data(), A.dim(1), B.data(), B.dim(1), 2.0f,
                       ref.data(), N);
            EXPECT_TRUE(close_rel(C, ref, 1e-6)) << "ta=" << ta << " tb=" << tb;
        }
    Tensor A = random_tensor(rng, {M, K}), B = random_tensor(rng, {K, 3}), C({M, 4});
    EXPECT_THROW(gemm(A, false, B, false, C), Error);
}

TEST(Gemm, BatchedAndRawSubBlocks) {
    Rng rng(2);
    Tensor A = random_tensor(rng, {3, 4, 6}), B = random_tensor(rng, {3, 5, 6}), C({3, 4, 5}),
           ref({3, 4, 5});
    gemm_batched(A, false, B, true, C);
    for (int i = 0; i < 3; ++i)
        gemm_naive(false, true, 4, 5, 6, 1.0f, A.select(i).data(), 6, B.select(i).data(), 6, 0.0f,
                   ref.select(i).data(), 5);
    EXPECT_TRUE(close_rel(C, ref, 1e-6));
    // columns 2..4 of a (4, 8) matrix times (3, 2) into columns 1..2 of (4, 5)
    Tensor X = random_tensor(rng, {4, 8}), W = random_tensor(rng, {3, 2}), Y({4, 5}), Yref({4, 5});
    gemm_raw(false, false, 4, 2, 3, 1.0f, X.data() + 2, 8, W.data(), 2, 0.0f, Y.data() + 1, 5);
    gemm_naive(false, false, 4, 2, 3, 1.0f, X.data() + 2, 8, W.data(), 2, 0.0f, Yref.data() + 1, 5);
    EXPECT_TRUE(close_rel(Y, Yref, 1e-6));
    EXPECT_EQ(Y.at(0, 0), 0.0f);
}

TEST(Kernels, VectorMathMatchesLibm) {
    std::vector<float> x;
    for (float v = -30.0f; v <= 30.0f; v += 0.01f) x.push_back(v);
    for (float v : {0.0f, 1e-6f, -1e-6f, 1e-3f, 0.6249f, 0.6251f, 88.0f, -87.0f}) x.push_back(v);
    const auto n = static_cast<int64_t>(x.size());
    std::vector<float> fast(n), ref(n);
    auto max_rel = [&] {
        double m = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double d = std::abs(fast[i] - ref[i]) / std::max(std::abs(ref[i]), 1e-30f);
            m = std::max(m, d);
        }
        return m;
    };
    kernels::exp(x.data(), fast.data(), n);
    kernels::naive::exp(x.data(), ref.data(), n);
    EXPECT_LT(max_rel(), 4e-7);
    kernels::tanh(x.data(), fast.data(), n);
    kernels::naive::tanh(x.data(), ref.data(), n);
    EXPECT_LT(max_rel(), 4e-7);
    kernels::sigmoid(x.data(), fast.data(), n);
    kernels::naive::sigmoid(x.data(), ref.data(), n);
    EXPECT_LT(max_rel(), 4e-7);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(kernels::exp1(-inf), 0.0f);
    EXPECT_EQ(kernels::exp1(inf), inf);
    EXPECT_TRUE(std::isnan(kernels::exp1(std::nanf(""))));
    EXPECT_TRUE(std::isnan(kernels::tanh1(std::nanf(""))));
    EXPECT_EQ(kernels::tanh1(-inf), -1.0f);
    EXPECT_EQ(kernels::sigmoid1(-200.0f), 0.0f);
}

// simd::log1 (Cephes logf) against the double-precision log over its domain, the positive
// normal floats: every 4099th bit pattern from FLT_MIN to FLT_MAX, the powers of two and the
// floats around 1 (where log is near 0): within 2 ulp of the float nearest the true value, and
// exact at 1.
TEST(Kernels, Log1WithinTwoUlpOverThePositiveNormals) {
    std::vector<float> xs;
    const auto lo = std::bit_cast<uint32_t>(std::numeric_limits<float>::min()),
               hi = std::bit_cast<uint32_t>(std::numeric_limits<float>::max());
    for (uint64_t b = lo; b <= hi; b += 4099) xs.push_back(std::bit_cast<float>(uint32_t(b)));
    for (int e = -126; e < 128; ++e) xs.push_back(std::ldexp(1.0f, e));
    for (float x = 0.99f; x < 1.01f; x = std::nextafter(x, 2.0f)) xs.push_back(x);
    double worst = 0;
    for (const float x : xs) {
        const double want = std::log(static_cast<double>(x));
        const float got = simd::log1(x);
        const float near = static_cast<float>(want);
        const double ulp =
            std::nextafter(std::abs(near), std::numeric_limits<float>::infinity()) - std::abs(near);
        const double err = std::abs(got - want) / (near == 0 ? 1.0 : ulp);
        worst = std::max(worst, err);
        ASSERT_LE(err, 2.0) << "log1(" << x << ") = " << got << ", log = " << want;
    }
    EXPECT_EQ(simd::log1(1.0f), 0.0f);
    std::printf("simd::log1: worst %.2f ulp over %zu floats\n", worst, xs.size());
}

// docs/spec.md §10 worked examples, through the real masked softmax.
TEST(Kernels, SoftmaxWorkedExamples) {
    Tensor s1 = Tensor::from({1, 3}, std::vector<float>{0.5f, 2.1f, 0.3f}), a1({1, 3});
    kernels::masked_softmax(s1, {}, a1);
    EXPECT_NEAR(a1[0], 0.1477f, 5e-5);
    EXPECT_NEAR(a1[1], 0.7314f, 5e-5);
    EXPECT_NEAR(a1[2], 0.1209f, 5e-5);
    Tensor s2 = Tensor::from({1, 5}, std::vector<float>{1.2f, 3.5f, 0.8f, 2.1f, 0.5f}), a2({1, 5});
    kernels::masked_softmax(s2, {}, a2);
    const float want[] = {0.0685f, 0.6831f, 0.0459f, 0.1685f, 0.0340f};
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(a2[i], want[i], 5e-5) << i;
}

TEST(Kernels, MaskedSoftmaxGivesPaddingExactlyZero) {
    Rng rng(3);
    Tensor x = random_tensor(rng, {3, 6}, -5, 5), y({3, 6}), ref({3, 6});
    const std::vector<int> len = {6, 2, 0};
    kernels::masked_softmax(x, len, y);
    kernels::naive::masked_softmax(x, len, ref);
    EXPECT_TRUE(close_abs(y, ref, 1e-6));
    for (int s = 2; s < 6; ++s) EXPECT_EQ(y.at(1, s), 0.0f);
    for (int s = 0; s < 6; ++s) EXPECT_EQ(y.at(2, s), 0.0f);
    float sum = 0;
    for (int s = 0; s < 2; ++s) sum += y.at(1, s);
    EXPECT_NEAR(sum, 1.0f, 1e-6);
    // the padded row equals the same row softmaxed alone
    Tensor alone = Tensor::from({1, 2}, std::vector<float>{x.at(1, 0), x.at(1, 1)}), ya({1, 2});
    kernels::masked_softmax(alone, {}, ya);
    EXPECT_EQ(ya[0], y.at(1, 0));
    EXPECT_EQ(ya[1], y.at(1, 1));
    const std::vector<int> bad = {7, 1, 1};
    EXPECT_THROW(kernels::masked_softmax(x, bad, y), Error);
}

TEST(Kernels, LogSoftmaxIsStable) {
    Tensor x = Tensor::from({2, 3},
                            std::vector<float>{1000.0f, 1001.0f, 1002.0f, -1.0f, 0.0f, 1.0f}),
           y({2, 3}), ref({2, 3});
    kernels::log_softmax(x, y);
    kernels::naive::log_softmax(x, ref);
    // inputs near 1000 carry float32 spacing 6e-5, so that is the attainable accuracy
    EXPECT_TRUE(close_abs(y, ref, 1.2e-4));
    EXPECT_TRUE(std::isfinite(y[0]));
    EXPECT_NEAR(y[2], y[5], 1.2e-4);
    EXPECT_NEAR(y[4], ref[4], 1e-6);
}

TEST(Kernels, SoftmaxBackwardMatchesFiniteDifference) {
    Rng rng(4);
    Tensor x = random_tensor(rng, {1, 4}), a({1, 4}), g = random_tensor(rng, {1, 4}), dx({1, 4});
    kernels::masked_softmax(x, {}, a);
    kernels::softmax_backward(a, g, dx, false);
    for (int i = 0; i < 4; ++i) {
        Tensor xp = x, xm = x, ap({1, 4}), am({1, 4});
        xp[i] += 1e-2f;
        xm[i] -= 1e-2f;
        kernels::masked_softmax(xp, {}, ap);
        kernels::masked_softmax(xm, {}, am);
        double num = 0;
        for (int j = 0; j < 4; ++j) num += (static_cast<double>(ap[j]) - am[j]) * g[j] / 2e-2;
        EXPECT_NEAR(dx[i], num, 2e-4);
    }
}

TEST(Rng, SeededSplittableAndRestorable) {
    Rng a(42), b(42), c(43);
    EXPECT_EQ(a.next_u64(), b.next_u64());
    EXPECT_NE(Rng(42).next_u64(), c.next_u64());
    Rng s1 = a.split(1), s1b = a.split(1), s2 = a.split(2);
    EXPECT_EQ(s1.next_u64(), s1b.next_u64());
    EXPECT_NE(Rng(42).split(1).next_u64(), s2.next_u64());
    auto st = a.state();
    const uint64_t v = a.next_u64();
    a.set_state(st);
    EXPECT_EQ(a.next_u64(), v);
    double mean = 0;
    for (int i = 0; i < 10000; ++i) {
        const float u = a.uniform();
        ASSERT_GE(u, 0.0f);
        ASSERT_LT(u, 1.0f);
        mean += u;
    }
    EXPECT_NEAR(mean / 10000, 0.5, 0.02);
    for (int i = 0; i < 1000; ++i) ASSERT_LT(a.below(7), 7u);
}

TEST(Threads, ParallelForCoversRangeOnceAndRethrows) {
    set_num_threads(2);
    EXPECT_EQ(num_threads(), 2);
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(1000, 10, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_THROW(parallel_for(100, 1, [](int64_t b, int64_t) { NZ_CHECK(b != 0, "boom"); }), Error);
    set_num_threads(1);
    EXPECT_EQ(num_threads(), 1);
    set_num_threads(0);
}

// Jobs back to back and jobs apart: the workers catch some busy, some yielding and some asleep
// (the pool's wait gives up after about 200 µs), with more threads than cores so that a
// worker can be preempted while it leaves one job and the next one starts, and with the number
// of pieces changing from job to job (2, 3 or 4), so that such a worker would meet a job whose
// piece count differs from the one it left.
TEST(Threads, ParallelForBackToBackAndAfterSleepingCoversEveryJob) {
    const auto keep_threads = test::keep_num_threads();
    set_num_threads(4);
    std::vector<std::atomic<int>> hits(8);
    std::vector<int> expected(8, 0);
    for (int job = 0; job < 4000; ++job) {
        const int n = 2 + job % 7;
        parallel_for(n, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int i = 0; i < n; ++i) ++expected[i];
        if (job % 50 == 49)
            std::this_thread::sleep_for(std::chrono::microseconds(400));
        else if (job % 5 == 4)
            std::this_thread::sleep_for(std::chrono::microseconds(60));
    }
    for (int i = 0; i < 8; ++i) ASSERT_EQ(hits[i].load(), expected[i]) << i;
}

TEST(Tensor, DefaultConstructedIsEmpty) {
    Tensor t;
    TensorView v;
    EXPECT_EQ(t.numel(), 0);
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(v.numel(), 0);
    EXPECT_EQ(t.shape(), (Shape{0}));
}

}  // namespace test_core
