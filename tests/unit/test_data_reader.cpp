// Readers (nazar/data/reader.h): TSV, two files, stdin; plain and gzip; BOM; CRLF; and every
// bad-input case of the issue: wrong tab count, invalid UTF-8, mismatched line counts,
// missing/unreadable file, truncated gzip, empty corpus, --skip-bad-lines.
#include "nazar/core/check.h"
#include "nazar/data/corpus.h"
#include "nazar/data/reader.h"
#include "nazar/data/utf8.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test_data_reader {

using namespace nazar;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path dir;
    TempDir() {
        dir = fs::temp_directory_path() /
              ("nazar_reader_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir);
    }
    ~TempDir() { fs::remove_all(dir); }
    std::string write(const std::string& name, const std::string& bytes) const {
        const auto p = (dir / name).string();
        std::ofstream(p, std::ios::binary) << bytes;
        return p;
    }
    std::string write_gz(const std::string& name, const std::string& bytes) const {
        const auto p = (dir / name).string();
        gzFile f = gzopen(p.c_str(), "wb");
        gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
        gzclose(f);
        return p;
    }
};

std::vector<std::pair<std::string, std::string>> read_all(const CorpusFiles& files,
                                                          bool skip = false,
                                                          BadLines* bad = nullptr) {
    PairReader r(files, skip);
    std::vector<std::pair<std::string, std::string>> out;
    RawPair p;
    while (r.next(p)) out.emplace_back(std::string(p.src), std::string(p.tgt));
    if (bad) *bad = r.bad_lines();
    return out;
}

std::string error_of(const std::function<void()>& f) {
    return test::error_of(f, "(no error)");
}

const std::vector<std::pair<std::string, std::string>> kPairs = {
    {"Hello", "Bonjour"}, {"Open file", "Ouvrir le fichier"}, {"", "vide"}, {"Größe", "Taille ☃"}};

}  // namespace

TEST(DataReader, TsvPlainWithBomCrlfAndNoFinalNewline) {
    TempDir t;
    const auto p = t.write("a.tsv",
                           "\xEF\xBB\xBFHello\tBonjour\r\nOpen file\tOuvrir le fichier\n\tvide\r\n"
                           "Größe\tTaille ☃");
    EXPECT_EQ(read_all({.tsv = p}), kPairs);
}

TEST(DataReader, GzipGivesTheSamePairsAsPlain) {
    TempDir t;
    const std::string text =
        "Hello\tBonjour\nOpen file\tOuvrir le fichier\n\tvide\nGröße\tTaille ☃\n";
    EXPECT_EQ(read_all({.tsv = t.write_gz("a.tsv.gz", "\xEF\xBB\xBF" + text)}), kPairs);
    // Detection is by content, not by name.
    EXPECT_EQ(read_all({.tsv = t.write_gz("gzip-without-suffix", text)}), kPairs);
    EXPECT_EQ(read_all({.tsv = t.write("plain.gz", text)}), kPairs);
}

TEST(DataReader, LinesAcrossBufferBoundariesAndLongLines) {
    // 3 MB of lines (the reader's chunk is 1 MB) plus one 2.5 MB line: buffer moves and growth.
    TempDir t;
    std::string text, expect_long(2'500'000, 'x');
    std::vector<std::pair<std::string, std::string>> want;
    for (int i = 0; i < 150'000; ++i) {
        want.emplace_back(fmt::format("s{}", i), fmt::format("t{}", i * 7));
        text += want.back().first + "\t" + want.back().second + (i % 3 ? "\n" : "\r\n");
        if (i == 70'000) {
            want.emplace_back(expect_long, "long");
            text += expect_long + "\tlong\n";
        }
    }
    EXPECT_EQ(read_all({.tsv = t.write("big.tsv", text)}), want);
    EXPECT_EQ(read_all({.tsv = t.write_gz("big.tsv.gz", text)}), want);
}

TEST(DataReader, TwoLineAlignedFiles) {
    TempDir t;
    const auto src = t.write("a.en", "\xEF\xBB\xBFHello\r\nOpen file\n\nGröße\n");
    const auto tgt = t.write_gz("a.fr.gz", "Bonjour\nOuvrir le fichier\r\nvide\nTaille ☃");
    EXPECT_EQ(read_all({.src = src, .tgt = tgt}), kPairs);
    // Tabs are ordinary characters in two-file corpora.
    EXPECT_EQ(read_all({.src = t.write("b.en", "a\tb\n"), .tgt = t.write("b.fr", "c\n")}),
              (std::vector<std::pair<std::string, std::string>>{{"a\tb", "c"}}));
}

TEST(DataReader, MismatchedLineCountsNameBothFilesAndCounts) {
    TempDir t;
    const auto src = t.write("m.en", "a\nb\nc\nd\n");
    const auto tgt = t.write("m.fr", "a\nb\n");
    const std::string msg = error_of([&] { read_all({.src = src, .tgt = tgt}); });
    EXPECT_NE(msg.find("mismatched line counts: " + src + " has 4 lines, " + tgt + " has 2 lines"),
              std::string::npos)
        << msg;
    const std::string msg2 = error_of([&] { read_all({.src = tgt, .tgt = src}, /*skip=*/true); });
    EXPECT_NE(msg2.find(tgt + " has 2 lines, " + src + " has 4 lines"), std::string::npos) << msg2;
}

TEST(DataReader, WrongTabCountIsAnErrorWithFileAndLine) {
    TempDir t;
    const auto p = t.write("tabs.tsv", "a\tb\nno tab here\nx\ty\tz\n");
    const std::string msg = error_of([&] { read_all({.tsv = p}); });
    EXPECT_NE(msg.find(p + ":2: expected exactly one tab (source<TAB>target), found 0"),
              std::string::npos)
        << msg;
    const auto q = t.write("tabs2.tsv", "a\tb\nx\ty\tz\n");
    const std::string msg2 = error_of([&] { read_all({.tsv = q}); });
    EXPECT_NE(msg2.find(q + ":2: expected exactly one tab (source<TAB>target), found 2"),
              std::string::npos)
        << msg2;
}

TEST(DataReader, InvalidUtf8IsAnErrorWithFileLineAndByte) {
    TempDir t;
    const auto p = t.write("bad.tsv", "ok\tbien\nca\xC3\x28\tfr\n");
    const std::string msg = error_of([&] { read_all({.tsv = p}); });
    EXPECT_NE(msg.find(p + ":2: invalid UTF-8 at byte 3 of the line (0xc3)"), std::string::npos)
        << msg;
    // Two files: the error names the file that holds the bad byte.
    const auto src = t.write("u.en", "a\nb\n");
    const auto tgt = t.write("u.fr", "a\n\xFF\n");
    const std::string msg2 = error_of([&] { read_all({.src = src, .tgt = tgt}); });
    EXPECT_NE(msg2.find(tgt + ":2: invalid UTF-8 at byte 1"), std::string::npos) << msg2;
}

TEST(DataReader, Utf8ValidatorRejectsEveryMalformedForm) {
    EXPECT_TRUE(utf8::is_valid("plain ascii, long enough for the 8-byte path"));
    EXPECT_TRUE(utf8::is_valid("é ☃ 𝄞 日本語 \xEF\xBB\xBF"));
    EXPECT_EQ(utf8::find_invalid("abc\x80"), 3u);           // lone continuation byte
    EXPECT_EQ(utf8::find_invalid("\xC0\xAF"), 0u);          // overlong '/'
    EXPECT_EQ(utf8::find_invalid("\xE0\x80\xAF"), 0u);      // overlong, 3 bytes
    EXPECT_EQ(utf8::find_invalid("ab\xED\xA0\x80"), 2u);    // surrogate U+D800
    EXPECT_EQ(utf8::find_invalid("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
    EXPECT_EQ(utf8::find_invalid("12345678\xE2\x98"), 8u);  // truncated at the end
    EXPECT_EQ(utf8::find_invalid("\xF5\x80\x80\x80"), 0u);  // F5..FF never valid
    EXPECT_EQ(utf8::length("é☃𝄞a"), 4u);
}

TEST(DataReader, MissingUnreadableAndTruncatedFiles) {
    TempDir t;
    const std::string missing = (t.dir / "nope.tsv").string();
    EXPECT_NE(error_of([&] {
                  read_all({.tsv = missing});
              }).find(missing + ": cannot open: No such file or directory"),
              std::string::npos);
    const std::string dir_msg = error_of([&] { read_all({.tsv = t.dir.string()}); });
    EXPECT_NE(dir_msg.find(t.dir.string()), std::string::npos) << dir_msg;
    EXPECT_NE(dir_msg.find("Is a directory"), std::string::npos) << dir_msg;
    // A gzip file cut in the middle is an error, not a silently shorter corpus.
    std::string text;
    for (int i = 0; i < 2000; ++i) text += fmt::format("source {}\ttarget {}\n", i, i * i);
    const auto gz = t.write_gz("full.tsv.gz", text);
    std::ifstream in(gz, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const auto cut = t.write("cut.tsv.gz", bytes.substr(0, bytes.size() / 2));
    const std::string cut_msg = error_of([&] { read_all({.tsv = cut}); });
    EXPECT_NE(cut_msg.find(cut + ":"), std::string::npos) << cut_msg;
    EXPECT_NE(cut_msg.find("truncated gzip"), std::string::npos) << cut_msg;
    // Neither a TSV nor both files given.
    EXPECT_THROW(PairReader({.src = "a"}, false), Error);
    EXPECT_THROW(PairReader({.tsv = "a", .src = "b", .tgt = "c"}, false), Error);
}

TEST(DataReader, SkipBadLinesCountsAndExplains) {
    TempDir t;
    const auto p = t.write("mixed.tsv", "a\tb\nbad\nc\td\te\n\xFF\tx\ne\tf\n");
    BadLines bad;
    const auto pairs = read_all({.tsv = p}, /*skip=*/true, &bad);
    EXPECT_EQ(pairs, (std::vector<std::pair<std::string, std::string>>{{"a", "b"}, {"e", "f"}}));
    EXPECT_EQ(bad.wrong_tabs, 2);
    EXPECT_EQ(bad.invalid_utf8, 1);
    ASSERT_EQ(bad.examples.size(), 3u);
    EXPECT_NE(bad.examples[0].find(p + ":2:"), std::string::npos) << bad.examples[0];
    EXPECT_NE(bad.examples[2].find(p + ":4: invalid UTF-8"), std::string::npos) << bad.examples[2];
}

TEST(DataReader, EmptyCorpusIsAnError) {
    TempDir t;
    const auto p = t.write("empty.tsv", "");
    const std::string msg = error_of([&] {
        load_corpus({.tsv = p}, Tokenizer::word(), Tokenizer::word(), Vocab(), Vocab(),
                    {.print_summary = false});
    });
    EXPECT_NE(msg.find("empty.tsv: empty corpus (no lines)"), std::string::npos) << msg;
    // Only bad lines, skipped: nothing left is an error too, and it says why.
    const auto q = t.write("allbad.tsv", "x\ny\n");
    const std::string msg2 = error_of([&] {
        load_corpus({.tsv = q}, Tokenizer::word(), Tokenizer::word(), Vocab(), Vocab(),
                    {.skip_bad_lines = true, .print_summary = false});
    });
    EXPECT_NE(
        msg2.find(
            "allbad.tsv: no pairs left after filtering (allbad.tsv: 2 pairs read, 0 kept; dropped: "
            "2 without exactly one tab)"),
        std::string::npos)
        << msg2;
}

TEST(DataReader, StdinReadsLikeAFile) {
    TempDir t;
    const auto p = t.write("stdin.txt", "\xEF\xBB\xBFline one\r\nline two\n");
    ASSERT_NE(std::freopen(p.c_str(), "rb", stdin), nullptr);
    LineReader r("-");
    std::string_view line;
    std::vector<std::string> lines;
    while (r.next(line)) lines.emplace_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{"line one", "line two"}));
    EXPECT_EQ(r.line_number(), 2);
}

// ---- audit items 8 and 13: line-length cap, gzip read by the reader itself, pipes ----

TEST(DataReader, LineLongerThanTheCapIsAnErrorNamingIt) {
    TempDir t;
    const std::string ok_line(100, 'a'), long_line(101, 'b');
    const auto p = t.write("cap.txt", ok_line + "\r\n" + ok_line + "\n" + long_line + "\nx\n");
    LineReader r(p, 100);
    std::string_view line;
    ASSERT_TRUE(r.next(line));  // 100 bytes (+ "\r\n") is within the cap
    EXPECT_EQ(line, ok_line);
    ASSERT_TRUE(r.next(line));
    const std::string msg = error_of([&] { r.next(line); });
    EXPECT_NE(msg.find(p + ":3: line longer than 100 bytes"), std::string::npos) << msg;
    // A line far beyond the cap, without a newline: refused once the cap is passed, not after
    // buffering all of it (the buffer stays at its first 1 MiB).
    const auto huge = t.write("huge.txt", "short\n" + std::string(8 << 20, 'z'));
    LineReader h(huge, 1000);
    ASSERT_TRUE(h.next(line));
    const std::string msg2 = error_of([&] { h.next(line); });
    EXPECT_NE(msg2.find(huge + ":2: line longer than 1000 bytes"), std::string::npos) << msg2;
    // The same through gzip, and through PairReader.
    const auto gz = t.write_gz("cap.tsv.gz", "a\tb\n" + std::string(5000, 'c') + "\td\n");
    const std::string msg3 = error_of([&] {
        PairReader pr({.tsv = gz}, false, 1000);
        RawPair pair;
        while (pr.next(pair)) {
        }
    });
    EXPECT_NE(msg3.find(gz + ":2: line longer than 1000 bytes"), std::string::npos) << msg3;
    // No cap (0): any length.
    LineReader u(huge, 0);
    ASSERT_TRUE(u.next(line));
    ASSERT_TRUE(u.next(line));
    EXPECT_EQ(line.size(), std::size_t{8} << 20);
}

TEST(DataReader, GzipMembersTrailingBytesAndCorruption) {
    TempDir t;
    auto gz_bytes = [&](const std::string& text) {
        const auto p = t.write_gz("tmp.gz", text);
        std::ifstream in(p, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    auto lines_of = [](const std::string& path) {
        LineReader r(path);
        std::string_view line;
        std::vector<std::string> out;
        while (r.next(line)) out.emplace_back(line);
        return out;
    };
    // two members (cat a.gz b.gz), then bytes that do not start a member: ignored, as gzread
    const std::string two = gz_bytes("one\ntwo\n") + gz_bytes("three\n");
    EXPECT_EQ(lines_of(t.write("two.gz", two)), (std::vector<std::string>{"one", "two", "three"}));
    EXPECT_EQ(lines_of(t.write("trail.gz", two + "garbage")),
              (std::vector<std::string>{"one", "two", "three"}));
    // a big stream (many inflate calls) equals the plain text
    std::string text;
    for (int i = 0; i < 200000; ++i) text += fmt::format("line {}\n", i * 7);
    const auto big = lines_of(t.write("big.gz", gz_bytes(text)));
    ASSERT_EQ(big.size(), 200000u);
    EXPECT_EQ(big[123456], "line 864192");
    // corrupt data: one line naming the file
    std::string bad = gz_bytes(text);
    for (std::size_t i = 100; i < 200; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    const auto badp = t.write("bad.gz", bad);
    const std::string msg = error_of([&] { lines_of(badp); });
    EXPECT_NE(msg.find(badp + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("read error"), std::string::npos) << msg;
    // a lone 0x1f byte, or 0x1f then something else, is plain text
    EXPECT_EQ(lines_of(t.write("1f.txt", "\x1f")), (std::vector<std::string>{"\x1f"}));
    EXPECT_EQ(lines_of(t.write("1fx.txt", "\x1fx\ny")), (std::vector<std::string>{"\x1fx", "y"}));
}

// A pipe whose writer stays open: each line is returned as soon as it is written, before the
// end of the input (the old reader went through gzread, which waits to fill its buffer). The
// writer closes the pipe after 60 s at the latest, so a reader that waits for the end of the
// input fails the test instead of hanging it.
TEST(DataReader, PipeIsReadLineByLineWhileOpen) {
    for (const bool gzip : {false, true}) {
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        const int saved = ::dup(STDIN_FILENO);
        ASSERT_EQ(::dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
        ::close(fds[0]);
        std::mutex mu;
        std::condition_variable cv;
        bool release = false, closed = false;
        std::thread writer([&] {
            std::unique_lock lock(mu);
            cv.wait_for(lock, std::chrono::seconds(60), [&] { return release; });
            closed = true;
            ::close(fds[1]);
        });
        {
            LineReader r("-");
            std::string_view line;
            if (!gzip) {
                ASSERT_EQ(::write(fds[1], "first\nsecond", 12), 12);
                ASSERT_TRUE(r.next(line));
                EXPECT_EQ(line, "first");
                EXPECT_FALSE(r.ready());  // "second" has no newline yet: next() would wait
                ASSERT_EQ(::write(fds[1], "\n", 1), 1);
                ASSERT_TRUE(r.next(line));
                EXPECT_EQ(line, "second");
            } else {
                // a whole gzip member, then the pipe stays open
                TempDir t;
                const auto p = t.write_gz("m.gz", "zipped\n");
                std::ifstream in(p, std::ios::binary);
                const std::string bytes((std::istreambuf_iterator<char>(in)), {});
                ASSERT_EQ(::write(fds[1], bytes.data(), bytes.size()),
                          static_cast<ssize_t>(bytes.size()));
                ASSERT_TRUE(r.next(line));
                EXPECT_EQ(line, "zipped");
            }
            {
                std::lock_guard lock(mu);
                EXPECT_FALSE(closed) << "the line came only after the end of the input";
                release = true;
            }
            cv.notify_all();
            writer.join();
            EXPECT_FALSE(r.next(line));
        }
        ::dup2(saved, STDIN_FILENO);
        ::close(saved);
    }
}

}  // namespace test_data_reader
