// Runs this test program again as a child process, with environment changes, on one test (the
// child-only tests that report what the environment did), and returns what it wrote. For the
// settings read once per process (NAZAR_ISA, OPENBLAS_CORETYPE, NAZAR_BLOCK_CACHE_MB).
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace nazar::test {

struct ChildOutput {
    std::string out, err;
};

inline std::string slurp_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `env <env_args> <this program> --gtest_filter=<filter>`; env_args is shell text (quote values).
// The child's exit status must be 0.
inline ChildOutput run_this_program(const std::string& env_args, const std::string& filter,
                                    const std::string& tag) {
    char exe[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return {};
    const std::string base =
        ::testing::TempDir() + "nazar_" + tag + "_child_" + std::to_string(getpid());
    // the child runs its one test whatever sharding the parent was run with
    const std::string cmd =
        "env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE " + env_args +
        " " NAZAR_TARGET_RUNNER "'" + exe + "' --gtest_filter=" + filter + " >" + base + ".out 2>" +
        base + ".err";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ChildOutput c{slurp_file(base + ".out"), slurp_file(base + ".err")};
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return c;
}

// How many times `what` occurs in s.
inline int occurrences(const std::string& s, const std::string& what) {
    int k = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++k;
    return k;
}

}  // namespace nazar::test
