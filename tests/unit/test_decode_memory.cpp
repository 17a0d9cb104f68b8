// What a decoding thread gives back (docs/decoding.md "Thread safety"): Tensor::discard_pages
// returns a buffer's pages and keeps the buffer; a search's end (DecodeSession::end_search) gives
// back the batch's pages, and the next search over the same session is the same bits; a
// Translator fixes glibc's mmap threshold (in a child process: a process-wide setting).
#include "nazar/core/block_cache.h"
#include "nazar/core/tensor.h"
#include "nazar/decode/beam_search.h"
#include "tests/common/beam_checks.h"
#include "tests/common/child_process.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace nazar {
namespace test_decode_memory {
namespace {

// Resident pages among those wholly inside t's buffer (mincore).
int64_t resident_pages(const Tensor& t) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(t.data());
    const uintptr_t first = (begin + page - 1) / page * page,
                    last = (begin + static_cast<uintptr_t>(t.capacity()) * sizeof(float)) / page *
                           page;
    if (last <= first) return 0;
    std::vector<unsigned char> in((last - first) / page);
    if (mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0) return -1;
    int64_t n = 0;
    for (const unsigned char c : in) n += c & 1;
    return n;
}

TEST(DiscardPages, GivesThePagesBackAndKeepsTheBuffer) {
    Tensor t({1 << 20});  // 4 MiB
    t.fill(1.0f);
    ASSERT_GT(resident_pages(t), 1000);
    const float* data = t.data();
    t.discard_pages(int64_t{64} << 10);
    EXPECT_EQ(resident_pages(t), 0);
    EXPECT_EQ(t.data(), data);
    EXPECT_EQ(t.capacity(), 1 << 20);
    EXPECT_EQ(t.numel(), 1 << 20);
    // What was given back reads zero; the partial pages at the ends keep their values.
    int64_t ones = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
        ASSERT_TRUE(t[i] == 0.0f || t[i] == 1.0f) << i;
        ones += t[i] == 1.0f;
    }
    EXPECT_LE(ones, 2 * sysconf(_SC_PAGESIZE) / 4);
    t.fill(2.0f);  // usable as before
    EXPECT_EQ(t[t.numel() / 2], 2.0f);
}

TEST(DiscardPages, SmallerBuffersThanAskedAreLeftAlone) {
    Tensor t({1 << 14});  // 64 KiB
    t.fill(3.0f);
    t.discard_pages(int64_t{1} << 20);
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t[i], 3.0f) << i;
    Tensor empty;
    empty.discard_pages(0);  // no buffer: nothing to do
    EXPECT_EQ(empty.numel(), 0);
}

// Large enough that the batch's buffers span many pages: B·K = 120 rows of 1,000 logits, encoder
// states (24, S, 256).
ModelConfig wide_config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = 50;
    c.tgt_vocab_size = 1000;
    c.embedding_size = 64;
    c.encoder.hidden_size = 128;
    c.decoder.hidden_size = 128;
    c.attention.attention_size = 128;
    return c;
}

TEST(DecodeSessionMemory, TheSearchGivesItsPagesBackAndTheNextIsTheSame) {
    Seq2Seq m(wide_config(), 3);
    DecodeSession session(m);
    const test::Sources a = test::pad(test::mixed_length_sentences(50, 24));
    const test::Sources b = test::pad(test::mixed_length_sentences(50, 7));
    const BeamOptions o{.beam_size = 5, .n_best = 2, .max_length = 12};
    const auto first = beam_search(session, a.ids, a.lengths, a.S, o);
    const DecodeSession::SearchBuffers& buf = session.search_buffers();
    ASSERT_GE(buf.enc.enc_out.capacity() * 4, int64_t{64} << 10);
    EXPECT_EQ(resident_pages(buf.enc.enc_out), 0);
    EXPECT_EQ(resident_pages(buf.enc.keys.keys), 0);
    beam_search(session, b.ids, b.lengths, b.S, o);  // another batch in between
    test::expect_same_hypotheses(beam_search(session, a.ids, a.lengths, a.S, o), first,
                                 "the same batch again");
    DecodeSession fresh(m);
    test::expect_same_hypotheses(beam_search(fresh, a.ids, a.lengths, a.S, o), first,
                                 "a fresh session");
}

// ---- glibc's mmap threshold (child processes) -------------------------------------------------

constexpr const char* kChildVar = "NAZAR_TEST_MMAP_CHILD";

// Runs only as the child of the test below: whether a 300 KB malloc after a freed 16 MB one is
// a mapping of its own (glibc's dynamic threshold would have risen to 16 MB).
TEST(MmapThreshold, ChildReport) {
    if (std::getenv(kChildVar) == nullptr) GTEST_SKIP() << "runs only as a child process";
    if (std::getenv("NAZAR_TEST_FIX") != nullptr) keep_large_allocations_mapped();
    static void* volatile sink = nullptr;  // the blocks escape: the compiler keeps every call
    sink = std::malloc(16 << 20);
    std::free(sink);
    if (std::getenv("NAZAR_TEST_FIX_AFTER") != nullptr) keep_large_allocations_mapped();
    const std::size_t before = mallinfo2().hblkhd;
    sink = std::malloc(300 << 10);
    const std::size_t after = mallinfo2().hblkhd;
    std::printf("\nMAPPED %d\n", after >= before + (300 << 10) ? 1 : 0);
    std::free(sink);
}

int child_mapped(const std::string& env) {
    const test::ChildOutput c = test::run_this_program(
        std::string("-u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ -u GLIBC_TUNABLES ") +
            kChildVar + "=1 " + env,
        "MmapThreshold.ChildReport", "mmap_threshold");
    const auto p = c.out.find("\nMAPPED ");
    return p == std::string::npos ? -1 : c.out[p + 8] - '0';
}

TEST(MmapThreshold, FixedByTheLibraryUnlessTheEnvironmentSetsIt) {
    if (test::kAddressSanitized) GTEST_SKIP() << "AddressSanitizer's malloc has no such threshold";
    EXPECT_EQ(child_mapped(""), 0);  // glibc's dynamic threshold rose to 16 MB
    EXPECT_EQ(child_mapped("NAZAR_TEST_FIX=1"), 1);
    EXPECT_EQ(child_mapped("NAZAR_TEST_FIX_AFTER=1"), 1);  // set back down after it rose
    // The user's setting stands: a threshold of 1 MiB keeps 300 KB in the heap.
    EXPECT_EQ(child_mapped("MALLOC_MMAP_THRESHOLD_=1048576 NAZAR_TEST_FIX=1"), 0);
}

}  // namespace
}  // namespace test_decode_memory
}  // namespace nazar
