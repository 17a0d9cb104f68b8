#include "nazar/core/check.h"

#include <cstring>

namespace nazar::detail {

const char* basename(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

std::string one_line(const std::string& s) {
    auto needs_escape = [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; };
    std::size_t i = 0;
    while (i < s.size() && !needs_escape(static_cast<unsigned char>(s[i]))) ++i;
    if (i == s.size()) return s;  // the common case: nothing to escape, one copy
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
    return out;
}

void throw_error(const char* file, int line, const std::string& msg) {
    throw Error(msg, fmt::format("{}:{}", basename(file), line));
}

}  // namespace nazar::detail
