// Text utilities and tokenizers (nazar/eval/text.h). The 13a outputs are derived by hand from
// the four mteval-v13a rewrite rules listed in text.h; the n-gram matcher is checked against
// hand counts.
#include "nazar/eval/ngram.h"
#include "nazar/eval/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace test_eval_text {

using namespace nazar;

namespace {

// The 13a rules applied literally, one character pair at a time (the oracle for the span-copying
// version in text.cpp). Input without "<skipped>", newlines or entities.
std::string naive_13a(const std::string& line) {
    const auto punct = [](unsigned char c) {
        return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
               (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == '/';
    };
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    const auto pc = [](char c) { return c == '.' || c == ','; };
    std::string s(1, ' '), t;
    s.append(line);
    s.push_back(' ');
    for (char c : s) punct(static_cast<unsigned char>(c)) ? t += std::string{' ', c, ' '} : t += c;
    s.clear();
    for (std::size_t i = 0; i < t.size();)
        if (i + 1 < t.size() && !digit(t[i]) && pc(t[i + 1]))
            s += std::string{t[i], ' ', t[i + 1], ' '}, i += 2;
        else
            s += t[i++];
    t.clear();
    for (std::size_t i = 0; i < s.size();)
        if (i + 1 < s.size() && pc(s[i]) && !digit(s[i + 1]))
            t += std::string{' ', s[i], ' ', s[i + 1]}, i += 2;
        else
            t += s[i++];
    s.clear();
    for (std::size_t i = 0; i < t.size();)
        if (i + 1 < t.size() && digit(t[i]) && t[i + 1] == '-')
            s += std::string{t[i], ' ', '-', ' '}, i += 2;
        else
            s += t[i++];
    std::string out;
    for (const auto w : split_whitespace(s)) {
        if (!out.empty()) out.push_back(' ');
        out.append(w);
    }
    return out;
}

}  // namespace

TEST(Tokenize13a, PunctuationPeriodsCommasAndDashes) {
    EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
    // ' and - are not split; 3.5 keeps its period (digits on both sides).
    EXPECT_EQ(tokenize_13a("It's 3.5 km-long, isn't it?"), "It's 3.5 km-long , isn't it ?");
    EXPECT_EQ(tokenize_13a("1990-2000"), "1990 - 2000");           // dash after a digit
    EXPECT_EQ(tokenize_13a("e.g. this"), "e . g . this");          // left-to-right, non-overlapping
    EXPECT_EQ(tokenize_13a("1,000.5 and .5"), "1,000.5 and . 5");  // (space, .) matches rule 2
    EXPECT_EQ(tokenize_13a(".end"), ". end");
    EXPECT_EQ(tokenize_13a("&quot;a&quot; &amp; b"), "\" a \" & b");  // unescaped, then split
    EXPECT_EQ(tokenize_13a("x<skipped>y"), "xy");
    EXPECT_EQ(tokenize_13a("(a)[b]{c}"), "( a ) [ b ] { c }");
    EXPECT_EQ(tokenize_13a("Ça va.  "), "Ça va .");
    EXPECT_EQ(tokenize_13a(""), "");
}

TEST(Tokenize13a, MatchesTheLiteralRulesOnRandomStrings) {
    // Strings dense in the characters the rules care about, including runs like "..", "1.-", ",5".
    const std::vector<std::string> alphabet = {"a", "b", "1", "9",        ".", ",", "-",
                                               " ", "'", "(", "\xC3\xA9", "/", "0"};
    std::mt19937 gen(13);
    for (int trial = 0; trial < 3000; ++trial) {
        std::string line;
        const int len = static_cast<int>(gen() % 12);
        for (int k = 0; k < len; ++k) line += alphabet[gen() % alphabet.size()];
        ASSERT_EQ(tokenize_13a(line), naive_13a(line)) << "input: '" << line << "'";
    }
}

TEST(TokenizeChars, EveryNonSpaceCodePoint) {
    EXPECT_EQ(tokenize_chars("a b€"), "a b €");
    EXPECT_EQ(tokenize_chars("  "), "");
}

TEST(Text, WhitespaceIsPythons) {
    // NBSP (U+00A0) and the ideographic space (U+3000) split like ASCII spaces.
    const auto t = split_whitespace(
        "a\xC2\xA0"
        "b\xE3\x80\x80"
        "c \t d");
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
    // order 1: hyp a:3 b:1;  ref1 a:2 b:1 -> match 3; ref2 a:3 -> match 3; clipped
    // min(3,3)+min(1,1) = 4 order 2: hyp aa ab ba; ref1 ab ba -> 2; ref2 aa aa -> 1; clipped aa:1
    // ab:1 ba:1 = 3 order 3: hyp aab aba;  ref1 aba -> 1; ref2 aaa -> 0; clipped 1 order 4: hyp
    // aaba; refs have none of order 4 (ref totals 0).
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

TEST(NgramMatcher, AgreesWithMapCountsOnRandomSequences) {
    std::mt19937 gen(7);
    NgramMatcher m;
    NgramCounts c;
    for (int trial = 0; trial < 300; ++trial) {
        const auto seq = [&](int max_len) {
            std::vector<uint32_t> v(gen() % (max_len + 1));
            for (auto& x : v) x = gen() % 3;  // tiny vocabulary: many repeated n-grams
            return v;
        };
        const std::vector<uint32_t> hyp = seq(12);
        std::vector<std::vector<uint32_t>> refs(1 + gen() % 3);
        for (auto& r : refs) r = seq(12);
        std::vector<std::span<const uint32_t>> spans(refs.begin(), refs.end());
        const int N = 1 + static_cast<int>(gen() % 5);
        m.count(hyp, spans, N, c);
        using Counts = std::map<std::vector<uint32_t>, int64_t>;
        const auto ngrams = [](const std::vector<uint32_t>& v, int n) {
            Counts out;
            for (std::size_t i = 0; i + n <= v.size(); ++i)
                ++out[{v.begin() + i, v.begin() + i + n}];
            return out;
        };
        for (int n = 1; n <= N; ++n) {
            const Counts h = ngrams(hyp, n);
            int64_t clipped = 0;
            for (const auto& [g, cnt] : h) {
                int64_t best = 0;
                for (const auto& r : refs) {
                    const Counts rc = ngrams(r, n);
                    best = std::max(best, rc.count(g) ? rc.at(g) : int64_t{0});
                }
                clipped += std::min(cnt, best);
            }
            ASSERT_EQ(c.clipped[n - 1], clipped) << "trial " << trial << " order " << n;
            for (std::size_t r = 0; r < refs.size(); ++r) {
                const Counts rc = ngrams(refs[r], n);
                int64_t match = 0, total = 0;
                for (const auto& [g, cnt] : rc) total += cnt;
                for (const auto& [g, cnt] : h)
                    match += std::min(cnt, rc.count(g) ? rc.at(g) : int64_t{0});
                ASSERT_EQ(c.match[r * N + n - 1], match)
                    << "trial " << trial << " order " << n << " ref " << r;
                ASSERT_EQ(c.ref_total[r * N + n - 1], total);
            }
        }
    }
}

}  // namespace test_eval_text
