// The explorer's static files (nazar/serve/www/), embedded in the binary at build time by
// cmake/embed_www.cmake: the server answers GET <path> with `data` and `content_type`, so the
// page needs no file next to the binary and no network.
#pragma once

#include <cstddef>
#include <span>

namespace nazar::serve {

struct Asset {
    const char* path;  // "/" for index.html, "/app.js", ...
    const char* content_type;
    const unsigned char* data;
    std::size_t size;
};

std::span<const Asset> www_assets();  // defined in the generated serve_www.cpp

}  // namespace nazar::serve
