// Helpers shared by the tests: random tensors, closeness assertions, fixture paths, generated
// data. A helper that a second test file needs moves here (or to tiny_models.h / gradcheck.h /
// kernel_switches.h) instead of being copied.
#pragma once

#include "nazar/core/check.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define NZ_TEST_UTIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NZ_TEST_UTIL_ASAN 1
#endif
#endif

namespace nazar::test {

// Built with AddressSanitizer (the instrumented suite, scripts/run-sanitizers.sh). A test that
// checks logic over thousands of cases takes an even sample of them there: the Release suite
// checks every case, the instrumented one the memory of the code they run.
#ifdef NZ_TEST_UTIL_ASAN
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif

// A 1-D tensor holding `v` (hand-computed examples).
inline Tensor vec(std::vector<float> v) {
    return Tensor::from({static_cast<int64_t>(v.size())}, v);
}

inline Tensor random_tensor(Rng& rng, Shape shape, float lo = -1.0f, float hi = 1.0f) {
    Tensor t(shape);
    rng.fill_uniform(t, lo, hi);
    return t;
}

// Norm-wise relative error max|a-b| / max|b| below tol (the parity tests' measure).
inline ::testing::AssertionResult close_rel(ConstTensorView a, ConstTensorView b, double tol) {
    if (!(a.shape() == b.shape()))
        return ::testing::AssertionFailure()
               << "shape " << a.shape().str() << " vs " << b.shape().str();
    const double e = max_rel_error(a, b);
    if (e <= tol) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "max relative error " << e << " > " << tol;
}

inline ::testing::AssertionResult close_abs(ConstTensorView a, ConstTensorView b, double tol) {
    if (!(a.shape() == b.shape()))
        return ::testing::AssertionFailure()
               << "shape " << a.shape().str() << " vs " << b.shape().str();
    const double e = max_abs_diff(a, b);
    if (e <= tol) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "max abs diff " << e << " > " << tol;
}

// The message of the nazar::Error that f() throws; `none` when it throws nothing. Any other
// exception propagates (the test fails).
inline std::string error_of(const std::function<void()>& f, const std::string& none = "") {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return none;
}

// The message of the nazar::UsageError that f() throws; "" when it throws nothing. Any other
// exception propagates (the test fails).
inline std::string usage_message(const std::function<void()>& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

// A fresh, empty directory for the running test: TempDir()/nazar-<tag>-<test name>-<pid>.
// ctest runs the tests of one executable in parallel processes, so a directory shared by
// the tests of a file would be written by several of them at once.
inline std::string fresh_temp_dir(const std::string& tag) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string dir = ::testing::TempDir() + "nazar-" + tag + "-" +
                            (info ? info->name() : "none") + "-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// `n` TSV lines of the reversal task, "a c b<TAB>b c a": 2..6 letters of a..h each (the trainer
// and resume tests).
inline std::string reversal_task(int n, uint64_t seed) {
    Rng rng(seed);
    std::string out;
    for (int i = 0; i < n; ++i) {
        const int len = 2 + static_cast<int>(rng.below(5));
        std::string s[8];
        for (int k = 0; k < len; ++k) s[k] = std::string(1, static_cast<char>('a' + rng.below(8)));
        for (int k = 0; k < len; ++k) out += (k ? " " : "") + s[k];
        out += '\t';
        for (int k = len - 1; k >= 0; --k) out += s[k] + (k ? " " : "");
        out += '\n';
    }
    return out;
}

}  // namespace nazar::test
