// UTF-8 helpers for the data pipeline: validation (with the offset of the first bad byte, so
// errors can say where), code-point iteration, and the whitespace set of the word tokenizer.
//
// Valid means RFC 3629: shortest form only, no surrogates (U+D800..U+DFFF), nothing above
// U+10FFFF. A byte order mark is valid UTF-8; the readers strip it from the first line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nazar::utf8 {

inline constexpr std::size_t npos = std::string_view::npos;

// Offset of the first byte that does not start a valid sequence, or npos when `s` is valid.
std::size_t find_invalid(std::string_view s);
inline bool is_valid(std::string_view s) {
    return find_invalid(s) == npos;
}

// Byte length of the (valid) sequence starting with lead byte `c`: 1..4.
inline int sequence_length(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

// Decodes the code point at s[i] (s must be valid) and advances i past it.
char32_t next(std::string_view s, std::size_t& i);

// Appends the UTF-8 encoding of `cp` (must be a valid scalar value).
void append(std::string& out, char32_t cp);

// Number of code points in valid `s`.
std::size_t length(std::string_view s);

// The word tokenizer's separators: ASCII space, tab, LF, VT, FF, CR. Other Unicode spaces
// (U+00A0 no-break space, U+202F narrow no-break space, common in French) are NOT separators:
// they are part of words, so detokenisation never turns them into plain spaces.
inline bool is_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

}  // namespace nazar::utf8
