// UTF-8, whitespace, lowercase and sacreBLEU's tokenizers (see text.h for the 13a rules).
#include "nazar/eval/text.h"

#include <cstdint>

namespace nazar {

namespace {

bool is_cont(unsigned char b) {
    return (b & 0xC0) == 0x80;
}

// Decodes the character at s[i]; returns its code point and sets `len`. Invalid -> U+DC00+byte
// (surrogateescape).
char32_t decode_at(std::string_view s, std::size_t i, std::size_t& len) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const std::size_t n = s.size();
    if (b0 < 0x80) {
        len = 1;
        return b0;
    }
    int need = 0;
    char32_t cp = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        need = 1, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        need = 2, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        need = 3, cp = b0 & 0x07, min = 0x10000;
    } else {
        len = 1;
        return 0xDC00 + b0;
    }
    if (i + static_cast<std::size_t>(need) >= n) {  // not enough bytes left
        len = 1;
        return 0xDC00 + b0;
    }
    for (int k = 1; k <= need; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if (!is_cont(b)) {
            len = 1;
            return 0xDC00 + b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        len = 1;
        return 0xDC00 + b0;
    }
    len = static_cast<std::size_t>(need) + 1;
    return cp;
}

// mteval-v13a's first rewrite class: [{-~[-` -&(-+:-@/]
bool is_13a_punct(unsigned char c) {
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == '/';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// First '.' or ',' at or after `from` (std::string::find_first_of calls memchr per character).
std::size_t find_period_comma(const std::string& s, std::size_t from) {
    for (std::size_t i = from; i < s.size(); ++i)
        if (s[i] == '.' || s[i] == ',') return i;
    return std::string::npos;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (s.find(from) == std::string::npos) return;
    std::string out;
    out.reserve(s.size());
    std::size_t pos = 0;
    for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out.append(to);
    }
    out.append(s, pos, std::string::npos);
    s.swap(out);
}

std::string join_tokens(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    thread_local std::vector<std::string_view> toks;
    toks.clear();
    split_whitespace(s, toks);
    for (std::size_t i = 0; i < toks.size(); ++i) {
        if (i) out.push_back(' ');
        out.append(toks[i]);
    }
    return out;
}

}  // namespace

std::size_t utf8_char_len(std::string_view s, std::size_t i) {
    std::size_t len = 1;
    decode_at(s, i, len);
    return len;
}

void utf8_decode(std::string_view s, std::vector<char32_t>& out) {
    for (std::size_t i = 0, len = 0; i < s.size(); i += len) out.push_back(decode_at(s, i, len));
}

void utf8_append(char32_t c, std::string& out) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c >= 0xDC80 && c <= 0xDCFF) {  // an escaped invalid byte goes back out as itself
        out.push_back(static_cast<char>(c - 0xDC00));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

bool is_space(char32_t c) {
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::size_t space_len(std::string_view s, std::size_t i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) return is_space(b) ? 1 : 0;
    if (b != 0xC2 && b != 0xE1 && b != 0xE2 && b != 0xE3) return 0;  // lead bytes of the spaces
    std::size_t len = 1;
    const char32_t c = decode_at(s, i, len);
    return is_space(c) ? len : 0;
}

void split_whitespace(std::string_view s, std::vector<std::string_view>& out) {
    std::size_t i = 0, start = 0;
    bool in_token = false;
    while (i < s.size()) {
        const auto byte = static_cast<unsigned char>(s[i]);
        const std::size_t sp = byte < 0x80 ? (is_space(byte) ? 1 : 0) : space_len(s, i);
        if (sp) {
            if (in_token) out.push_back(s.substr(start, i - start));
            in_token = false;
            i += sp;
        } else {
            if (!in_token) start = i;
            in_token = true;
            ++i;
        }
    }
    if (in_token) out.push_back(s.substr(start));
}

std::vector<std::string_view> split_whitespace(std::string_view s) {
    std::vector<std::string_view> out;
    split_whitespace(s, out);
    return out;
}

char32_t lower_code_point(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE) return c == 0xD7 ? c : c + 32;
    if (c >= 0x100 && c <= 0x17F) {  // Latin Extended-A: upper/lower pairs, two parities
        if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
        if (c == 0x178) return 0xFF;
        const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        return ((c & 1) == (odd_upper ? 1u : 0u)) ? c + 1 : c;
    }
    if ((c >= 0x200 && c <= 0x21F) || (c >= 0x222 && c <= 0x233))  // Latin Extended-B pairs (Ș Ț)
        return (c & 1) ? c : c + 1;
    if (c >= 0x386 && c <= 0x3AB) {  // Greek
        if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
        if (c == 0x386) return 0x3AC;
        if (c >= 0x388 && c <= 0x38A) return c + 37;
        if (c == 0x38C) return 0x3CC;
        if (c == 0x38E || c == 0x38F) return c + 63;
        return c;
    }
    if (c >= 0x400 && c <= 0x40F) return c + 80;  // Cyrillic
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F))
        return (c & 1) ? c : c + 1;
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c + 1 : c;
    if (c >= 0x531 && c <= 0x556) return c + 48;                       // Armenian
    if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF))  // Latin Extended Additional
        return (c & 1) ? c : c + 1;
    if (c == 0x1E9E) return 0xDF;
    if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;  // fullwidth Latin
    return c;
}

std::string to_lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80) {
            len = 1;
            out.push_back(static_cast<char>((b >= 'A' && b <= 'Z') ? b + 32 : b));
            continue;
        }
        const char32_t c = decode_at(s, i, len);
        if (c == 0x130) {  // İ -> i + combining dot above, as Python does
            out.push_back('i');
            utf8_append(0x307, out);
        } else {
            utf8_append(lower_code_point(c), out);
        }
    }
    return out;
}

std::string tokenize_13a(std::string_view line) {
    thread_local std::string s, a, b;  // scratch, reused across calls
    s.assign(line);
    replace_all(s, "<skipped>", "");
    replace_all(s, "-\n", "");
    replace_all(s, "\n", " ");
    if (s.find('&') != std::string::npos) {
        replace_all(s, "&quot;", "\"");
        replace_all(s, "&amp;", "&");
        replace_all(s, "&lt;", "<");
        replace_all(s, "&gt;", ">");
    }
    // Each rewrite copies the spans between candidate characters and handles the candidates
    // left to right, as re.sub does (a match consumes both of its characters).
    // Rewrite 1: ([{-~[-` -&(-+:-@/]) -> " \1 "  (the padding space is itself in the class)
    a.clear();
    a.append("   ");
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (!is_13a_punct(static_cast<unsigned char>(c))) continue;
        a.append(s, run, i - run);
        a.append({' ', c, ' '});
        run = i + 1;
    }
    a.append(s, run, std::string::npos);
    a.append("   ");
    // Rewrite 2: ([^0-9])([.,]) -> "\1 \2 "   candidates: a [.,] at j >= i + 1, paired with j - 1
    b.clear();
    for (std::size_t i = 0; i < a.size();) {
        const std::size_t j = find_period_comma(a, i + 1);
        if (j == std::string::npos) {
            b.append(a, i, std::string::npos);
            break;
        }
        b.append(a, i, j - 1 - i);
        if (!is_digit(a[j - 1])) {
            b.append({a[j - 1], ' ', a[j], ' '});
            i = j + 1;
        } else {
            b.push_back(a[j - 1]);
            i = j;  // a[j] may start the next match
        }
    }
    // Rewrite 3: ([.,])([^0-9]) -> " \1 \2"   candidates: a [.,] at j >= i, paired with j + 1
    a.clear();
    for (std::size_t i = 0; i < b.size();) {
        const std::size_t j = find_period_comma(b, i);
        if (j == std::string::npos || j + 1 >= b.size()) {
            a.append(b, i, std::string::npos);
            break;
        }
        a.append(b, i, j - i);
        if (!is_digit(b[j + 1])) {
            a.append({' ', b[j], ' ', b[j + 1]});
            i = j + 2;
        } else {
            a.push_back(b[j]);
            i = j + 1;
        }
    }
    // Rewrite 4: ([0-9])(-) -> "\1 \2 "   candidates: a '-' at j >= i + 1, paired with j - 1
    b.clear();
    for (std::size_t i = 0; i < a.size();) {
        const std::size_t j = a.find('-', i + 1);
        if (j == std::string::npos) {
            b.append(a, i, std::string::npos);
            break;
        }
        b.append(a, i, j - 1 - i);
        if (is_digit(a[j - 1])) {
            b.append({a[j - 1], ' ', '-', ' '});
            i = j + 1;
        } else {
            b.push_back(a[j - 1]);
            i = j;
        }
    }
    return join_tokens(b);
}

std::string tokenize_chars(std::string_view line) {
    std::string out;
    out.reserve(2 * line.size());
    for (std::size_t i = 0; i < line.size();) {
        if (const std::size_t sp = space_len(line, i)) {
            i += sp;
            continue;
        }
        const std::size_t len = utf8_char_len(line, i);
        if (!out.empty()) out.push_back(' ');
        out.append(line.substr(i, len));
        i += len;
    }
    return out;
}

}  // namespace nazar
