// Text utilities and tokenizers (nazar/eval/text.h). The 13a outputs are derived by hand from
// the four mteval-v13a rewrite rules listed in text.h; the n-gram matcher is checked against
// hand counts.
#include "nazar/eval/ngram.h"
#include "nazar/eval/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace nazar;

TEST(Tokenize13a, PunctuationPeriodsCommasAndDashes) {
    EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
    // ' and - are not split; 3.5 keeps its period (digits on both sides).
    EXPECT_EQ(tokenize_13a("It's 3.5 km-long, isn't it?"), "It's 3.5 km-long , isn't it ?");
    EXPECT_EQ(tokenize_13a("1990-2000"), "1990 - 2000");       // dash after a digit
    EXPECT_EQ(tokenize_13a("e.g. this"), "e . g . this");      // left-to-right, non-overlapping
    EXPECT_EQ(tokenize_13a("1,000.5 and .5"), "1,000.5 and . 5");  // (space, .) matches rule 2
    EXPECT_EQ(tokenize_13a(".end"), ". end");
    EXPECT_EQ(tokenize_13a("&quot;a&quot; &amp; b"), "\" a \" & b");  // unescaped, then split
    EXPECT_EQ(tokenize_13a("x<skipped>y"), "xy");
    EXPECT_EQ(tokenize_13a("(a)[b]{c}"), "( a ) [ b ] { c }");
    EXPECT_EQ(tokenize_13a("Ça va.  "), "Ça va .");
    EXPECT_EQ(tokenize_13a(""), "");
}

TEST(TokenizeChars, EveryNonSpaceCodePoint) {
    EXPECT_EQ(tokenize_chars("a b€"), "a b €");
    EXPECT_EQ(tokenize_chars("  "), "");
}

TEST(Text, WhitespaceIsPythons) {
    // NBSP (U+00A0) and the ideographic space (U+3000) split like ASCII spaces.
    const auto t = split_whitespace("a\xC2\xA0" "b\xE3\x80\x80" "c \t d");
    EXPECT_EQ(t, (std::vector<std::string_view>{"a", "b", "c", "d"}));
    EXPECT_TRUE(is_space(0x1C));
    EXPECT_FALSE(is_space(0x200B));  // zero-width space is not whitespace in Python either
}

TEST(Text, Utf8RoundTripAndInvalidBytes) {
    std::vector<char32_t> cps;
    utf8_decode("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF", cps);
    EXPECT_EQ(cps, (std::vector<char32_t>{'a', 0xE9, 0x20AC, 0x1F600, 0xDCFF}));
    std::string back;
    for (char32_t c : cps) utf8_append(c, back);
    EXPECT_EQ(back, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF");
    cps.clear();
    utf8_decode("\xE2\x82", cps);  // truncated sequence: two escaped bytes
    EXPECT_EQ(cps, (std::vector<char32_t>{0xDCE2, 0xDC82}));
}

TEST(Text, Lowercase) {
    EXPECT_EQ(to_lower("ÀÉÎ ŞȚ Ωμέγα ДЖЁ Hello"), "àéî şț ωμέγα джё hello");
    EXPECT_EQ(to_lower("İ"), "i\xCC\x87");  // as Python: i + combining dot above
    EXPECT_EQ(to_lower("日本"), "日本");
}

TEST(NgramMatcher, CountsAndClipsExactly) {
    // hyp a a b a ; refs: (a b a) and (a a a).
    // order 1: hyp a:3 b:1;  ref1 a:2 b:1 -> match 3; ref2 a:3 -> match 3; clipped min(3,3)+min(1,1) = 4
    // order 2: hyp aa ab ba; ref1 ab ba -> 2; ref2 aa aa -> 1; clipped aa:1 ab:1 ba:1 = 3
    // order 3: hyp aab aba;  ref1 aba -> 1; ref2 aaa -> 0; clipped 1
    // order 4: hyp aaba; refs have none of order 4 (ref totals 0).
    const std::vector<uint32_t> hyp = {1, 1, 2, 1}, r1 = {1, 2, 1}, r2 = {1, 1, 1};
    const std::vector<std::span<const uint32_t>> refs = {r1, r2};
    NgramMatcher m;
    NgramCounts c;
    m.count(hyp, refs, 4, c);
    EXPECT_EQ(c.hyp_total, (std::vector<int64_t>{4, 3, 2, 1}));
    EXPECT_EQ(c.ref_total, (std::vector<int64_t>{3, 2, 1, 0, 3, 2, 1, 0}));
    EXPECT_EQ(c.match, (std::vector<int64_t>{3, 2, 1, 0, 3, 1, 0, 0}));
    EXPECT_EQ(c.clipped, (std::vector<int64_t>{4, 3, 1, 0}));
    // Reusing the matcher gives the same answer (generation stamps reset the table).
    m.count(hyp, refs, 4, c);
    EXPECT_EQ(c.clipped, (std::vector<int64_t>{4, 3, 1, 0}));
}

TEST(TokenInterner, EqualStringsEqualIds) {
    TokenInterner t;
    t.reset(3);
    const uint32_t a = t.id("the"), b = t.id("cat"), c = t.id("the");
    EXPECT_EQ(a, c);
    EXPECT_NE(a, b);
}
