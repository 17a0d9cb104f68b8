// nazar::Error messages are one line (core/check.h): line breaks and control bytes in the text
// (often echoed input) are escaped by the constructor, for every way an error is made.
#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nazar {
namespace test_check {
namespace {

std::string message_of(const std::string& text) {
    return Error(text).what();
}

TEST(Check, CleanMessagesAreUnchanged) {
    EXPECT_EQ(message_of("beam size must be >= 1, got 0"), "beam size must be >= 1, got 0");
    EXPECT_EQ(message_of(""), "");
    // A tab does not end a line (kept); UTF-8 is kept byte for byte.
    EXPECT_EQ(message_of("fields 'a\tb'"), "fields 'a\tb'");
    EXPECT_EQ(message_of("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82"),
              "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x99\x82");
}

TEST(Check, LineBreaksAndControlBytesAreEscaped) {
    EXPECT_EQ(message_of("line 3: 'a\nb'"), "line 3: 'a\\nb'");
    EXPECT_EQ(message_of("a\r\nb\n"), "a\\r\\nb\\n");
    EXPECT_EQ(message_of(std::string("nul \0 here", 10)),
              "nul \\x00 here");                                   // what() is a C string
    EXPECT_EQ(message_of("esc \x1b[31mred"), "esc \\x1b[31mred");  // no terminal escapes
    EXPECT_EQ(message_of("bell \x07 del \x7f vt \x0b ff \x0c"),
              "bell \\x07 del \\x7f vt \\x0b ff \\x0c");
    EXPECT_EQ(message_of("\x01\x1f"), "\\x01\\x1f");
}

// Bytes that are not UTF-8 (a Latin-1 line, a binary file) never reach a terminal raw: each
// becomes \xNN; valid UTF-8 is kept; C1 controls (U+0080..U+009F, CSI U+009B among them)
// become \u00NN.
TEST(Check, BytesThatAreNotUtf8AreEscaped) {
    EXPECT_EQ(message_of("line 2: 'caf\xe9 \xff\xfe'"), "line 2: 'caf\\xe9 \\xff\\xfe'");
    EXPECT_EQ(message_of("\xc3"), "\\xc3");                             // truncated sequence
    EXPECT_EQ(message_of("\xc3\xa9\xc3"), "\xc3\xa9\\xc3");             // é, then a lone lead
    EXPECT_EQ(message_of("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
    EXPECT_EQ(message_of("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
    EXPECT_EQ(message_of("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
    EXPECT_EQ(message_of(std::string("csi \xc2\x9b") + "[31m"), "csi \\u009b[31m");
    EXPECT_EQ(message_of("\xc2\xa0\xf0\x9f\x99\x82\tok"), "\xc2\xa0\xf0\x9f\x99\x82\tok");
    // what an escaped message holds: printable ASCII, tabs and valid UTF-8 only
    std::string all;
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
    const std::string m = message_of(all);
    for (unsigned char c : m) EXPECT_TRUE(c == '\t' || (c >= 0x20 && c < 0x7f)) << int(c);
}

// Quoting input (excerpt, escape_text): a tab is shown as \t too.
TEST(Check, QuotedInputIsEscapedTabsIncluded) {
    EXPECT_EQ(escape_text("a\tb\xff\x01\n"), "a\\tb\\xff\\x01\\n");
    EXPECT_EQ(escape_text("a\tb", true), "a\tb");
    EXPECT_EQ(excerpt("\xff\tx"), "\\xff\\tx");
    EXPECT_EQ(excerpt("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Check, EveryErrorKindIsOneLine) {
    try {
        const std::string value = "two\nlines";
        NZ_CHECK(false, "bad value '{}'", value);
        FAIL();
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("bad value 'two\\nlines'"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    try {
        NZ_FAIL("x\ry");
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("x\\ry"), std::string::npos) << e.what();
    }
    try {
        throw UsageError("--flag: 'a\nb'");
    } catch (const UsageError& e) {
        EXPECT_STREQ(e.what(), "--flag: 'a\\nb'");
    }
}

// A reader that echoes raw input into its message (the tokenizer quotes the start of a bad
// tokenizer string).
TEST(Check, AReaderEchoingMultiLineInputGivesOneLine) {
    const std::vector<std::string> inputs = {"nonsense\nwith\nlines", "\r\n\r\n",
                                             std::string("k\0\n", 3)};
    for (const std::string& bad : inputs) {
        try {
            (void)Tokenizer::from_string(bad);
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_FALSE(m.empty());
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(m.find('\r'), std::string::npos) << m;
        }
    }
}

}  // namespace
}  // namespace test_check
}  // namespace nazar
