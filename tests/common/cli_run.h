// What the end-to-end tests that run the `nazar` binary share: its path, running a shell
// command for its exit status, and reading / writing the files they exchange.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace nazar::test {

inline const std::string kNazarBin = std::string(NAZAR_BINARY_DIR) + "/nazar";

// A path in the test temp dir private to this process: ctest runs each TEST in its own
// process, in parallel, and shared paths would let one read another's half-written file.
inline std::string process_tmp(const std::string& tag, const std::string& name) {
    return testing::TempDir() + "/nazar_" + tag + "_" + std::to_string(::getpid()) + "_" + name;
}

// The exit status of `cmd` under /bin/sh (-1: killed by a signal).
inline int sh(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    return lines;
}

inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

inline void write_lines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const std::string& l : lines) f << l << '\n';
}

}  // namespace nazar::test
