// Training data in memory (nazar/train/training_source.h): the same pairs given as text train
// exactly as from files, bit for bit; what a run with data in memory refuses; the finish and
// quiet hooks that the demo trains with.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/train/trainer.h"
#include "nazar/train/training_source.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <sstream>
#include <string>
#include <vector>

namespace nazar {
namespace test_train_source {
namespace {

using test::fresh_temp_dir;
using test::same_weights;
using test::tiny_train_config;

std::vector<TextPair> pairs_of(const std::string& tsv_path) {
    std::vector<TextPair> out;
    std::istringstream in(read_file(tsv_path));
    for (std::string line; std::getline(in, line);) {
        const auto tab = line.find('\t');
        out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    return out;
}

// The data of `c`'s files as text in memory, in the vocabularies the files gave `from`.
TrainingSource in_memory(const TrainConfig& c, const Trainer& from) {
    const TrainingData& d = from.data();
    return TrainingSource::from_text(d.src_tokenizer, d.tgt_tokenizer, d.src_vocab, d.tgt_vocab,
                                     pairs_of(c.train), pairs_of(c.dev));
}

TrainConfig without_files(TrainConfig c) {
    c.train.clear();
    c.dev.clear();
    return c;
}

TEST(TrainingSource, TextInMemoryTrainsAsTheSameFilesBitForBit) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("source-same");
    const TrainConfig c = tiny_train_config(dir);
    Trainer files(c);
    TrainConfig m = without_files(c);
    m.save_dir = dir + "/memory";
    Trainer memory(m, in_memory(c, files));
    ASSERT_EQ(memory.data().corpus.size(), files.data().corpus.size());  // nothing filtered
    const TrainResult a = files.run(), b = memory.run();
    EXPECT_TRUE(same_weights(files.model(), memory.model()));
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.last_valid.loss, b.last_valid.loss);  // the dev set too
    EXPECT_EQ(a.last_valid.exact, b.last_valid.exact);
    EXPECT_TRUE(file_exists(m.save_dir + "/model.safetensors"));
}

TEST(TrainingSource, DataFilesCopyAttentionAndMismatchedDevTextAreRefused) {
    const std::string dir = fresh_temp_dir("source-refused");
    const TrainConfig c = tiny_train_config(dir);
    Trainer files(c);
    TrainConfig with_dev = c;
    with_dev.train.clear();
    try {
        Trainer t(with_dev, in_memory(c, files));
        ADD_FAILURE() << "dev file accepted with data in memory";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("dev is set"), std::string::npos) << e.what();
    }
    TrainConfig copy = without_files(c);
    copy.copy_attention = true;
    EXPECT_THROW(Trainer(copy, in_memory(c, files)), UsageError);
    TrainingSource short_text = in_memory(c, files);
    short_text.dev_tgt.pop_back();
    EXPECT_THROW(Trainer(without_files(c), std::move(short_text)), Error);
}

TEST(TrainingSource, FinishEndsTheRunAfterTheValidationThatSetIt) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("source-finish");
    TrainConfig c = tiny_train_config(dir);
    c.max_steps = 200;
    c.valid_interval = 10;
    Trainer files(c);
    TrainConfig m = without_files(c);
    std::atomic<bool> finish{false};
    std::vector<int64_t> validated;
    TrainerHooks hooks;
    hooks.quiet = true;
    hooks.finish = &finish;
    hooks.on_record = [&](const nlohmann::json& r) {
        if (r["type"] != "valid") return;
        validated.push_back(r["step"].get<int64_t>());
        if (validated.size() == 3) finish = true;
    };
    testing::internal::CaptureStderr();
    const TrainResult r = Trainer(m, in_memory(c, files), hooks).run();
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.state.step, 30);
    EXPECT_EQ(validated, (std::vector<int64_t>{10, 20, 30}));  // no extra validation at the end
    EXPECT_FALSE(r.early_stopped);
    EXPECT_EQ(said, "");  // quiet
}

}  // namespace
}  // namespace test_train_source
}  // namespace nazar
