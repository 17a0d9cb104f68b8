#include "nazar/core/check.h"

#include <cstring>

namespace nazar::detail {

const char* basename(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void throw_error(const char* file, int line, const std::string& msg) {
    throw Error(fmt::format("{}:{} {}", basename(file), line, msg));
}

}  // namespace nazar::detail
