// The two error idioms of core/check.h: user errors (NZ_CHECK_USAGE -> UsageError, NZ_CHECK_INPUT
// -> Error) carry the message alone; invariants (NZ_CHECK, NZ_FAIL) start with nazar's file:line.
#include "nazar/core/check.h"

#include <gtest/gtest.h>

#include <string>

namespace nazar {
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

TEST(CheckIdioms, InvariantsStartWithTheSourceLocation) {
    const std::string m = message_of<Error>([] { NZ_CHECK(1 + 1 == 3, "step {} of {}", 9, 9); });
    EXPECT_EQ(m.rfind("test_check_idioms.cpp:", 0), 0u) << m;
    EXPECT_NE(m.find(" step 9 of 9"), std::string::npos) << m;
    const std::string f = message_of<Error>([] { NZ_FAIL("unreachable {}", 1); });
    EXPECT_EQ(f.rfind("test_check_idioms.cpp:", 0), 0u) << f;
}

}  // namespace
}  // namespace nazar
