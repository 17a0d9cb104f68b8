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

std::string excerpt(std::string_view s, std::size_t max) {
    std::size_t n = s.size() <= max ? s.size() : max;
    if (n < s.size())  // do not cut a UTF-8 sequence: back up over continuation bytes
        while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    std::string out;
    out.reserve(n + 32);
    for (char c : s.substr(0, n)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
    if (n < s.size()) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

}  // namespace nazar
