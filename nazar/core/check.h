// Errors and checks. The library throws nazar::Error (or its UsageError) and never exits;
// cli/main.cpp catches, prints the message and picks the exit code (2 for UsageError, else 1).
//
// Two idioms, by who is at fault:
//
//   User errors: the input, a file or an option is wrong, and the user can fix it. The message
//   says what is wrong, with the value and where it came from (file:line of the INPUT, the key
//   or flag), and carries no source location of nazar's own code:
//     NZ_CHECK_USAGE(beam_size > 0, "--beam-size must be >= 1, got {}", beam_size);  // UsageError
//     NZ_CHECK_INPUT(st.has_meta(k), "{}: lacks metadata '{}'", path, k);              // Error
//   (equivalently `throw UsageError(fmt::format(...))` / `throw Error(...)` where a condition
//   does not read well). UsageError: an option, a flag, a configuration value, a choice name.
//   Error: the content of a file or of the input text.
//
//   Invariants: a condition nazar's own code guarantees (shapes between layers, step order, an
//   index in range). A failure is a bug in nazar or in a program calling the API wrongly, so the
//   error carries nazar's source location for the report, in Error::where() (kept out of what(),
//   which stays the one line a user reads; the CLI appends " [file:line]" when
//   NAZAR_ERROR_LOCATION=1 is set, and library callers can log where()):
//     NZ_CHECK(t < T, "step {} of {}", t, T);  // always on; what() "step 9 of 9",
//                                              //  where() "decoder.cpp:88"
//     NZ_CHECK_SHAPE(enc_out, {B, S, C});      // "enc_out: expected (4, 7, 512),
//                                              //  got (4, 7, 256)" at luong.cpp:88
//     NZ_DCHECK(idx < V);                      // debug builds only; for inner loops
//     NZ_FAIL("unreachable: {}", kind);        // an impossible branch
//
// Every error message is ONE line (docs/reliability.md): messages often echo input (a file's
// line, a config value, a tokenizer string), so Error's constructor escapes the characters that
// would break or hijack a terminal line: \n -> "\\n", \r -> "\\r", every other C0 control
// byte and DEL -> "\\xNN" (NUL included: what() is a C string). A tab is kept (it does not
// end a line; TSV-related messages stay readable); valid UTF-8 is kept, C1 controls become
// "\\u00NN" and a byte outside a valid sequence "\\xNN" (escape_text, core/text_limits.h).
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

// User errors (see the top): the message alone, no source location.
#define NZ_CHECK_USAGE(cond, ...)                                  \
    do {                                                           \
        if (!(cond)) [[unlikely]]                                  \
            throw ::nazar::UsageError(::fmt::format(__VA_ARGS__)); \
    } while (0)

#define NZ_CHECK_INPUT(cond, ...)                             \
    do {                                                      \
        if (!(cond)) [[unlikely]]                             \
            throw ::nazar::Error(::fmt::format(__VA_ARGS__)); \
    } while (0)

#ifdef NDEBUG
#define NZ_DCHECK(cond) \
    do {                \
    } while (0)
#else
#define NZ_DCHECK(cond) NZ_CHECK(cond, "debug check failed: {}", #cond)
#endif
