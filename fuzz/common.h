// Shared helpers of the libFuzzer targets (fuzz/fuzz_*.cpp, docs/reliability.md).
//
// The contract every reader promises (safetensors.h, reader.h, train_config.h): hostile input
// gives a one-line nazar::Error, never a crash, a hang, another exception type or a huge
// allocation. A target runs the reader inside `expect_error_or_ok`, which swallows exactly that
// and lets everything else escape: libFuzzer reports an escaping exception ("deadly signal" from
// std::terminate), and the sanitizers report memory and UB errors, as crashes.
#pragma once

#include "nazar/core/check.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace nazar::fuzz {

// The longest error message accepted: input is quoted in excerpts of <= 200 bytes.
inline constexpr std::size_t kMaxMessage = 2000;

// Aborts (a finding) when an error message is not one line, is empty or is longer than
// kMaxMessage.
void check_message(const char* what);

// Runs f(); returns true when it returned normally, false when it threw nazar::Error (after
// checking the message). Any other exception propagates.
template <class F>
bool expect_error_or_ok(F&& f) {
    try {
        f();
        return true;
    } catch (const nazar::Error& e) {
        check_message(e.what());
        return false;
    }
}

// A property the target checks failed: print and abort (libFuzzer saves the input).
[[noreturn]] void fail(const std::string& what);

// A per-process scratch file path under $TMPDIR (or /tmp), distinct per `tag`.
std::string scratch_path(std::string_view tag);
void write_bytes(const std::string& path, std::string_view bytes);

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace nazar::fuzz
