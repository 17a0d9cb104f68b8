// The training pairs' alignments (nazar/data/alignment_file.h): every kept pair gets its own
// line's links through filtering (empty, too long, duplicates, skipped bad lines), and batches
// find them by Batch::index through shuffling and bucketing; bad input is an Error naming
// file:line (malformed link, index outside the pair, too few / too many lines).
#include "nazar/core/check.h"
#include "nazar/data/alignment_file.h"
#include "nazar/data/batcher.h"
#include "nazar/data/corpus.h"
#include "tests/common/test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace test_data_alignment {

using namespace nazar;

namespace {

void write(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n";
}

struct Loaded {
    Corpus corpus;
    std::vector<int64_t> kept;
    int64_t read = 0;
    Vocab sv, tv;
};

Loaded load(const std::string& tsv, int max_length = 6, bool skip_bad = false) {
    Loaded l;
    LoadSummary s;
    l.corpus =
        load_corpus_building_vocabs({.tsv = tsv}, Tokenizer::word(), Tokenizer::word(), {},
                                    {.filter = {.max_length = max_length, .drop_duplicates = true},
                                     .skip_bad_lines = skip_bad,
                                     .print_summary = false,
                                     .kept_lines = &l.kept},
                                    l.sv, l.tv, &s);
    l.read = s.read;
    return l;
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

// Pair k of the file (line k + 1) has source "s<k> x ..." of n_k words and target "t<k> ..." and
// its links encode k: (0, 0) and (n_src − 1, k mod n_tgt). Lines 3 (too long), 6 (empty
// target), 8 (a duplicate of line 2) and 10 (no tab, skipped) are dropped.
TEST(DataAlignment, PairedThroughFiltersShuffleAndBuckets) {
    const std::string dir = test::fresh_temp_dir("align");
    std::vector<std::string> tsv, aln;
    for (int k = 0; k < 40; ++k) {
        const int ns = 1 + k % 5, nt = 1 + (k * 7) % 4;
        // fmt, not "s" + std::to_string(k): gcc 12 reports a false -Wrestrict on a literal plus a
        // temporary std::string once enough is inlined around it (the test programs' unity
        // batches).
        std::string src = fmt::format("s{}", k), tgt = fmt::format("t{}", k);
        for (int i = 1; i < ns; ++i) src += " x" + std::to_string(i);
        for (int j = 1; j < nt; ++j) tgt += " y" + std::to_string(j);
        if (k == 2) src += " long long long long long long";
        if (k == 5) tgt = "";
        if (k == 9) {
            tsv.push_back("no tab here");
            aln.push_back("0-0");
            continue;
        }
        tsv.push_back(src + "\t" + tgt);
        aln.push_back(fmt::format("0-0 {}?{}", ns - 1, k % nt));
    }
    tsv[7] = tsv[1];  // line 8: a duplicate of line 2
    aln[7] = aln[1];
    write(dir + "/train.tsv", tsv);
    write(dir + "/train.align", aln);
    Loaded l = load(dir + "/train.tsv", 6, true);
    ASSERT_EQ(l.read, 40);
    ASSERT_EQ(l.corpus.size(), 36);
    EXPECT_EQ(l.kept[0], 1);
    EXPECT_EQ(l.kept[2], 4);  // lines 3 dropped
    const CorpusAlignments a =
        CorpusAlignments::read(dir + "/train.align", l.corpus, l.kept, l.read, "train.tsv");
    ASSERT_EQ(a.size(), 36);
    for (const int width : {1, 0}) {
        Batcher batcher(
            l.corpus,
            {.batch_size = 5, .bucket = true, .bucket_width = width, .shuffle = true, .seed = 3});
        int64_t rows = 0;
        Batch b;
        for (int64_t n = 0; n < batcher.num_batches(); ++n) {
            batcher.next(b);
            for (int r = 0; r < b.B; ++r, ++rows) {
                const int64_t pair = b.index[r];
                // the pair's first source word names its line: s<k> is line k + 1
                const std::string first(l.sv.piece(b.src_at(r, 0)));
                const int k = std::stoi(first.substr(1));
                EXPECT_EQ(l.kept[pair], k + 1);
                const auto links = a.links(pair);
                ASSERT_EQ(links.size(),
                          b.src_lengths[r] == 1 && k % (b.tgt_lengths[r] - 1) == 0 ? 1u : 2u);
                EXPECT_EQ(links[0].src, 0);
                EXPECT_EQ(links[0].tgt, 0);
                EXPECT_EQ(links.back().src, b.src_lengths[r] - 1);
                EXPECT_EQ(links.back().tgt, k % (b.tgt_lengths[r] - 1));
            }
        }
        EXPECT_EQ(rows, 36);
    }
}

TEST(DataAlignment, ParseLine) {
    const auto v = parse_alignment_line("  0-1\t2?0 10-3 ", "f:1");
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[1].src, 2);
    EXPECT_EQ(v[1].tgt, 0);
    EXPECT_EQ(v[2].src, 10);
    EXPECT_TRUE(parse_alignment_line("", "f:1").empty());
    for (const char* bad : {"0-", "-1", "a-b", "1:2", "1-2-3", "0--1", "1-2x"})
        EXPECT_NE(message_of([&] { parse_alignment_line(bad, "f.align:7"); }).find("f.align:7"),
                  std::string::npos)
            << bad;
}

TEST(DataAlignment, SortsAndDeduplicates) {
    CorpusAlignments a;
    a.add({{2, 1}, {0, 1}, {1, 0}, {0, 1}});
    const auto l = a.links(0);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0].tgt, 0);
    EXPECT_EQ(l[1].src, 0);
    EXPECT_EQ(l[2].src, 2);
}

TEST(DataAlignment, BadInputNamesFileAndLine) {
    const std::string dir = test::fresh_temp_dir("align-bad");
    write(dir + "/t.tsv", {"a b c\tx y", "d e\tz", "f\tw v u"});
    Loaded l = load(dir + "/t.tsv");
    auto read = [&](const std::vector<std::string>& lines) {
        write(dir + "/t.align", lines);
        return message_of(
            [&] { CorpusAlignments::read(dir + "/t.align", l.corpus, l.kept, l.read, "t.tsv"); });
    };
    EXPECT_EQ(read({"0-0 2-1", "", "0-2"}), "(no error)");
    std::string m = read({"0-0 2-1", "1-1", "0-2"});  // target 1 of a 1-target pair
    EXPECT_NE(m.find("t.align:2: link 1-1 is outside"), std::string::npos) << m;
    m = read({"0-0 3-1", "", ""});  // source 3 of a 3-word source
    EXPECT_NE(m.find("t.align:1:"), std::string::npos) << m;
    m = read({"0-0", "0-0 x", ""});
    EXPECT_NE(m.find("t.align:2: bad alignment link 'x'"), std::string::npos) << m;
    // a quoted link is escaped: no raw byte of a Latin-1 or binary line reaches the terminal
    m = read({"0-0", "0-0 1\xff-\x1b[2J\xc3", ""});
    EXPECT_NE(m.find("t.align:2: bad alignment link '1\\xff-\\x1b[2J\\xc3'"), std::string::npos)
        << m;
    m = read({"0-0", ""});
    EXPECT_NE(m.find("2 alignment lines, but the training data t.tsv has 3"), std::string::npos)
        << m;
    m = read({"0-0", "", "", "0-0"});
    EXPECT_NE(m.find("t.align:4: more alignment lines than the 3 lines"), std::string::npos) << m;
}

}  // namespace test_data_alignment
