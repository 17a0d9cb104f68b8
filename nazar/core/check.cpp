#include "nazar/core/check.h"

#include <cstring>

namespace nazar::detail {

const char* basename(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

namespace {
// The longest message an Error carries: a message that quotes a huge input (a 50 KB option
// value, a mutated file's key) is cut here, whatever the call site did (docs/reliability.md).
constexpr std::size_t kMaxMessageBytes = 1500;

std::string bounded(std::string s) {
    if (s.size() <= kMaxMessageBytes) return s;
    std::size_t cut = kMaxMessageBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    const std::size_t dropped = s.size() - cut;
    s.resize(cut);
    return s + "... (" + std::to_string(dropped) + " bytes cut)";
}
}  // namespace

std::string one_line(const std::string& s) {
    auto needs_escape = [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; };
    std::size_t i = 0;
    while (i < s.size() && !needs_escape(static_cast<unsigned char>(s[i]))) ++i;
    if (i == s.size()) return bounded(s);  // the common case: nothing to escape
    std::string out = s.substr(0, i);
    out.reserve(s.size() + 16);
    for (; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (!needs_escape(c))
            out += static_cast<char>(c);
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else
            out += fmt::format("\\x{:02x}", c);
    }
    return bounded(std::move(out));
}

void throw_error(const char* file, int line, const std::string& msg) {
    throw Error(msg, fmt::format("{}:{}", basename(file), line));
}

}  // namespace nazar::detail
