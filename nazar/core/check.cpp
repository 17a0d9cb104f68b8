#include "nazar/core/check.h"

#include "nazar/core/text_limits.h"

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

// Line breaks, control bytes and what is not UTF-8 escaped (text_limits.h escape_text, tabs
// kept), so that no message can break or hijack a terminal line or carry raw non-UTF-8 bytes
// of an input (a Latin-1 line, a binary file) to a terminal or to a Python str.
std::string one_line(const std::string& s) {
    auto needs_escape = [](unsigned char c) {
        return (c < 0x20 && c != '\t') || c == 0x7f || c >= 0x80;
    };
    std::size_t i = 0;
    while (i < s.size() && !needs_escape(static_cast<unsigned char>(s[i]))) ++i;
    if (i == s.size()) return bounded(s);  // the common case: plain ASCII, nothing to escape
    return bounded(s.substr(0, i) + escape_text(std::string_view(s).substr(i), true));
}

void throw_error(const char* file, int line, const std::string& msg) {
    throw Error(msg, fmt::format("{}:{}", basename(file), line));
}

}  // namespace nazar::detail
