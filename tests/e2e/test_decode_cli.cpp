// `nazar translate` / `nazar align` end to end on a random model saved by the test (nothing is
// trained): stdin -> stdout streaming equals the C++ Translator API; chunking does not change
// the output; beam 1 is greedy; n-best and alignment formats; replace-unk; align == score;
// usage errors exit 2. Also the Translator's thread safety (4 concurrent callers, 2 and 4
// replicas sharing one model).
#include "nazar/decode/greedy.h"
#include "nazar/decode/translator.h"
#include "nazar/models/model_file.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace nazar {
namespace test_decode_cli {
namespace {

const std::string kBin = std::string(NAZAR_BINARY_DIR) + "/nazar";

// Per process: ctest runs each TEST in its own process, in parallel, and every process's
// SetUpTestSuite writes the model and the input; shared paths let one read another's half-written
// input.
std::string tmp(const std::string& name) {
    return testing::TempDir() + "/nazar_decode_cli_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    return lines;
}

int sh(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    for (std::size_t next; (next = s.find(sep, pos)) != std::string::npos; pos = next + sep.size())
        out.push_back(s.substr(pos, next - pos));
    out.push_back(s.substr(pos));
    return out;
}

// A random word-level model: 8 source words, 5 target words (so <unk> is emitted often).
class DecodeCli : public testing::Test {
protected:
    static void SetUpTestSuite() {
        ModelConfig c = test::tiny_config();
        const std::vector<std::string> src_words = {"a", "b", "c", "d", "e", "f", "g", "h"};
        const std::vector<std::string> tgt_words = {"w", "x", "y", "z", "v"};
        c.src_vocab_size = 12;
        c.tgt_vocab_size = 9;
        Seq2Seq m(c, 5);
        for (const ParamRef& p : m.parameters())  // make <unk> likely, for --replace-unk
            if (p.name == "generator.bias") p.value->at(1) += 1.5f;
        save_model(tmp("model.safetensors"), m,
                   {{kSrcVocabKey, Vocab::from_pieces(src_words).to_json()},
                    {kTgtVocabKey, Vocab::from_pieces(tgt_words).to_json()},
                    {kSrcTokenizerKey, Tokenizer::word().to_string()},
                    {kTgtTokenizerKey, Tokenizer::word().to_string()}});
        std::ofstream in(tmp("input.txt"));
        uint64_t x = 12345;
        for (int i = 0; i < 23; ++i) {
            const int n = i == 7 ? 0 : 1 + static_cast<int>((x >> 33) % 9);
            for (int k = 0; k < n; ++k) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                in << (k ? " " : "") << src_words[(x >> 33) % src_words.size()];
            }
            in << (i == 3 ? " unknownword" : "") << "\n";
        }
    }
    static std::string model() { return tmp("model.safetensors"); }
    static std::vector<std::string> inputs() { return read_lines(tmp("input.txt")); }
    static std::string translate(const std::string& flags, const std::string& name) {
        const std::string out = tmp(name);
        EXPECT_EQ(sh(kBin + " translate --model " + model() + " " + flags + " < " +
                     tmp("input.txt") + " > " + out),
                  0)
            << flags;
        return out;
    }
};

TEST_F(DecodeCli, StreamingRoundTripEqualsTheApi) {
    const auto api = Translator(model()).translate(inputs(), {.beam_size = 4, .batch_size = 5});
    const auto a = read_lines(translate("--beam 4 --batch 5", "plain.txt"));
    const auto b = read_lines(translate("--beam 4 --batch 3 --chunk 2 --threads 1", "chunked.txt"));
    ASSERT_EQ(a.size(), inputs().size());
    EXPECT_EQ(a, b);
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], api[i].hypotheses[0].text) << i;
    // --input / --output files give the same
    ASSERT_EQ(sh(kBin + " --threads 1 translate --model " + model() + " --beam 4 --input " +
                 tmp("input.txt") + " --output " + tmp("files.txt")),
              0);
    EXPECT_EQ(read_lines(tmp("files.txt")), a);
}

TEST_F(DecodeCli, BeamOneIsGreedy) {
    const auto out = read_lines(translate("--beam 1", "greedy.txt"));
    ASSERT_EQ(out.size(), inputs().size());
    LoadedModel m = load_model(model());
    const Vocab sv = Vocab::from_json(m.metadata.at(kSrcVocabKey)),
                tv = Vocab::from_json(m.metadata.at(kTgtVocabKey));
    const Tokenizer tok = Tokenizer::word();
    const auto lines = inputs();
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::vector<int32_t> ids;
        Pieces p;
        tok.encode(lines[i], p);
        sv.encode(p, ids);
        const std::vector<int> len = {static_cast<int>(ids.size())};
        const auto g = greedy_decode(*m.model, ids, len, len[0]);
        EXPECT_EQ(out[i], tv.decode(g[0].tokens, tok)) << i;
    }
}

TEST_F(DecodeCli, NBestAndHardAlignmentFormats) {
    const auto out = read_lines(translate("--beam 4 --n-best 3 --alignment hard", "nbest.txt"));
    const auto lines = inputs();
    std::vector<int> count(lines.size(), 0);
    double last = 0;
    int last_i = -1;
    for (const std::string& l : out) {
        const auto f = split(l, " ||| ");
        ASSERT_EQ(f.size(), 4u) << l;
        const int i = std::stoi(f[0]);
        ASSERT_GE(i, last_i);
        const double score = std::stod(f[2]);
        if (i == last_i) {
            EXPECT_LE(score, last + 1e-6) << l;  // sorted within a sentence
        }
        last = score, last_i = i;
        ++count[i];
        const int n_src = static_cast<int>(split(lines[i], " ").size()) * !lines[i].empty();
        const int n_tgt = static_cast<int>(split(f[1], " ").size()) * !f[1].empty();
        const auto links = parse_hard_alignment(f[3]);
        EXPECT_EQ(static_cast<int>(links.size()), n_src ? n_tgt : 0) << l;
        for (const auto& k : links) {
            EXPECT_LT(k.src, n_src);
            EXPECT_LT(k.tgt, n_tgt);
        }
    }
    for (int c : count) EXPECT_EQ(c, 3);
    // soft: one JSON matrix per line, rows = target tokens
    const auto soft = read_lines(translate("--beam 2 --alignment soft", "soft.txt"));
    ASSERT_EQ(soft.size(), lines.size());
    EXPECT_NE(soft[0].find(" ||| [["), std::string::npos) << soft[0];
}

TEST_F(DecodeCli, ReplaceUnk) {
    const auto plain = read_lines(translate("--beam 3", "unk_plain.txt"));
    const auto repl =
        read_lines(translate("--beam 3 --replace-unk --alignment hard", "unk_repl.txt"));
    const auto lines = inputs();
    int replaced = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto f = split(repl[i], " ||| ");
        const auto words = split(plain[i], " ");
        const auto out = split(f[0], " ");
        ASSERT_EQ(words.size(), out.size());
        const auto src = split(lines[i], " ");
        const auto links = parse_hard_alignment(f[1]);
        for (std::size_t j = 0; j < words.size(); ++j) {
            if (words[j] != "<unk>" || lines[i].empty()) {
                EXPECT_EQ(out[j], words[j]);
                continue;
            }
            const auto it = std::find_if(links.begin(), links.end(),
                                         [&](auto l) { return l.tgt == static_cast<int>(j); });
            ASSERT_NE(it, links.end());
            EXPECT_EQ(out[j], src[it->src]);  // the most-attended source word
            ++replaced;
        }
    }
    EXPECT_GT(replaced, 0) << "the random model emitted no <unk>: pick another seed";
    // with a dictionary
    {
        std::ofstream d(tmp("dict.tsv"));
        for (const char* w : {"a", "b", "c", "d", "e", "f", "g", "h"})
            d << w << "\tDICT_" << w << "\n";
    }
    const auto dict =
        read_lines(translate("--beam 3 --replace-unk --dict " + tmp("dict.tsv"), "unk_dict.txt"));
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto words = split(plain[i], " "), out = split(dict[i], " ");
        for (std::size_t j = 0; j < words.size(); ++j)
            if (words[j] == "<unk>" && !lines[i].empty()) {
                EXPECT_EQ(out[j].rfind("DICT_", 0), 0u) << dict[i];
            }
    }
}

TEST_F(DecodeCli, AlignEqualsScoreAndTheTranslationsOwnAttention) {
    // align the model's own translations: the hard links equal translate's
    const auto trans = read_lines(translate("--beam 3 --alignment hard", "own.txt"));
    {
        std::ofstream t(tmp("own_tgt.txt"));
        for (const auto& l : trans) t << split(l, " ||| ")[0] << "\n";
    }
    ASSERT_EQ(sh(kBin + " align --model " + model() + " --src " + tmp("input.txt") + " --tgt " +
                 tmp("own_tgt.txt") + " --scores --batch 4 > " + tmp("align.txt")),
              0);
    ASSERT_EQ(sh(kBin + " score --model " + model() + " --src " + tmp("input.txt") + " --tgt " +
                 tmp("own_tgt.txt") + " > " + tmp("score.txt")),
              0);
    const auto al = read_lines(tmp("align.txt")), sc = read_lines(tmp("score.txt"));
    ASSERT_EQ(al.size(), trans.size());
    ASSERT_EQ(sc.size(), trans.size());
    int same = 0;
    for (std::size_t i = 0; i < al.size(); ++i) {
        const auto f = split(al[i], " ||| ");
        ASSERT_EQ(f.size(), 2u);
        EXPECT_NEAR(std::stod(f[0]), std::stod(sc[i]), 1e-4 * (1 + std::abs(std::stod(sc[i]))));
        // translations containing <unk> re-encode to the same ids, so links must agree
        same += f[1] == split(trans[i], " ||| ")[1];
    }
    EXPECT_EQ(same, static_cast<int>(al.size()));
}

TEST_F(DecodeCli, UsageErrorsExitTwo) {
    EXPECT_EQ(
        sh(kBin + " translate --model " + model() + " --beam 2 --n-best 3 < /dev/null 2>/dev/null"),
        2);
    EXPECT_EQ(sh(kBin + " translate --model " + model() + " --dict x.tsv < /dev/null 2>/dev/null"),
              2);
    EXPECT_EQ(
        sh(kBin + " translate --model " + model() + " --alignment medium < /dev/null 2>/dev/null"),
        2);
    EXPECT_EQ(
        sh(kBin + " translate --model " + tmp("missing.safetensors") + " < /dev/null 2>/dev/null"),
        1);
    EXPECT_EQ(
        sh(kBin + " align --model " + model() + " --src " + tmp("input.txt") + " 2>/dev/null"), 2);
    EXPECT_EQ(
        sh("printf 'a \\377\\n' | " + kBin + " translate --model " + model() + " 2>/dev/null"), 1);
}

// Sessions over one shared model (the weights and their transposed step copies loaded or made
// once): 4 threads on 2 and on 4 replicas give a lone caller's texts and scores, bit for bit
// (12 step rows: the shared transposed weights are read).
TEST_F(DecodeCli, TranslatorIsThreadSafe) {
    const auto lines = inputs();
    const TranslationOptions opt{.beam_size = 3, .n_best = 2, .batch_size = 4};
    const auto expected = Translator(model()).translate(lines, opt);
    for (const int replicas : {2, 4}) {
        const Translator tr(model(), {.replicas = replicas});
        std::vector<std::thread> threads;
        std::vector<int> mismatches(4, 0);
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int rep = 0; rep < 3; ++rep) {
                    const auto got = tr.translate(lines, opt);
                    for (std::size_t i = 0; i < lines.size(); ++i)
                        for (std::size_t k = 0; k < got[i].hypotheses.size(); ++k)
                            mismatches[t] +=
                                got[i].hypotheses[k].text != expected[i].hypotheses[k].text ||
                                got[i].hypotheses[k].score != expected[i].hypotheses[k].score;
                }
            });
        for (auto& th : threads) th.join();
        for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
        EXPECT_EQ(tr.replicas(), replicas);
    }
    EXPECT_THROW(Translator(model(), {.replicas = 0}), UsageError);
}

}  // namespace
}  // namespace test_decode_cli
}  // namespace nazar
