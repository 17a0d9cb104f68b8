// `nazar translate --constraints F` and `--protect` end to end on a random word-level model
// (nothing is trained): include phrases appear in every output of the n-best list, exclude
// phrases in none, lines without constraints translate as without the option, protected spans
// are copied or reported, the Translator API agrees with the CLI, and malformed constraint
// files are usage errors naming file and line.
#include "nazar/decode/translator.h"
#include "nazar/models/model_file.h"
#include "tests/common/cli_run.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace nazar {
namespace test_constraints_cli {
namespace {

using test::kNazarBin;
using test::read_lines;
using test::sh;
using test::slurp;

std::string tmp(const std::string& name) {
    return test::process_tmp("constraints", name);
}

bool has_word_phrase(const std::string& text, const std::string& phrase) {
    return (" " + text + " ").find(" " + phrase + " ") != std::string::npos;
}

const std::vector<std::string> kInputs = {"a b c", "d e", "f", "g h a b", "c c d", "b", "h g f e"};

class ConstraintsCli : public testing::Test {
protected:
    static void SetUpTestSuite() {
        ModelConfig c = test::tiny_config();
        c.src_vocab_size = 12;
        c.tgt_vocab_size = 12;
        Seq2Seq m(c, 21);
        // outputs that end (</s> about 0.3 a step) whatever was forced before
        for (const ParamRef& p : m.parameters()) {
            if (p.name == "generator.weight")
                for (int64_t i = 0; i < p.value->numel(); ++i) p.value->data()[i] *= 0.1f;
            if (p.name == "generator.bias") p.value->at(c.special_ids.eos) += 1.1f;
        }
        const std::vector<std::string> src = {"a", "b", "c", "d", "e", "f", "g", "h"};
        const std::vector<std::string> tgt = {"w", "x", "y", "z", "v", "u", "a", "b"};
        save_model(tmp("model.safetensors"), m,
                   {{kSrcVocabKey, Vocab::from_pieces(src).to_json()},
                    {kTgtVocabKey, Vocab::from_pieces(tgt).to_json()},
                    {kSrcTokenizerKey, Tokenizer::word().to_string()},
                    {kTgtTokenizerKey, Tokenizer::word().to_string()}});
        test::write_lines(tmp("input.txt"), kInputs);
    }
    static std::string model() { return tmp("model.safetensors"); }
    static std::string run(const std::string& flags, const std::string& name) {
        const std::string out = tmp(name);
        EXPECT_EQ(sh(kNazarBin + " translate --model " + model() + " --max-length-ratio 4 " +
                     flags + " < " + tmp("input.txt") + " > " + out + " 2> " + out + ".err"),
                  0)
            << flags << ": " << slurp(out + ".err");
        return out;
    }
};

TEST_F(ConstraintsCli, IncludeAndExcludePhrasesHoldForEveryHypothesis) {
    const std::vector<std::string> cons = {R"({"include": ["x y"], "exclude": ["w"]})",
                                           "",
                                           R"(["z", "v u"])",
                                           R"({"exclude": ["x", "y"]})",
                                           "{}",
                                           R"({"include": ["a b"]})",
                                           R"(null)"};
    test::write_lines(tmp("cons.jsonl"), cons);
    const auto plain = read_lines(run("--beam 6", "plain.txt"));
    const auto out = read_lines(run("--beam 6 --constraints " + tmp("cons.jsonl"), "cons.txt"));
    ASSERT_EQ(out.size(), kInputs.size());
    EXPECT_TRUE(has_word_phrase(out[0], "x y")) << out[0];
    EXPECT_FALSE(has_word_phrase(out[0], "w")) << out[0];
    EXPECT_TRUE(has_word_phrase(out[2], "z") && has_word_phrase(out[2], "v u")) << out[2];
    EXPECT_FALSE(has_word_phrase(out[3], "x") || has_word_phrase(out[3], "y")) << out[3];
    EXPECT_TRUE(has_word_phrase(out[5], "a b")) << out[5];
    for (const int i : {1, 4, 6}) EXPECT_EQ(out[i], plain[i]) << "line " << i + 1;
    EXPECT_NE(slurp(tmp("cons.txt.err")).find("4 include phrases, 4 placed, 0 not placed"),
              std::string::npos)
        << slurp(tmp("cons.txt.err"));
    // n-best: every hypothesis
    const auto nbest =
        read_lines(run("--beam 6 --n-best 4 --constraints " + tmp("cons.jsonl"), "nbest.txt"));
    int lines0 = 0;
    for (const std::string& l : nbest) {
        if (l.rfind("0 ||| ", 0) != 0) continue;
        ++lines0;
        const std::string text = l.substr(6, l.find(" ||| ", 6) - 6);
        EXPECT_TRUE(has_word_phrase(text, "x y")) << l;
        EXPECT_FALSE(has_word_phrase(text, "w")) << l;
    }
    EXPECT_GE(lines0, 2);
    // the API gives the same as the CLI
    const Translator tr(model());
    std::vector<TextConstraints> tc(kInputs.size());
    tc[0] = {.include = {"x y"}, .exclude = {"w"}};
    tc[2] = {.include = {"z", "v u"}, .exclude = {}};
    tc[3] = {.include = {}, .exclude = {"x", "y"}};
    tc[5] = {.include = {"a b"}, .exclude = {}};
    const auto api =
        tr.translate(kInputs, {.beam_size = 6, .max_length_ratio = 4.0f, .constraints = tc});
    for (std::size_t i = 0; i < kInputs.size(); ++i) {
        EXPECT_EQ(api[i].hypotheses[0].text, out[i]) << i;
        EXPECT_TRUE(api[i].unmet.empty()) << i;
        EXPECT_TRUE(api[i].hypotheses[0].constraints_met) << i;
    }
}

TEST_F(ConstraintsCli, ProtectedSpansAreCopiedOrReported) {
    // "a" and "b" are target words too; "c" is not: it cannot be placed and is reported
    const auto out = read_lines(run(R"(--beam 5 --protect-regex '\b[abc]\b')", "protect.txt"));
    const std::string err = slurp(tmp("protect.txt.err"));
    for (std::size_t i = 0; i < kInputs.size(); ++i)
        for (const char* w : {"a", "b"})
            if (has_word_phrase(kInputs[i], w)) {
                EXPECT_TRUE(has_word_phrase(out[i], w)) << i;
            }
    EXPECT_NE(err.find("line 1: not placed: 'c'"), std::string::npos) << err;
    EXPECT_NE(err.find("line 5: not placed: 'c'"), std::string::npos) << err;
    EXPECT_NE(err.find("7 include phrases, 5 placed, 2 not placed"), std::string::npos) << err;
}

TEST_F(ConstraintsCli, ShortlistsAreLearnedAndUsed) {
    // "a".."d" always with "w".."z"
    test::write_lines(tmp("train.tsv"),
                      {"a b\tw x", "c d\ty z", "a c\tw y", "b d\tx z", "a\tw", "d\tz"});
    ASSERT_EQ(sh(kNazarBin + " shortlist --model " + model() + " --train " + tmp("train.tsv") +
                 " -o " + tmp("sl.tsv") + " --keep 2 2> " + tmp("sl.err")),
              0)
        << slurp(tmp("sl.err"));
    const std::string table = slurp(tmp("sl.tsv"));
    EXPECT_EQ(table.rfind("#nazar-shortlist 1\n", 0), 0u) << table;
    EXPECT_NE(table.find("a\tw\t1\n"), std::string::npos) << table;
    const auto out = read_lines(
        run("--beam 4 --shortlist " + tmp("sl.tsv") + " --shortlist-frequent 0", "sl.txt"));
    ASSERT_EQ(out.size(), kInputs.size());
    const std::set<std::string> from_a_to_d = {"w", "x", "y", "z", "<unk>"};
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::istringstream words(out[i]);
        for (std::string w; words >> w;) EXPECT_TRUE(from_a_to_d.count(w)) << i << ": " << out[i];
    }
    // constraint tokens join the shortlist
    test::write_lines(tmp("cons_sl.jsonl"), {R"(["v u"])", "", "", "", "", "", ""});
    const auto with = read_lines(
        run("--beam 4 --shortlist " + tmp("sl.tsv") + " --constraints " + tmp("cons_sl.jsonl"),
            "sl_cons.txt"));
    EXPECT_TRUE(has_word_phrase(with[0], "v u")) << with[0];
    EXPECT_EQ(sh(kNazarBin + " translate --model " + model() + " --model " + model() +
                 " --shortlist " + tmp("sl.tsv") + " < /dev/null 2> /dev/null"),
              2);
    EXPECT_EQ(sh(kNazarBin + " translate --model " + model() + " --shortlist " + tmp("none.tsv") +
                 " < " + tmp("input.txt") + " > /dev/null 2> " + tmp("none.err")),
              1);
    EXPECT_NE(slurp(tmp("none.err")).find("none.tsv"), std::string::npos);
}

TEST_F(ConstraintsCli, MalformedConstraintFilesAreUsageErrors) {
    const auto fails = [&](const std::vector<std::string>& lines, const std::string& why) {
        test::write_lines(tmp("bad.jsonl"), lines);
        const int rc =
            sh(kNazarBin + " translate --model " + model() + " --constraints " + tmp("bad.jsonl") +
               " < " + tmp("input.txt") + " > /dev/null 2> " + tmp("bad.err"));
        const std::string err = slurp(tmp("bad.err"));
        EXPECT_EQ(rc, 2) << err;
        EXPECT_NE(err.find(why), std::string::npos) << err;
    };
    std::vector<std::string> seven(kInputs.size(), "");
    auto bad = seven;
    bad[2] = "{\"include\": [\"x\"";
    fails(bad, tmp("bad.jsonl") + ":3: not JSON");
    bad = seven;
    bad[1] = R"({"include": "x"})";
    fails(bad, ":2: 'include' must be a list of strings");
    bad[1] = R"({"include": [""]})";
    fails(bad, ":2: 'include' must hold non-empty strings");
    bad[1] = R"({"require": ["x"]})";
    fails(bad, ":2: unknown field 'require'");
    bad[1] = std::string(30000, '[') + std::string(30000, ']');
    fails(bad, ":2: constraints: nesting deeper than 32 levels");
    bad[1] = "42";
    fails(bad, ":2: expected {\"include\"");
    fails({"", ""}, "ends at line 2, the input has more lines");
    auto more = seven;
    more.push_back("");
    fails(more, "has more lines than the input");
    EXPECT_EQ(sh(kNazarBin + " translate --model " + model() + " --protect-regex '(' < " +
                 tmp("input.txt") + " > /dev/null 2> " + tmp("re.err")),
              2);
    EXPECT_NE(slurp(tmp("re.err")).find("protect expression '(' does not compile"),
              std::string::npos);
}

}  // namespace
}  // namespace test_constraints_cli
}  // namespace nazar
