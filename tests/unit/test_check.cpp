// nazar::Error messages are one line (core/check.h): line breaks and control bytes in the text
// (often echoed input) are escaped by the constructor, for every way an error is made.
#include "nazar/core/check.h"
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
