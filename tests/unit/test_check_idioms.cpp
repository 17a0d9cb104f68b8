// The two error idioms of core/check.h: user errors (NZ_CHECK_USAGE -> UsageError, NZ_CHECK_INPUT
// -> Error) carry the message alone; invariants (NZ_CHECK, NZ_FAIL) carry nazar's file:line in
// Error::where(), kept out of what() (the CLI shows it with NAZAR_ERROR_LOCATION=1).
#include "nazar/core/check.h"

#include <gtest/gtest.h>

#include <string>

namespace nazar {
namespace test_check_idioms {
namespace {

template <class E, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(CheckIdioms, UsageErrorsHaveNoSourceLocation) {
    const int beam = 0;
    EXPECT_EQ(message_of<UsageError>(
                  [&] { NZ_CHECK_USAGE(beam > 0, "--beam-size must be >= 1, got {}", beam); }),
              "--beam-size must be >= 1, got 0");
    EXPECT_EQ(message_of<UsageError>([&] { NZ_CHECK_USAGE(beam == 0, "unused {}", beam); }),
              "(no error)");
}

TEST(CheckIdioms, InputErrorsAreErrorsWithoutSourceLocation) {
    const std::string path = "m.safetensors\nx";
    // An Error, not a UsageError (exit code 1, not 2), one line, no "check_idioms.cpp:".
    EXPECT_EQ(message_of<Error>([&] {
                  try {
                      NZ_CHECK_INPUT(false, "{}: lacks metadata '{}'", path, "k");
                  } catch (const UsageError&) {
                      ADD_FAILURE() << "NZ_CHECK_INPUT threw a UsageError";
                  }
              }),
              "m.safetensors\\nx: lacks metadata 'k'");
}

template <class F>
Error error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    return Error("(no error)");
}

TEST(CheckIdioms, InvariantsCarryTheSourceLocation) {
    const Error m = error_of([] { NZ_CHECK(1 + 1 == 3, "step {} of {}", 9, 9); });
    EXPECT_STREQ(m.what(), "step 9 of 9");
    EXPECT_EQ(m.where().rfind("test_check_idioms.cpp:", 0), 0u) << m.where();
    const Error f = error_of([] { NZ_FAIL("unreachable {}", 1); });
    EXPECT_STREQ(f.what(), "unreachable 1");
    EXPECT_EQ(f.where().rfind("test_check_idioms.cpp:", 0), 0u) << f.where();
    // User errors carry none.
    const Error u = error_of([] { NZ_CHECK_INPUT(false, "bad {}", 1); });
    EXPECT_TRUE(u.where().empty()) << u.where();
}

TEST(CheckIdioms, MessagesAreBoundedWhateverTheySay) {
    // A call site that quotes a huge input whole still gives a bounded one-line message.
    const std::string huge(50000, 'z');
    const Error e =
        error_of([&] { NZ_CHECK_INPUT(false, "unknown cell '{}' ({})", huge, "\u00e9"); });
    const std::string m = e.what();
    EXPECT_LE(m.size(), 1600u);
    EXPECT_EQ(m.rfind("unknown cell 'zzz", 0), 0u);
    EXPECT_NE(m.find("bytes cut)"), std::string::npos) << m.substr(m.size() - 40);
    const std::string small = error_of([] { NZ_CHECK_INPUT(false, "short {}", 1); }).what();
    EXPECT_EQ(small, "short 1");
}

}  // namespace
}  // namespace test_check_idioms
}  // namespace nazar
