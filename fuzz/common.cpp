#include "fuzz/common.h"

#include "nazar/core/threads.h"

#include <unistd.h>
#include <cstring>
#include <fstream>

namespace nazar::fuzz {

void check_message(const char* what) {
    const std::size_t n = std::strlen(what);
    if (n == 0) fail("nazar::Error with an empty message");
    // nazar::Error's constructor escapes line breaks and control bytes (core/check.h).
    if (std::memchr(what, '\n', n) || std::memchr(what, '\r', n))
        fail(std::string("nazar::Error message is not one line: ") + what);
    // Messages quote at most ~200 bytes of input (core/text_limits.h: excerpt); with a file name
    // and a few numbers around it, a message stays well under this.
    if (n > kMaxMessage)
        fail("nazar::Error message of " + std::to_string(n) +
             " bytes (inputs must be quoted as excerpts): " + std::string(what, 300) + "...");
}

void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

std::string scratch_path(std::string_view tag) {
    const char* dir = std::getenv("TMPDIR");
    std::string out = (dir && *dir) ? dir : "/tmp";
    out += "/nazar-fuzz-" + std::to_string(::getpid()) + "-";
    out += tag;
    return out;
}

void write_bytes(const std::string& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) fail("cannot write scratch file " + path);
}

}  // namespace nazar::fuzz

// One thread: the fuzzers run two at a time on two cores, and a thread pool per input is slow
// under ASan. libFuzzer calls this once before the first input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    nazar::set_num_threads(1);
    return 0;
}
