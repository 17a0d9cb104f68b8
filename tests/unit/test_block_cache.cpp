// The cache of large tensor blocks (core/block_cache.h): size classes, reuse of a freed block for
// the next request of its class (zeroed), the limit with least-recently-freed eviction, small
// blocks left to malloc, the environment's limit (in a child process), and many threads at once.
#include "nazar/core/block_cache.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"
#include "tests/common/child_process.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace nazar {
namespace test_block_cache {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr const char* kChildVar = "NAZAR_TEST_BLOCK_CACHE_CHILD";

// A fresh cache state for a test: the limit given, nothing kept; restores the limit after.
class BlockCacheTest : public testing::Test {
protected:
    void SetUp() override {
        saved_ = block_cache_stats().limit_bytes;
        set_block_cache_limit(64 * kMiB);
        release_block_cache();
    }
    void TearDown() override { set_block_cache_limit(saved_); }
    std::size_t saved_ = 0;
};

bool all_zero(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (t.data()[i] != 0.0f) return false;
    return true;
}

TEST(BlockCacheClass, FourClassesPerPowerOfTwoNeverSmallerThanTheRequest) {
    std::size_t prev = 0;
    for (std::size_t bytes = kBlockCacheMinBytes; bytes <= 64 * kMiB; bytes += 4096 * 3 + 64) {
        const std::size_t c = block_cache_class(bytes);
        EXPECT_GE(c, bytes);
        EXPECT_LT(c - bytes, bytes / 4 + 1) << bytes;  // rounded up by less than 25%
        EXPECT_EQ(c % 64, 0u) << bytes;
        EXPECT_EQ(block_cache_class(c), c) << bytes;
        EXPECT_GE(c, prev) << bytes;
        prev = c;
    }
    for (std::size_t p = kBlockCacheMinBytes; p <= 256 * kMiB; p *= 2) {
        EXPECT_EQ(block_cache_class(p), p);
        std::set<std::size_t> classes;
        for (std::size_t b = p + 64; b <= 2 * p; b += p / 64) classes.insert(block_cache_class(b));
        EXPECT_EQ(classes, (std::set<std::size_t>{p + p / 4, p + p / 2, p + 3 * (p / 4), 2 * p}))
            << p;
    }
}

TEST_F(BlockCacheTest, AFreedLargeBlockServesTheNextRequestOfItsClassZeroed) {
    const BlockCacheStats s0 = block_cache_stats();
    const float* first = nullptr;
    {
        Tensor a({300, 1000});  // 1.2 MB: class 1.25 MiB
        a.fill(7.0f);
        first = a.data();
    }
    const BlockCacheStats s1 = block_cache_stats();
    EXPECT_EQ(s1.kept_blocks, 1u);
    EXPECT_EQ(s1.kept_bytes, block_cache_class(300 * 1000 * sizeof(float)));
    Tensor b({310, 1000});  // another size, the same class
    EXPECT_EQ(b.data(), first);
    EXPECT_TRUE(all_zero(b)) << "a reused block must come zeroed";
    const BlockCacheStats s2 = block_cache_stats();
    EXPECT_EQ(s2.reused, s1.reused + 1);
    EXPECT_EQ(s2.kept_blocks, 0u);
    EXPECT_EQ(s1.fresh, s0.fresh + 1);
    Tensor c({600, 1000});  // a larger class: from the system
    EXPECT_NE(c.data(), first);
    EXPECT_EQ(block_cache_stats().fresh, s2.fresh + 1);
}

// An outgrown block goes back to the system, not into the cache: a buffer that grows batch
// after batch (a decoding session's) would otherwise leave a block of every size it had.
TEST_F(BlockCacheTest, ResizeBeyondTheCapacityGivesTheOldBlockBack) {
    Tensor t({1024, 256});  // 1 MiB
    t.view().fill(1.0f);
    const BlockCacheStats s0 = block_cache_stats();
    t.resize({4096, 256});
    EXPECT_EQ(block_cache_stats().kept_blocks, s0.kept_blocks);
    EXPECT_EQ(block_cache_stats().kept_bytes, s0.kept_bytes);
    EXPECT_TRUE(all_zero(t));
    t.resize({512, 256});  // within the capacity: the same block, zeroed
    EXPECT_TRUE(all_zero(t));
    EXPECT_EQ(block_cache_stats().kept_blocks, s0.kept_blocks);
    { Tensor u({1024, 256}); }  // a tensor that goes is still kept
    EXPECT_EQ(block_cache_stats().kept_blocks, s0.kept_blocks + 1);
}

TEST_F(BlockCacheTest, SmallBlocksAreLeftToMalloc) {
    { Tensor small({16, 1000}); }  // 64 KB
    EXPECT_EQ(block_cache_stats().kept_blocks, 0u);
    EXPECT_EQ(block_cache_stats().kept_bytes, 0u);
}

TEST_F(BlockCacheTest, KeepsAtMostTheLimitAndEvictsTheLeastRecentlyFreed) {
    set_block_cache_limit(3 * kMiB);
    std::vector<Tensor> t;
    std::vector<const float*> ptr;
    for (int i = 0; i < 4; ++i) {
        t.emplace_back(Shape{1024, 256});  // 1 MiB each, one class
        ptr.push_back(t.back().data());
    }
    for (Tensor& x : t) x = Tensor();  // freed first to last: the first is evicted by the fourth
    t.clear();
    const BlockCacheStats s = block_cache_stats();
    EXPECT_EQ(s.kept_blocks, 3u);
    EXPECT_EQ(s.kept_bytes, 3 * kMiB);
    for (int i = 3; i >= 1; --i) {  // most recently freed first
        Tensor r({1024, 256});
        EXPECT_EQ(r.data(), ptr[i]) << i;
        t.push_back(std::move(r));
    }
    EXPECT_EQ(block_cache_stats().reused, s.reused + 3);
    Tensor fourth({1024, 256});
    EXPECT_EQ(block_cache_stats().fresh, s.fresh + 1);
    // a block larger than the whole limit is never kept
    { Tensor big({2048, 1024}); }
    EXPECT_EQ(block_cache_stats().kept_blocks, 0u);
}

TEST_F(BlockCacheTest, LimitZeroReleasesEverythingAndKeepsNothing) {
    { Tensor a({1024, 256}); }
    EXPECT_EQ(block_cache_stats().kept_blocks, 1u);
    set_block_cache_limit(0);
    EXPECT_EQ(block_cache_stats().kept_blocks, 0u);
    { Tensor b({1024, 256}); }
    EXPECT_EQ(block_cache_stats().kept_bytes, 0u);
    const uint64_t reused = block_cache_stats().reused;
    Tensor c({1024, 256});
    EXPECT_EQ(block_cache_stats().reused, reused);
    EXPECT_TRUE(all_zero(c));
}

// Threads allocating, checking, writing and freeing blocks of a few classes at once (under
// AddressSanitizer this also checks that no block is handed out twice or read while kept).
TEST_F(BlockCacheTest, ManyThreadsGetZeroedBlocksOfTheirOwn) {
    set_block_cache_limit(16 * kMiB);
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int w = 0; w < 4; ++w)
        threads.emplace_back([w, &bad] {
            Rng rng(static_cast<uint64_t>(w) + 1);
            for (int it = 0; it < 60; ++it) {
                const int64_t rows = 64 + static_cast<int64_t>(rng.uniform(0, 1) * 900);
                Tensor t({rows, 1024});
                if (!all_zero(t)) ++bad[w];
                t.fill(static_cast<float>(w + 1));
                for (int64_t i = 0; i < t.numel(); i += 4099)
                    if (t.data()[i] != static_cast<float>(w + 1)) ++bad[w];
            }
        });
    for (auto& th : threads) th.join();
    for (int w = 0; w < 4; ++w) EXPECT_EQ(bad[w], 0) << "thread " << w;
    EXPECT_LE(block_cache_stats().kept_bytes, 16 * kMiB);
}

// A tensor block freed twice stops the process (it would otherwise be kept twice and handed to
// two tensors), large or small, as glibc's own check did before.
TEST_F(BlockCacheTest, FreeingABlockTwiceStopsTheProcess) {
    for (const int64_t n : {int64_t{1} << 18, int64_t{100}}) {
        EXPECT_DEATH(
            {
                float* p = aligned_alloc_floats(n);
                aligned_free(p);
                aligned_free(p);
            },
            "freed twice")
            << n << " floats";
    }
}

#if defined(__SANITIZE_ADDRESS__)
#define NZ_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NZ_TEST_ASAN 1
#endif
#endif

#ifdef NZ_TEST_ASAN
// A kept block is poisoned: reading a freed tensor is still reported, though its memory stays.
TEST_F(BlockCacheTest, AKeptBlockIsPoisonedUnderAddressSanitizer) {
    EXPECT_DEATH(
        {
            const float* p = nullptr;
            {
                Tensor a({1024, 256});
                p = a.data();
            }
            std::printf("%f\n", static_cast<double>(*static_cast<const volatile float*>(p + 5)));
        },
        "use-after-poison");
}

// Writes just past a large tensor (into its size class's slack) or just before it (into the
// block's header) are reported, as the red zones of a plain malloc would.
TEST_F(BlockCacheTest, WritesOutsideALargeTensorAreReportedUnderAddressSanitizer) {
    const auto write_at = [](int64_t offset) {
        Tensor a({1000, 300});  // 1.14 MiB in a 1.25 MiB class
        *static_cast<volatile float*>(a.data() + offset) = 1.0f;
    };
    EXPECT_DEATH(write_at(1000 * 300 + 100), "use-after-poison");
    EXPECT_DEATH(write_at(-1), "use-after-poison");
}
#endif

// ---- NAZAR_BLOCK_CACHE_MB, read once at the first allocation (child processes) ---------------

// Runs only as the child of the test below: prints the limit the environment gave.
TEST(BlockCacheEnv, ChildReport) {
    if (std::getenv(kChildVar) == nullptr) GTEST_SKIP() << "runs only as a child process";
    { Tensor a({1024, 256}); }
    { Tensor b({1024, 256}); }
    std::printf("\nLIMIT %zu\n", block_cache_stats().limit_bytes);
}

using test::ChildOutput;
using test::occurrences;

ChildOutput run_child(const std::string& value) {
    return test::run_this_program("NAZAR_BLOCK_CACHE_MB='" + value + "' " + kChildVar + "=1",
                                  "BlockCacheEnv.ChildReport", "block_cache");
}

std::size_t child_limit(const ChildOutput& c) {
    const auto p = c.out.find("\nLIMIT ");
    return p == std::string::npos ? std::size_t{1} << 62 : std::stoull(c.out.substr(p + 7));
}

TEST(BlockCacheEnv, TheEnvironmentSetsTheLimit) {
    EXPECT_EQ(child_limit(run_child("8")), 8 * kMiB);
    const ChildOutput off = run_child("0");
    EXPECT_EQ(child_limit(off), 0u) << off.out << off.err;
    EXPECT_EQ(off.err.find("NAZAR_BLOCK_CACHE_MB"), std::string::npos) << off.err;
}

TEST(BlockCacheEnv, ABadValueIsReportedOnceAndTheDefaultKept) {
    for (const char* bad : {"lots", "-5", "12MB", "", "99999999999999999999"}) {
        const ChildOutput c = run_child(bad);
        EXPECT_EQ(child_limit(c), kBlockCacheDefaultBytes) << bad << ": " << c.out << c.err;
        EXPECT_EQ(occurrences(c.err, "ignoring NAZAR_BLOCK_CACHE_MB="), 1) << bad << ": " << c.err;
    }
}

}  // namespace
}  // namespace test_block_cache
}  // namespace nazar
