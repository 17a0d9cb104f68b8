// Errors and checks. The library throws nazar::Error (the values involved; the check's
// file:line is kept apart in where()) and never exits; cli/main.cpp catches, prints and picks
// the exit code.
//
// Every error message is ONE line (docs/reliability.md): messages often echo input (a file's
// line, a config value, a tokenizer string), so Error's constructor escapes the characters that
// would break or hijack a terminal line: \n -> "\\n", \r -> "\\r", every other C0 control
// byte and DEL -> "\\xNN" (NUL included: what() is a C string). A tab is kept (it does not
// end a line; TSV-related messages stay readable); bytes >= 0x80 (UTF-8) are kept.
//
//   NZ_CHECK(beam_size > 0, "beam_size must be positive, got {}", beam_size);  // always on
//   NZ_CHECK_SHAPE(enc_out, {B, S, C});  // "luong.cpp:88 enc_out: expected (4, 7, 512), got (4, 7,
//   256)" NZ_DCHECK(idx < V);                   // debug builds only; for inner loops
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace nazar {

namespace detail {
// `s` with line breaks and control bytes escaped as described above (no-op on clean text).
std::string one_line(const std::string& s);
}  // namespace detail

// what() is the message a user reads; where() is the source location of an NZ_CHECK/NZ_FAIL
// ("check.cpp:12", empty otherwise), kept out of the message: the CLI prints it only when
// NAZAR_ERROR_LOCATION is set in the environment.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what, std::string where = {})
        : std::runtime_error(detail::one_line(what)), where_(std::move(where)) {}
    const std::string& where() const noexcept { return where_; }

private:
    std::string where_;
};

// Configuration/usage errors (the CLI exits 2 for these, 1 for other errors).
class UsageError : public Error {
public:
    explicit UsageError(const std::string& what) : Error(what) {}
};

namespace detail {
const char* basename(const char* path);
[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace nazar

#define NZ_CHECK(cond, ...)                                                               \
    do {                                                                                  \
        if (!(cond)) [[unlikely]]                                                         \
            ::nazar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    } while (0)

#define NZ_FAIL(...) ::nazar::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

#ifdef NDEBUG
#define NZ_DCHECK(cond) \
    do {                \
    } while (0)
#else
#define NZ_DCHECK(cond) NZ_CHECK(cond, "debug check failed: {}", #cond)
#endif
