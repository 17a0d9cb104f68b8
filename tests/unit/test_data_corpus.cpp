// Corpus loading (nazar/data/corpus.h, pipeline.h): each filter rule with its count in the
// summary line, vocabulary building from kept pairs, shared/separate vocabularies, exact
// duplicate detection, SentencePiece end to end, and the real l10n dev/test sets.
#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/data/corpus.h"
#include "nazar/data/pipeline.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

namespace test_data_corpus {

using namespace nazar;
namespace fs = std::filesystem;

namespace {

struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text) {
        path = (fs::temp_directory_path() /
                ("nazar_corpus_" + std::to_string(::getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".tsv"))
                   .string();
        std::ofstream(path, std::ios::binary) << text;
    }
    ~TempFile() { fs::remove(path); }
};

const LoadOptions kQuiet{.print_summary = false};

LoadOptions quiet(FilterOptions f, bool skip = false) {
    return {.filter = f, .skip_bad_lines = skip, .print_summary = false};
}

Corpus load_words(const std::string& path, const LoadOptions& o, Vocab& sv, Vocab& tv,
                  LoadSummary& s, bool shared = false) {
    return load_corpus_building_vocabs({.tsv = path}, Tokenizer::word(), Tokenizer::word(),
                                       {.shared = shared}, o, sv, tv, &s);
}

std::string decode(const Vocab& v, std::span<const int32_t> ids) {
    return v.decode(ids, Tokenizer::word());
}

// The real l10n English->French dev/test sets are not committed (the translations are under
// their packages' licences, for development only). They are read from $NAZAR_L10N_DATA when
// set, else from ../shared/data/l10n-en-fr beside the source tree (docs/data.md).
fs::path l10n_dir() {
    if (const char* env = std::getenv("NAZAR_L10N_DATA"); env != nullptr && *env != '\0')
        return env;
    return (fs::path(NAZAR_SOURCE_DIR) / ".." / "shared" / "data" / "l10n-en-fr")
        .lexically_normal();
}

}  // namespace

TEST(DataCorpus, KeepsEverythingWithoutFilters) {
    TempFile f("open the file\touvrir le fichier\nsave\tenregistrer\n");
    Vocab sv, tv;
    LoadSummary s;
    const Corpus c = load_words(f.path, kQuiet, sv, tv, s);
    ASSERT_EQ(c.size(), 2);
    EXPECT_EQ(c.src_length(0), 3);
    EXPECT_EQ(c.tgt_length(0), 3);
    EXPECT_EQ(decode(sv, c.src(0)), "open the file");
    EXPECT_EQ(decode(tv, c.tgt(1)), "enregistrer");
    EXPECT_EQ(s.read, 2);
    EXPECT_EQ(s.kept, 2);
    EXPECT_EQ(s.src_tokens, 4);
    EXPECT_EQ(s.tgt_tokens, 4);
    EXPECT_EQ(s.str(),
              fs::path(f.path).filename().string() + ": 2 pairs read, 2 kept; dropped: none");
    // Separate vocabularies: "le" only on the target side.
    EXPECT_EQ(sv.id("le"), Vocab::unk);
    EXPECT_NE(tv.id("le"), Vocab::unk);
    // Contiguous storage: one id array per side, offsets, nothing else.
    EXPECT_EQ(c.memory_bytes(), (4 + 4) * sizeof(int32_t) + (3 + 3) * sizeof(int64_t));
}

TEST(DataCorpus, EachFilterRuleIsCountedAndNamed) {
    TempFile f(
        "a b\tc d\n"        // kept
        "\tvide\n"          // empty source
        "a b c d e f\tx\n"  // too long (> 5) and ratio 6: counted once, as too long
        "a b c d\tx\n"      // ratio 4 > 3
        "a b\tc d\n"        // duplicate of line 1
        "a  b\tc d\n"       // duplicate too: same tokens
        "a b\tc e\n"        // kept: different target
        "no tab\n"          // bad line
        "x\t\n");           // empty target
    Vocab sv, tv;
    LoadSummary s;
    const Corpus c = load_words(
        f.path, quiet({.max_length = 5, .max_length_ratio = 3, .drop_duplicates = true}, true), sv,
        tv, s);
    EXPECT_EQ(c.size(), 2);
    EXPECT_EQ(s.read, 9);
    EXPECT_EQ(s.kept, 2);
    EXPECT_EQ(s.empty, 2);
    EXPECT_EQ(s.too_long, 1);
    EXPECT_EQ(s.ratio, 1);
    EXPECT_EQ(s.duplicate, 2);
    EXPECT_EQ(s.bad.wrong_tabs, 1);
    EXPECT_EQ(s.read, s.kept + s.dropped());
    EXPECT_EQ(s.str(),
              fs::path(f.path).filename().string() +
                  ": 9 pairs read, 2 kept; dropped: 1 without exactly one tab, 2 empty side, "
                  "1 too long (> 5 tokens), 1 length ratio > 3, 2 duplicates");
    // Vocabulary counts come from kept pairs only: "f" and "vide" appear only in dropped ones.
    EXPECT_EQ(sv.id("f"), Vocab::unk);
    EXPECT_EQ(tv.id("vide"), Vocab::unk);
    EXPECT_EQ(sv.size(), 4 + 2);
    EXPECT_EQ(tv.size(), 4 + 3);
}

// The references of validation: the target line of each kept pair as read, aligned with the
// corpus (dropped pairs leave no line), with words the vocabulary lacks still in them.
TEST(DataCorpus, TargetTextOfKeptPairsAsRead) {
    TempFile f(
        "a b\tc  d\n"  // kept, the double space as read
        "\tvide\n"     // empty source: dropped
        "b a\tzz\n"    // kept; "zz" is below min_freq 2: <unk> in the ids, not in the text
        "a a\tc d\n");
    Vocab sv, tv;
    LoadSummary s;
    std::vector<std::string> text;
    LoadOptions o = kQuiet;
    o.tgt_text = &text;
    const Corpus c =
        load_corpus_building_vocabs({.tsv = f.path}, Tokenizer::word(), Tokenizer::word(),
                                    {.tgt = {.min_freq = 2}}, o, sv, tv, &s);
    ASSERT_EQ(c.size(), 3);
    EXPECT_EQ(text, (std::vector<std::string>{"c  d", "zz", "c d"}));
    EXPECT_EQ(decode(tv, c.tgt(1)), "<unk>");
}

TEST(DataCorpus, LimitsAreInclusiveAndRatioIsSymmetric) {
    TempFile f(
        "a b c\tx y z\n"  // length 3 == max_length: kept
        "a\tx y\n"        // ratio 2 == max: kept
        "a b c\tx\n"      // ratio 3 > 2 (source longer)
        "a\tx y z\n");    // ratio 3 > 2 (target longer)
    Vocab sv, tv;
    LoadSummary s;
    const Corpus c = load_words(f.path, quiet({.max_length = 3, .max_length_ratio = 2}), sv, tv, s);
    EXPECT_EQ(c.size(), 2);
    EXPECT_EQ(s.ratio, 2);
    EXPECT_EQ(s.too_long, 0);
}

TEST(DataCorpus, EmptySidesCanBeKept) {
    TempFile f("\tvide\na\tb\n");
    Vocab sv, tv;
    LoadSummary s;
    const Corpus c =
        load_words(f.path, quiet({.max_length_ratio = 2, .drop_empty = false}), sv, tv, s);
    EXPECT_EQ(c.size(), 2);
    EXPECT_EQ(c.src_length(0), 0);
    EXPECT_EQ(s.str().substr(s.str().find(':')), ": 2 pairs read, 2 kept; dropped: none");
}

TEST(DataCorpus, DuplicatesNeedIdenticalTokensNotJustEqualIds) {
    // With a fixed vocabulary both "x" and "y" are <unk>; the pairs differ, so neither is dropped.
    TempFile f("a x\tb\na y\tb\na x\tb\n");
    const Vocab v = Vocab::from_pieces(std::vector<std::string>{"a", "b"});
    LoadSummary s;
    const Corpus c = load_corpus({.tsv = f.path}, Tokenizer::word(), Tokenizer::word(), v, v,
                                 quiet({.drop_duplicates = true}), &s);
    EXPECT_EQ(c.size(), 3);
    EXPECT_EQ(s.duplicate, 0);
    EXPECT_EQ(s.src_unk, 3);
    EXPECT_EQ(s.tgt_unk, 0);
    // Building the vocabulary, the same text is compared exactly and the third line goes.
    Vocab sv, tv;
    const Corpus d = load_words(f.path, quiet({.drop_duplicates = true}), sv, tv, s);
    EXPECT_EQ(d.size(), 2);
    EXPECT_EQ(s.duplicate, 1);
}

TEST(DataCorpus, SharedVocabularyAndMinFreq) {
    TempFile f("le chat\tthe cat\nle chien\tthe dog\nle\tthe\n");
    Vocab sv, tv;
    LoadSummary s;
    const Corpus c =
        load_corpus_building_vocabs({.tsv = f.path}, Tokenizer::word(), Tokenizer::word(),
                                    {.src = {.min_freq = 2}, .shared = true}, kQuiet, sv, tv, &s);
    EXPECT_TRUE(sv == tv);
    EXPECT_EQ(sv.size(), 4 + 2);  // "le" and "the" (3 each); the rest once
    EXPECT_EQ(sv.id("le"), 4);    // ties by bytes: "le" < "the"
    EXPECT_EQ(sv.id("the"), 5);
    EXPECT_EQ(s.src_unk, 2);  // chat, chien
    EXPECT_EQ(s.tgt_unk, 2);  // cat, dog
    EXPECT_EQ(c.src(0)[1], Vocab::unk);
    // A shared vocabulary needs one tokenizer.
    EXPECT_THROW(
        load_corpus_building_vocabs({.tsv = f.path}, Tokenizer::word(), Tokenizer::character(),
                                    {.shared = true}, kQuiet, sv, tv),
        Error);
}

TEST(DataCorpus, CharTokensRoundTripThroughIds) {
    TempFile f("naïve  café\tnaïf 日本\n");
    Vocab sv, tv;
    const Corpus c = load_corpus_building_vocabs({.tsv = f.path}, Tokenizer::character(),
                                                 Tokenizer::character(), {}, kQuiet, sv, tv);
    EXPECT_EQ(c.src_length(0), 11);
    EXPECT_EQ(sv.decode(c.src(0), Tokenizer::character()), "naïve  café");
    EXPECT_EQ(tv.decode(c.tgt(0), Tokenizer::character()), "naïf 日本");
}

TEST(DataCorpus, SentencePieceEndToEndWithSerialisedTokenizers) {
    std::string text;
    const std::vector<std::string> en = {"open the file", "save the file", "close the window",
                                         "read the manual"};
    const std::vector<std::string> fr = {"ouvrir le fichier", "enregistrer le fichier",
                                         "fermer la fenêtre", "lire le manuel"};
    for (int i = 0; i < 400; ++i)
        text +=
            en[i % 4] + " " + std::to_string(i) + "\t" + fr[i % 4] + " " + std::to_string(i) + "\n";
    TempFile f(text);
    const TrainingData d = prepare_training_data(
        {.tsv = f.path}, {.src_tokenizer = {.kind = TokenizerKind::spm, .spm = {.vocab_size = 300}},
                          .shared_vocab = true,
                          .load = {.filter = {.max_length = 50}, .print_summary = false}});
    EXPECT_EQ(d.summary.kept, 400);
    EXPECT_TRUE(d.src_vocab == d.tgt_vocab);
    EXPECT_EQ(d.src_tokenizer.spm_model_proto(), d.tgt_tokenizer.spm_model_proto());
    EXPECT_EQ(d.summary.src_unk + d.summary.tgt_unk, 0);
    EXPECT_EQ(d.src_vocab.decode(d.corpus.src(5), d.src_tokenizer), "save the file 5");
    EXPECT_EQ(d.tgt_vocab.decode(d.corpus.tgt(6), d.tgt_tokenizer), "fermer la fenêtre 6");

    // What the model file stores is enough to rebuild identical ids.
    const Tokenizer tok = Tokenizer::from_string(d.src_tokenizer.to_string());
    const Vocab vocab = Vocab::from_json(d.src_vocab.to_json());
    const Corpus again = load_corpus({.tsv = f.path}, tok, tok, vocab, vocab, kQuiet);
    ASSERT_EQ(again.size(), d.corpus.size());
    for (int64_t i = 0; i < again.size(); ++i) {
        ASSERT_TRUE(std::ranges::equal(again.src(i), d.corpus.src(i)));
        ASSERT_TRUE(std::ranges::equal(again.tgt(i), d.corpus.tgt(i)));
    }
    const auto ids = encode_line("close the file", tok, vocab);
    EXPECT_EQ(vocab.decode(ids, tok), "close the file");
    EXPECT_THROW(encode_line("bad \xFF byte", tok, vocab, "<stdin>:3"), Error);
}

TEST(DataCorpus, SeparateSentencePieceModelsPerSide) {
    std::string text;
    for (int i = 0; i < 300; ++i)
        text += "source words " + std::to_string(i % 17) + "\tmots cibles " +
                std::to_string(i % 13) + "\n";
    TempFile f(text);
    const TrainingData d = prepare_training_data(
        {.tsv = f.path},
        {.src_tokenizer = {.kind = TokenizerKind::spm, .spm = {.vocab_size = 280}},
         .tgt_tokenizer = {.kind = TokenizerKind::spm,
                           .spm = {.vocab_size = 290, .model_type = SpmModelType::bpe}},
         .load = {.print_summary = false}});
    EXPECT_NE(d.src_tokenizer.spm_model_proto(), d.tgt_tokenizer.spm_model_proto());
    EXPECT_EQ(d.tgt_vocab.decode(d.corpus.tgt(20), d.tgt_tokenizer), "mots cibles 7");
    EXPECT_EQ(d.src_vocab.id("▁mots"), Vocab::unk);
}

// The real, messy localisation data: nothing may be dropped without filters, and with the
// filters a training run would use, only the counted reasons drop pairs.
TEST(DataCorpus, RealLocalisationDevAndTestSets) {
    const fs::path dir = l10n_dir();
    if (!fs::exists(dir / "dev.tsv"))
        GTEST_SKIP() << "l10n data not found: no " << (dir / "dev.tsv").string()
                     << " (set NAZAR_L10N_DATA to the folder holding dev.tsv and test.tsv)";
    for (const char* name : {"dev.tsv", "test.tsv"}) {
        const std::string path = (dir / name).string();
        for (const Tokenizer& tok : {Tokenizer::word(), Tokenizer::character()}) {
            Vocab sv, tv;
            LoadSummary s;
            const Corpus c =
                load_corpus_building_vocabs({.tsv = path}, tok, tok, {}, kQuiet, sv, tv, &s);
            EXPECT_EQ(s.read, std::string(name) == "dev.tsv" ? 1179 : 2236);
            EXPECT_EQ(s.kept, s.read) << s.str();
            EXPECT_EQ(s.str(), fmt::format("{}: {} pairs read, {} kept; dropped: none", name,
                                           thousands(s.read), thousands(s.read)));
            if (tok.kind() == TokenizerKind::character) {
                // Char ids decode to the exact line.
                std::ifstream in(path);
                std::string line;
                for (int64_t i = 0; i < 50 && std::getline(in, line); ++i)
                    EXPECT_EQ(sv.decode(c.src(i), tok) + "\t" + tv.decode(c.tgt(i), tok), line);
            }
        }
    }
}

TEST(DataCorpus, SameIdsWhateverTheThreadCount) {
    // Tokenization runs in parallel blocks of 4,096 pairs; storage order must not change.
    std::string text;
    for (int i = 0; i < 10000; ++i)
        text +=
            fmt::format("w{} x{} y{}\tz{} {}\n", i % 97, i % 13, i, i % 31, i % 7 ? "a" : "b c");
    TempFile f(text);
    auto load = [&](int threads) {
        set_num_threads(threads);
        Vocab sv, tv;
        LoadSummary s;
        Corpus c = load_words(f.path, quiet({.drop_duplicates = true}), sv, tv, s);
        return std::make_tuple(std::move(c), sv.to_json(), tv.to_json());
    };
    const auto [c1, s1, t1] = load(1);
    const auto [c3, s3, t3] = load(3);
    set_num_threads(0);
    EXPECT_EQ(s1, s3);
    EXPECT_EQ(t1, t3);
    ASSERT_EQ(c1.size(), c3.size());
    for (int64_t i = 0; i < c1.size(); ++i) {
        ASSERT_TRUE(std::ranges::equal(c1.src(i), c3.src(i))) << i;
        ASSERT_TRUE(std::ranges::equal(c1.tgt(i), c3.tgt(i))) << i;
    }
}

}  // namespace test_data_corpus
