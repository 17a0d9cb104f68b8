// oneDNN is opened on its first use, not at start (nazar/core/gemm/onednn_api.h): a model
// decoding in int8 on nazar's packed kernels never opens it, and the same model in fp32 does, so
// the first check is not vacuous (its products are large enough to go to the library). Each ctest
// entry is a process of its own; run together with other tests in one process the check skips
// once something earlier has opened the library.
#include "nazar/core/blas.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/seq2seq.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#if NAZAR_BLAS_ONEDNN
#include "nazar/core/gemm/onednn_api.h"

#include <dlfcn.h>
#endif

#include <vector>

namespace nazar {
namespace test_onednn_loading {
namespace {

#if NAZAR_BLAS_ONEDNN

// Whether the process has the library mapped: asked of the dynamic loader, not of nazar.
bool loaded() {
    void* h = dlopen(gemm_detail::onednn_soname(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
}

ModelConfig sized_config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = c.tgt_vocab_size = 300;
    c.embedding_size = 64;
    c.encoder.hidden_size = 128;
    c.decoder.hidden_size = 256;
    c.attention.attention_size = 128;
    return c;
}

void decode(const Seq2Seq& m) {
    std::vector<std::vector<int32_t>> src(1);
    for (int j = 0; j < 40; ++j) src[0].push_back(4 + (13 * j) % 290);
    const auto hyps = beam_search_sorted(m, src, {.beam_size = 5, .max_length = 30});
    ASSERT_EQ(hyps.size(), 1u);
    ASSERT_FALSE(hyps[0].empty());
    const std::vector<int> lengths = {40};
    const auto greedy = greedy_decode(m, src[0], lengths, 40, {.max_length = 30});
    ASSERT_EQ(greedy.size(), 1u);
}

TEST(OneDnnLoading, Int8DecodingNeverOpensTheLibraryAndFp32Does) {
    if (loaded()) GTEST_SKIP() << "oneDNN is already open in this process (an earlier test)";
    Seq2Seq m(sized_config(), 5);
    m.set_precision(Precision::int8);
    decode(m);
    EXPECT_FALSE(loaded()) << "int8 decoding at batch 1 opened oneDNN";
    m.set_precision(Precision::fp32);
    decode(m);
    EXPECT_TRUE(loaded()) << "fp32 decoding never reached oneDNN: the first check proves nothing";
}

TEST(OneDnnLoading, TheLibraryDescriptionOpensItAndNamesIt) {
    EXPECT_NE(blas_description().find("oneDNN"), std::string::npos);
    EXPECT_TRUE(loaded());
}

#else

TEST(OneDnnLoading, NotThisBuild) {
    GTEST_SKIP() << "built without oneDNN (NAZAR_BLAS)";
}

#endif

}  // namespace
}  // namespace test_onednn_loading
}  // namespace nazar
