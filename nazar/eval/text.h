// Text handling shared by the metrics: UTF-8 code points, Python's idea of whitespace, a
// lowercase mapping, and the tokenizers sacreBLEU names "13a", "char" and "none".
//
// sacreBLEU works on Python `str` (code points); these functions work on UTF-8 bytes and give
// the same tokens. The 13a rules (mteval-v13a.pl, as sacreBLEU applies them):
//   1. drop "<skipped>", join "-\n", "\n" -> " ", unescape &quot; &amp; &lt; &gt; (in that order)
//   2. pad with one space, then four left-to-right non-overlapping rewrites:
//        ([{-~[-` -&(-+:-@/])  -> " \1 "      most ASCII punctuation (not ' , - .)
//        ([^0-9])([.,])        -> "\1 \2 "    period/comma not preceded by a digit
//        ([.,])([^0-9])        -> " \1 \2"    period/comma not followed by a digit
//        ([0-9])(-)            -> "\1 \2 "    dash after a digit
//   3. split on whitespace, join with single spaces.
// Each rewrite matches exactly two (or one) characters of which at most one is non-ASCII, so a
// byte-level scan finds the same matches as Python's re.sub on code points.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

// Appends the code points of `s` to `out`. A byte that is not valid UTF-8 becomes U+DC00 + byte
// (Python's "surrogateescape"), so any input is accepted and distinct bytes stay distinct.
void utf8_decode(std::string_view s, std::vector<char32_t>& out);
void utf8_append(char32_t c, std::string& out);

// Byte length of the UTF-8 character that starts at s[i] (1 for invalid bytes).
std::size_t utf8_char_len(std::string_view s, std::size_t i);

// What Python's str.isspace() accepts: ASCII \t\n\v\f\r, space, 0x1C-0x1F and the Unicode
// spaces (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
bool is_space(char32_t c);
// Byte length of the whitespace character at s[i], or 0 when s[i] does not start one.
std::size_t space_len(std::string_view s, std::size_t i);

// Python's s.split(): the maximal runs of non-whitespace; views into `s`. Appends to `out`.
void split_whitespace(std::string_view s, std::vector<std::string_view>& out);
std::vector<std::string_view> split_whitespace(std::string_view s);

// Python's str.lower() for Latin (incl. Extended-A/B pairs and Vietnamese), Greek, Cyrillic,
// Armenian and fullwidth Latin; other scripts are returned unchanged. "İ" -> "i̇" as in Python.
char32_t lower_code_point(char32_t c);
std::string to_lower(std::string_view s);

// sacreBLEU's tokenizers. Each returns tokens joined by single spaces, with no leading or
// trailing space. `tokenize_13a` follows the rules in the file header; `tokenize_chars` makes
// every non-whitespace code point a token.
std::string tokenize_13a(std::string_view line);
std::string tokenize_chars(std::string_view line);

}  // namespace nazar
