// What `nazar --version` prints: the release, the git commit the binary was built from (captured
// at build time by cmake/build_info.cmake; "unknown" outside a git checkout) and what this machine
// runs: the GEMM library and kernels, chosen at run time from the CPU's feature bits (the same
// detection `nazar bench cpu` reports, nazar/core/cpu_features.h and blas.h).
#pragma once

#include <string>

namespace nazar::cli {

extern const char kGitCommit[];  // generated at build time (cmake/build_info.cmake)

// "0.1.0" (the CMake project's version).
const char* version_number();

// Several lines: "nazar 0.1.0 (commit abc123def456)", then the GEMM back-ends and CPU features.
std::string version_text();

}  // namespace nazar::cli
