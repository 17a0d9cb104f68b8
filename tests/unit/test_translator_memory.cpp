// What a Translator keeps after loading: a checkpoint's optimizer moments and averaged weights
// (tensors "optim.*", "train.*", three times the model in a real checkpoint) are read with the
// file and freed once the model is built; they must go back to the system, not stay in the block
// cache (core/block_cache.h), which keeps freed large blocks for reuse, or every process decoding
// a best.safetensors would carry them.
#include "nazar/core/block_cache.h"
#include "nazar/core/safetensors.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/decode/translator.h"
#include "nazar/models/model_file.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nazar {
namespace test_translator_memory {
namespace {

TEST(TranslatorMemory, ACheckpointsTrainingStateIsNotKept) {
    if (block_cache_stats().limit_bytes == 0) GTEST_SKIP() << "the block cache is off here";
    const std::string dir = test::fresh_temp_dir("translator_memory");
    ModelConfig cfg = test::tiny_config();
    cfg.src_vocab_size = 6;  // specials + a b
    cfg.tgt_vocab_size = 6;  // specials + x y
    Seq2Seq m(cfg, 3);
    const std::vector<std::string> src = {"a", "b"}, tgt = {"x", "y"};
    SafeTensors st;
    model_to_safetensors(m,
                         {{kSrcVocabKey, Vocab::from_pieces(src).to_json()},
                          {kTgtVocabKey, Vocab::from_pieces(tgt).to_json()},
                          {kSrcTokenizerKey, Tokenizer::word().to_string()},
                          {kTgtTokenizerKey, Tokenizer::word().to_string()}},
                         st);
    // Two 4 MB tensors of training state: far above the block cache's smallest block.
    for (const char* name : {"optim.exp_avg.decoder", "train.average.decoder"}) {
        Tensor t{Shape{1 << 20}};
        t.fill(0.5f);
        st.set(name, std::move(t));
    }
    save_safetensors(dir + "/checkpoint.safetensors", st);
    release_block_cache();
    const std::size_t before = block_cache_stats().kept_bytes;
    const Translator tr(dir + "/checkpoint.safetensors");
    EXPECT_LT(block_cache_stats().kept_bytes, before + (std::size_t{1} << 20))
        << "the checkpoint's training state stayed in the block cache";
    const auto out = tr.translate(std::vector<std::string>{"a b a"}, {.beam_size = 2});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FALSE(out[0].hypotheses.empty());
}

}  // namespace
}  // namespace test_translator_memory
}  // namespace nazar
