// `nazar score` (cli/cmd_score.cpp) prints TrainPass::score of each pair: a model trained for a
// few steps is scored in-process (one batch) and by the CLI (batches of 3, both input forms);
// the numbers agree to the printed precision up to BLAS summation order, one line per pair.
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/data/pipeline.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace nazar {
namespace test_trainer_score {
namespace {

// stdout of `cmd`, a command line that starts with the nazar program (stderr discarded), and its
// exit status.
std::string run_command(const std::string& cmd, int& status) {
    std::string out;
    FILE* p = popen((NAZAR_TARGET_RUNNER + cmd + " 2>/dev/null").c_str(), "r");
    if (!p) return out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    status = pclose(p);
    return out;
}

std::vector<double> parse_lines(const std::string& text) {
    std::vector<double> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) v.push_back(std::strtod(line.c_str(), nullptr));
    return v;
}

TEST(ScoreCli, MatchesSeq2SeqScore) {
    const std::string cli = std::string(NAZAR_BINARY_DIR) + "/nazar";
    if (!std::filesystem::exists(cli)) GTEST_SKIP() << cli << " is not built";
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("score-cli");
    atomic_write_file(dir + "/train.tsv",
                      "a b c\tc b a\nb b d\td b b\nc a\ta c\nd c b a\ta b c d\n");
    TrainConfig c = TrainConfig::defaults();
    c.train = dir + "/train.tsv";
    c.embedding_size = 6;
    c.hidden_size = 8;
    c.batch_size = 2;
    c.max_steps = 6;
    c.save_dir = dir + "/model";
    c.progress = "none";
    Trainer t(c);
    t.run();

    // Pairs with unseen words (<unk>), an empty target and different lengths.
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"a b c", "c b a"}, {"d", "d"},         {"a a a a b", "b a a a a"}, {"c x", "y c"},
        {"b", ""},          {"d d c", "c d d"}, {"a", "a b c d a b"}};
    std::string tsv, src, tgt;
    std::vector<std::vector<int32_t>> src_ids, tgt_ids;
    const TrainingData& d = t.data();
    for (const auto& [s, g] : pairs) {
        tsv += s + "\t" + g + "\n";
        src += s + "\n";
        tgt += g + "\n";
        src_ids.push_back(encode_line(s, d.src_tokenizer, d.src_vocab));
        tgt_ids.push_back(encode_line(g, d.tgt_tokenizer, d.tgt_vocab));
    }
    atomic_write_file(dir + "/pairs.tsv", tsv);
    atomic_write_file(dir + "/pairs.src", src);
    atomic_write_file(dir + "/pairs.tgt", tgt);
    std::vector<double> expected(pairs.size());
    TrainPass(t.model()).score(batch_from_ids(src_ids, tgt_ids), expected);

    const std::string model = c.save_dir + "/model.safetensors";
    int status = -1;
    const std::string out =
        run_command(cli + " --threads 1 score --model " + model + " --src " + dir +
                        "/pairs.src --tgt " + dir + "/pairs.tgt --batch 3 --digits 9",
                    status);
    ASSERT_EQ(status, 0);
    const std::vector<double> got = parse_lines(out);
    ASSERT_EQ(got.size(), pairs.size()) << out;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        EXPECT_LT(expected[i], 0.0);
        // float32 forward passes over different batch shapes: agreement to ~1e-6 relative.
        EXPECT_NEAR(got[i], expected[i], 1e-5 * std::max(1.0, std::abs(expected[i])))
            << "pair " << i;
    }
    // The TSV form gives the same lines; the default format has 6 decimals.
    const std::string out_tsv = run_command(cli + " --threads 1 score --model " + model +
                                                " --tsv " + dir + "/pairs.tsv --batch 3 --digits 9",
                                            status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(out_tsv, out);
    const std::string out6 =
        run_command(cli + " score --model " + model + " --tsv " + dir + "/pairs.tsv", status);
    EXPECT_EQ(out6.substr(0, out6.find('\n')), fmt::format("{:.6f}", expected[0]));
    // Usage errors exit 2: no input, and both input forms at once.
    run_command(cli + " score --model " + model, status);
    EXPECT_EQ(WEXITSTATUS(status), 2);
    run_command(cli + " score --model " + model + " --tsv x --src y --tgt z", status);
    EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace test_trainer_score
}  // namespace nazar
