#include "cli/version.h"

#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#ifndef NAZAR_VERSION
#error "NAZAR_VERSION is defined by CMakeLists.txt (the project's version)"
#endif

namespace nazar::cli {

const char* version_number() {
    return NAZAR_VERSION;
}

std::string version_text() {
    // The distinct kernels the products of this machine run on, in gemm_paths()'s order.
    std::vector<std::string> kernels;
    for (const GemmPathRow& r : gemm_paths()) {
        std::string k = fmt::format("{} ({}{}{})", r.path.kernel, r.path.isa,
                                    r.path.detail.empty() ? "" : ", ", r.path.detail);
        if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
    }
    const CpuFeatures& cpu = cpu_features();
    return fmt::format(
        "nazar {} (commit {})\n"
        "GEMM library: {}\n"
        "GEMM kernels: {}\n"
        "CPU: {}",
        version_number(), kGitCommit, blas_description(), fmt::join(kernels, "; "), cpu.summary());
}

}  // namespace nazar::cli
