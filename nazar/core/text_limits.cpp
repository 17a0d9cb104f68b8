#include "nazar/core/text_limits.h"

#include "nazar/core/check.h"

namespace nazar {

namespace {

[[noreturn]] void too_deep(const std::string& what, std::size_t at) {
    throw Error(
        fmt::format("{}: nesting deeper than {} levels (at byte {}); nazar's files nest "
                    "only a few levels",
                    what, kMaxNesting, at));
}

void check_json(std::string_view t, const std::string& what) {
    int depth = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (c == '"') {  // skip the string, escapes included; an unterminated one ends the scan
            for (++i; i < t.size() && t[i] != '"'; ++i)
                if (t[i] == '\\') ++i;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxNesting) too_deep(what, i);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

void check_yaml(std::string_view t, const std::string& what) {
    int flow = 0;
    std::size_t i = 0;
    while (i < t.size()) {
        // Start of a line: indentation plus block indicators ("- ", "? ", ": ") give the
        // block depth bound. Inside a flow collection, line starts carry no block structure.
        const std::size_t line_start = i;
        if (flow == 0) {
            while (i < t.size()) {
                const char c = t[i];
                const bool indicator = (c == '-' || c == '?' || c == ':') &&
                                       (i + 1 == t.size() || t[i + 1] == ' ' || t[i + 1] == '\n');
                if (c == ' ' || indicator)
                    ++i;
                else
                    break;
            }
            if (i < t.size() && t[i] != '\n' && t[i] != '#' &&
                i - line_start > static_cast<std::size_t>(kMaxYamlIndent))
                throw Error(
                    fmt::format("{}: line indented by more than {} columns (at byte {}); "
                                "nazar's configurations nest only a few levels",
                                what, kMaxYamlIndent, i));
        }
        // The rest of the line; quoted scalars may span lines.
        bool after_space = true;
        while (i < t.size() && t[i] != '\n') {
            const char c = t[i];
            if (c == '#' && after_space) {  // a comment runs to the end of the line
                while (i < t.size() && t[i] != '\n') ++i;
                break;
            }
            if (c == '"' && after_space) {  // a quote inside a plain scalar is just a byte
                for (++i; i < t.size() && t[i] != '"'; ++i)
                    if (t[i] == '\\') ++i;
            } else if (c == '\'' && after_space) {
                for (++i; i < t.size(); ++i)
                    if (t[i] == '\'') {
                        if (i + 1 < t.size() && t[i + 1] == '\'')
                            ++i;  // '' is an escaped quote
                        else
                            break;
                    }
            } else if (c == '[' || c == '{') {
                if (++flow > kMaxNesting) too_deep(what, i);
            } else if ((c == ']' || c == '}') && flow > 0) {
                --flow;
            }
            after_space = c == ' ' || c == '\t' || c == '[' || c == '{' || c == ',' || c == ':';
            ++i;
        }
        ++i;  // the '\n'
    }
}

}  // namespace

void check_nesting(std::string_view text, const std::string& what, TextSyntax syntax) {
    if (syntax == TextSyntax::json)
        check_json(text, what);
    else
        check_yaml(text, what);
}

namespace {

// Length of the valid UTF-8 sequence that starts at s[i] (2..4), 0 when none does there.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = at(i);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (shortest form, no surrogates)
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    if (n == 0 || i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((at(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

}  // namespace

std::string escape_text(std::string_view s, bool keep_tab) {
    std::string out;
    out.reserve(s.size() + 16);
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c >= 0x20 && c < 0x7f) || (c == '\t' && keep_tab)) {
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x80) {
            out += c == '\n'   ? std::string("\\n")
                   : c == '\r' ? std::string("\\r")
                   : c == '\t' ? std::string("\\t")
                               : fmt::format("\\x{:02x}", c);
            ++i;
        } else if (const std::size_t n = utf8_sequence(s, i); n == 0) {
            out += fmt::format("\\x{:02x}", c);  // not UTF-8: one byte at a time
            ++i;
        } else if (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));  // C1 control
            i += 2;
        } else {
            out.append(s, i, n);
            i += n;
        }
    }
    return out;
}

std::string excerpt(std::string_view s, std::size_t max) {
    std::size_t n = s.size() <= max ? s.size() : max;
    if (n < s.size())  // do not cut a UTF-8 sequence: back up over continuation bytes
        while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    std::string out = escape_text(s.substr(0, n));
    if (n < s.size()) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

}  // namespace nazar
