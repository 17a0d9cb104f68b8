// Hostile input to the readers and option checks (audit items 1, 8, 10, 15, 17; the table in
// docs/reliability.md). Each test reproduces a reported failure and fails on the code before
// its fix: a stack overflow on deep JSON, an unbounded read of /dev/zero, a model file's bad
// configuration reported as a usage error, source locations in messages, unbounded metric
// options, titles cut mid-word.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/text_limits.h"
#include "nazar/core/threads.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/wer.h"
#include "nazar/models/config.h"
#include "nazar/models/model_file.h"
#include "nazar/train/checkpoint.h"
#include "nazar/train/train_config.h"
#include "nazar/viz/heatmap.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace nazar {
namespace test_hostile_io {
namespace {

std::string nested(int depth, char open = '[', char close = ']') {
    return std::string(static_cast<std::size_t>(depth), open) +
           std::string(static_cast<std::size_t>(depth), close);
}

using test::error_of;  // tests/common/test_util.h

bool throws_usage(const std::function<void()>& f) {
    try {
        f();
    } catch (const UsageError&) {
        return true;
    } catch (const Error&) {
        return false;
    }
    return false;
}

// A message a user reads: one line, short, no "file.cpp:123" source location.
void expect_clean(const std::string& e, std::size_t max_len = 400) {
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_LE(e.size(), max_len) << e;
    EXPECT_FALSE(std::regex_search(e, std::regex(R"([a-z_]+\.(cpp|h):[0-9]+)"))) << e;
}

class TempDir {
public:
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "nazar-hostile-io-XXXXXX");
        path_ = ::mkdtemp(t.data());
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string saved_model(const std::map<std::string, std::string>& extra = {}) {
    Seq2Seq m(test::tiny_config(), 5);
    const std::vector<std::string> pieces = {"a", "b", "c", "d", "e", "f"};  // V = 10
    std::map<std::string, std::string> meta = {
        {kSrcVocabKey, Vocab::from_pieces(pieces).to_json()},
        {kTgtVocabKey, Vocab::from_pieces(pieces).to_json()},
        {kSrcTokenizerKey, Tokenizer::character().to_string()},
        {kTgtTokenizerKey, Tokenizer::character().to_string()}};
    SafeTensors st;
    model_to_safetensors(m, meta, st);
    for (const auto& [k, v] : extra) st.metadata[k] = v;  // nazar.config included
    return serialize_safetensors(st);
}

// ---- item 1: nesting ------------------------------------------------------------------------

TEST(HostileIo, NestingScanCountsOnlyStructure) {
    EXPECT_NO_THROW(check_nesting(nested(kMaxNesting), "x", TextSyntax::json));
    EXPECT_NO_THROW(check_nesting(nested(kMaxNesting, '{', '}'), "x", TextSyntax::json));
    EXPECT_NO_THROW(check_nesting("[\"" + std::string(100000, '[') + "\"]", "x", TextSyntax::json));
    EXPECT_NO_THROW(check_nesting("{\"a\\\"[[[[\": 1}", "x", TextSyntax::json));  // escaped quote
    EXPECT_NO_THROW(check_nesting("a: '[[[['\nb: \"{{{{\" # [[[[[\n", "x", TextSyntax::yaml));
    const std::string e =
        error_of([] { check_nesting(nested(kMaxNesting + 1), "model config", TextSyntax::json); });
    expect_clean(e);
    EXPECT_NE(e.find("model config: nesting deeper than 32 levels"), std::string::npos) << e;
    EXPECT_NE(error_of([] { check_nesting("a: " + nested(33), "c.yaml", TextSyntax::yaml); }), "");
    EXPECT_NE(
        error_of([] { check_nesting(std::string(200, ' ') + "x: 1", "y", TextSyntax::yaml); }), "");
    std::string dashes;  // "- - - ... x": block sequences nested on one line
    for (int i = 0; i < 100; ++i) dashes += "- ";
    EXPECT_NE(error_of([&] { check_nesting(dashes + "x", "y", TextSyntax::yaml); }), "");
}

// `[` x 100000 + `]` x 100000 as nazar.config crashed every command that loads a model
// (a recursive dump() in a check's arguments). Every JSON reader now refuses it first.
TEST(HostileIo, DeeplyNestedJsonInEveryReaderIsOneLine) {
    const std::string deep = nested(100000);
    const std::string deep_obj = "{\"a\":" + nested(100000) + "}";
    for (const char* meta : {kModelConfigKey, kSrcVocabKey}) {
        SCOPED_TRACE(meta);
        const std::string bytes = saved_model({{meta, deep}});
        const std::string e = error_of(
            [&] { (void)model_from_safetensors(parse_safetensors(bytes, "m.safetensors")); });
        expect_clean(e);
        EXPECT_NE(e.find("nesting deeper than"), std::string::npos) << e;
    }
    for (const auto& read : std::vector<std::function<void(const std::string&)>>{
             [](const std::string& s) { (void)model_config_from_string(s); },
             [](const std::string& s) { (void)Vocab::from_json(s); },
             [](const std::string& s) { (void)Tokenizer::from_string(s); },
             [](const std::string& s) { (void)train_state_from_json(s, "ck"); },
             [](const std::string& s) { (void)config_from_json(s, "ck"); }}) {
        for (const std::string& text : {deep, deep_obj}) {
            const std::string e = error_of([&] { read(text); });
            expect_clean(e);
            EXPECT_NE(e.find("nesting deeper than"), std::string::npos) << e;
        }
    }
    // The safetensors header itself.
    std::string header = "{\"x\":" + deep + "}";
    std::string file(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(file.data(), &n, 8);
    file += header;
    const std::string e = error_of([&] { (void)parse_safetensors(file, "h.safetensors"); });
    expect_clean(e);
    EXPECT_NE(e.find("'h.safetensors': header: nesting deeper than"), std::string::npos) << e;
}

TEST(HostileIo, DeeplyNestedYamlIsAUsageError) {
    for (const std::string& yaml : {"hidden_size: " + nested(100000), "model: " + nested(40),
                                    std::string(300, ' ') + "x: 1"}) {
        TrainConfig cfg = TrainConfig::defaults();
        std::string e;
        EXPECT_TRUE(throws_usage([&] { apply_yaml_config(cfg, yaml, "run.yaml"); }));
        e = error_of([&] { apply_yaml_config(cfg, yaml, "run.yaml"); });
        expect_clean(e);
        EXPECT_EQ(e.rfind("run.yaml: ", 0), 0u) << e;
    }
}

// No message quotes more than ~200 bytes of its input.
TEST(HostileIo, MessagesQuoteAtMostAnExcerpt) {
    const std::string big(100000, 'x');
    EXPECT_LE(excerpt(big).size(), kMaxEcho + 20);
    EXPECT_EQ(excerpt("short"), "short");
    EXPECT_EQ(excerpt("a\nb"), "a\\nb");             // escaped as Error escapes it (escape_text)
    EXPECT_EQ(excerpt("ééé", 3), "é... (6 bytes)");  // never half a code point
    const std::string wide = "{\"src_vocab_size\": [\"" + big + "\"]}";
    expect_clean(error_of([&] { (void)model_config_from_string(wide); }), 600);
    expect_clean(error_of([&] { (void)model_config_from_string("{\"a\": \"" + big); }), 600);
    expect_clean(error_of([&] { (void)Vocab::from_json("[\"" + big); }), 600);
    expect_clean(error_of([&] { (void)train_state_from_json("{\"" + big, "ck"); }), 600);
    expect_clean(
        error_of([&] {
            (void)train_state_from_json(
                R"({"step":1,"batches":1,"skipped":0,"epoch":0,"batch":0,"rng":[")" + big + "\"]}",
                "ck");
        }),
        600);
}

// ---- item 8: model files are read only as far as the header justifies ------------------------

TEST(HostileIo, NonRegularModelFilesAreRefusedUnread) {
    TempDir dir;
    const std::string fifo = dir.file("fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/urandom"), fifo}) {
        const std::string e = error_of([&] { (void)load_safetensors(path); });
        expect_clean(e);
        EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
        EXPECT_NE(e.find(path), std::string::npos) << e;
    }
    const std::string e = error_of([&] { (void)load_model(dir.file("")); });
    EXPECT_NE(e.find("is a directory"), std::string::npos) << e;
    EXPECT_EQ(file_problem("/dev/null", false), "is a character device, not a regular file");
    EXPECT_EQ(file_problem("/dev/null", true), "");
    EXPECT_EQ(file_problem(dir.file("none"), true), "does not exist");
    EXPECT_EQ(file_problem(dir.file(""), true), "is a directory, not a file");
}

TEST(HostileIo, TextPassedAsAModelSaysNotAModelFile) {
    TempDir dir;
    write(dir.file("train.tsv"), "hello\tbonjour\nworld\tmonde\n");
    const std::string e = error_of([&] { (void)load_model(dir.file("train.tsv")); });
    expect_clean(e);
    EXPECT_NE(e.find("is not a nazar model file"), std::string::npos) << e;
    EXPECT_NE(e.find("(its first 8 bytes are text: 'hello"), std::string::npos) << e;
    write(dir.file("short"), "abc");
    EXPECT_NE(error_of([&] { (void)load_model(dir.file("short")); }).find("not a nazar model"),
              std::string::npos);
}

// A header length beyond the file is refused after reading 8 bytes: a sparse 64 GB file with a
// bad length costs nothing (reading it whole would take minutes and 64 GB).
TEST(HostileIo, HeaderLengthIsCheckedBeforeTheFileIsRead) {
    TempDir dir;
    const std::string path = dir.file("sparse.safetensors");
    for (const uint64_t n : {kSafetensorsMaxHeader + 1, uint64_t{1} << 62}) {
        std::string head(8, '\0');
        std::memcpy(head.data(), &n, 8);
        write(path, head);
        ASSERT_EQ(::truncate(path.c_str(), int64_t{1} << 36), 0);  // 64 GB of holes after it
        const std::string e = error_of([&] { (void)load_safetensors(path); });
        expect_clean(e);
        EXPECT_NE(e.find("exceeds the"), std::string::npos) << e;
    }
    // Within the limit but beyond a small file.
    std::string head(8, '\0');
    const uint64_t n = 1000;
    std::memcpy(head.data(), &n, 8);
    write(path, head + "{}");
    const std::string e = error_of([&] { (void)load_safetensors(path); });
    expect_clean(e);
    EXPECT_NE(e.find("exceeds the"), std::string::npos) << e;
}

TEST(HostileIo, ConfigFilesAreBounded) {
    TrainConfig cfg = TrainConfig::defaults();
    const std::string e = error_of([&] { apply_yaml_file(cfg, "/dev/zero"); });
    expect_clean(e);
    EXPECT_NE(e.find("larger than the limit"), std::string::npos) << e;
    TempDir dir;
    EXPECT_NE(error_of([&] { apply_yaml_file(cfg, dir.file("")); }).find("is a directory"),
              std::string::npos);
}

// eval --chrf-char-order 100000000 reached 7 GB; the orders are now bounded.
TEST(HostileIo, MetricOptionsAreBounded) {
    const std::vector<std::string> hyps = {"a b c"};
    const std::vector<std::vector<std::string>> refs = {{"a b d"}};
    EXPECT_TRUE(throws_usage([&] { (void)corpus_chrf(hyps, refs, {.char_order = 100000000}); }));
    EXPECT_TRUE(throws_usage([&] { (void)corpus_chrf(hyps, refs, {.word_order = 101}); }));
    EXPECT_NO_THROW((void)corpus_chrf(hyps, refs, {.char_order = kMaxChrfOrder}));
    EXPECT_TRUE(throws_usage([&] {
        BleuOptions o;
        o.max_ngram_order = 100000000;
        (void)corpus_bleu(hyps, refs, o);
    }));
    const std::string e = error_of([&] { (void)corpus_chrf(hyps, refs, {.char_order = 0}); });
    expect_clean(e);
    EXPECT_NE(e.find("[1, 100]"), std::string::npos) << e;
}

// WER on a 2M-word line ran for minutes (4·10^12 cells); it is refused at once, naming the
// segment, and a segment within the limit is still scored.
TEST(HostileIo, WerRefusesSegmentsBeyondTheCellLimit) {
    std::string line;
    line.reserve(4000000);
    for (int i = 0; i < 2000000; ++i) line += (i % 2) ? "a " : "b ";
    const std::vector<std::string> hyps = {"x", line};
    const std::vector<std::vector<std::string>> refs = {{"x", line + "c"}};
    const std::string e = error_of([&] { (void)corpus_wer(hyps, refs); });
    expect_clean(e);
    EXPECT_NE(e.find("segment 2: tokens: 2000000 hypothesis and 2000001 reference"),
              std::string::npos)
        << e;
    EXPECT_TRUE(throws_usage([&] { (void)corpus_wer(hyps, refs); }));
    EXPECT_NO_THROW((void)corpus_error_rate(hyps, refs, ErrorMetric::per));  // bag counts: fine
    const std::vector<std::string> ok = {"a b c"};
    const std::vector<std::vector<std::string>> ok_refs = {{"a c"}};
    EXPECT_EQ(corpus_wer(ok, ok_refs).errors, 1);
}

// ---- item 10 / 15: exit classes and messages --------------------------------------------------

TEST(HostileIo, BadModelConfigIsAnErrorNotAUsageError) {
    const std::string bytes = saved_model({{kModelConfigKey, R"({"src_vocab_size": -4})"}});
    bool usage = true;
    std::string e;
    try {
        (void)model_from_safetensors(parse_safetensors(bytes, "m.safetensors"));
    } catch (const UsageError& err) {
        e = err.what();
    } catch (const Error& err) {
        e = err.what();
        usage = false;
    }
    EXPECT_FALSE(usage) << e;
    expect_clean(e);
    EXPECT_EQ(e.rfind("'m.safetensors': nazar.config: ", 0), 0u) << e;
    const std::string kind = R"({"kind": "bogus"})";
    EXPECT_FALSE(throws_usage([&] { (void)Tokenizer::from_string(kind); }));
}

TEST(HostileIo, SourceLocationsStayOutOfMessages) {
    try {
        NZ_CHECK(1 + 1 == 3, "arithmetic is {}", "broken");
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "arithmetic is broken");
        EXPECT_NE(e.where().find("test_hostile_io.cpp:"), std::string::npos) << e.where();
    }
    expect_clean(error_of([] { (void)read_file("/nonexistent/x"); }));
}

TEST(HostileIo, ThreadCountsAreBounded) {
    EXPECT_TRUE(throws_usage([] { set_num_threads(kMaxThreads + 1); }));
    const std::string e = error_of([] { set_num_threads(100000); });
    EXPECT_EQ(e, "threads: 100000 is above the maximum of 1024");
    set_num_threads(1);
}

// ---- item 17 --------------------------------------------------------------------------------

// A vocabulary below SentencePiece's minimum gave SentencePiece's own message about an option
// nazar does not have; now nazar names the minimum for this data, and that minimum trains.
TEST(HostileIo, SpmVocabularyBelowTheMinimumNamesIt) {
    std::vector<std::string> lines;
    for (int i = 0; i < 50; ++i) lines.push_back(fmt::format("abcdefghij klmnop {}", i % 10));
    auto train = [&](int vocab_size) {
        std::size_t k = 0;
        return Tokenizer::train_spm(
            [&](std::string& s) {
                if (k == lines.size()) return false;
                s = lines[k++];
                return true;
            },
            {.vocab_size = vocab_size});
    };
    std::string e;
    try {
        (void)train(8);
        FAIL() << "vocabulary size 8 trained";
    } catch (const UsageError& err) {
        e = err.what();
    }
    expect_clean(e);
    EXPECT_EQ(e.find("character_coverage"), std::string::npos) << e;
    int minimum = 0;
    ASSERT_EQ(std::sscanf(e.c_str(), "spm_vocab_size 8 is below the minimum of %d", &minimum), 1)
        << e;
    EXPECT_GT(minimum, 256) << e;  // byte pieces, the characters, the specials
    EXPECT_NE(e.find(fmt::format("use spm_vocab_size {} or more", minimum)), std::string::npos);
    EXPECT_TRUE(throws_usage([&] { (void)train(minimum - 1); }));
    EXPECT_NO_THROW((void)train(minimum));
}

// Titles fit the canvas and are cut at a word.

TEST(HostileIo, LongSvgTitlesEndAtAWordWithinTheCanvas) {
    viz::Heatmap h;
    h.source = {"a", "b"};
    h.target = {"x", "</s>"};
    h.weights = Tensor(Shape{2, 2});
    std::string words;
    for (int i = 0; i < 60; ++i) words += fmt::format("word{} ", i);
    h.source_text = words;
    h.target_text = words;
    const std::string svg = viz::render_svg(h);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(width="([0-9]+)")re")));
    const int width = std::stoi(m[1]);
    const int max_cps = static_cast<int>((width - 16) / (13 * 0.62));
    const std::regex title(R"re(<text x="8" y="(18|36)"[^>]*>([^<]*)</text>)re");
    int titles = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), title);
         it != std::sregex_iterator(); ++it) {
        const std::string text = (*it)[2];
        ++titles;
        int cps = 0;
        for (unsigned char c : text) cps += (c & 0xC0) != 0x80;
        EXPECT_LE(cps, max_cps) << text;
        ASSERT_GE(text.size(), 4u);
        EXPECT_EQ(text.substr(text.size() - 3), "…") << text;
        // The word before "…" is whole: "wordN" with N one of the words written.
        const std::string body = text.substr(0, text.size() - 3);
        const std::string last = body.substr(body.rfind(' ') + 1);
        EXPECT_TRUE(std::regex_match(last, std::regex("word[0-9]+"))) << text;
        EXPECT_NE(words.find(last + " "), std::string::npos) << text;
    }
    EXPECT_EQ(titles, 2);
}

}  // namespace
}  // namespace test_hostile_io
}  // namespace nazar
