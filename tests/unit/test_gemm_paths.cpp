// The GEMM path is chosen from the CPU's feature bits (core/cpu_features.h, core/gemm/paths.cpp),
// never from a table of CPU models: on the running CPU, a large product runs the library tier
// its features call for, and a forced-slow configuration in a child process
// (OPENBLAS_CORETYPE=Prescott, NAZAR_ISA=avx2) is either corrected (the child still runs the
// expected tier) or reported exactly once on stderr. No timing anywhere.
#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"
#include "tests/common/child_process.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace nazar {
namespace test_gemm_paths {
namespace {

constexpr const char* kChildVar = "NAZAR_TEST_GEMM_PATH_CHILD";
constexpr const char* kReport = "nazar: large GEMM products run";

// Written out from the features here, not taken from the code under test.
std::string tier_the_features_call_for(const CpuFeatures& f) {
    if (f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl) return "avx512";
    if (f.avx2 && f.fma) return "avx2";
    return "below-avx2";
}

bool naive_build() {
    return gemm_path(false, false, 2048, 2048, 2048).isa == "naive";
}

// A product above 512 rows (the library's path), checked against the oracle.
void run_large_product() {
    const int M = 600, N = 96, K = 80;
    Rng rng(3);
    std::vector<float> A(M * K), B(K * N), C(M * N), R(M * N);
    for (auto* v : {&A, &B})
        for (float& x : *v) x = rng.uniform(-1, 1);
    gemm_raw(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
    gemm_naive(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, R.data(), N);
    for (int i = 0; i < M * N; ++i) ASSERT_NEAR(C[i], R[i], 1e-3f) << "entry " << i;
}

TEST(GemmPath, ExpectedTierFollowsTheFeatureBits) {
    EXPECT_EQ(gemm_expected_isa(), tier_the_features_call_for(cpu_features()));
}

TEST(GemmPath, LargeProductRunsTheTierTheFeaturesCallFor) {
    if (naive_build()) GTEST_SKIP() << "naive build: no GEMM library";
    if (!switches().isa.empty()) GTEST_SKIP() << "NAZAR_ISA is set for this run";
    run_large_product();
    const GemmPath p = gemm_path(false, false, 2048, 2048, 2048);
    // OpenBLAS (a comparison build) takes its core from its model table: there a mismatch is
    // allowed here, and ForcedSlowOpenBlasCore checks that it is reported.
    if (p.kernel == "OpenBLAS" && p.isa != gemm_expected_isa()) return;
    EXPECT_EQ(p.isa, tier_the_features_call_for(cpu_features())) << p.kernel << " " << p.detail;
}

// Runs only as the child of the tests below: two large products, then the path on stdout.
TEST(GemmPath, ChildReport) {
    if (std::getenv(kChildVar) == nullptr) GTEST_SKIP() << "runs only as a child process";
    run_large_product();
    run_large_product();
    const GemmPath p = gemm_path(false, false, 2048, 2048, 2048);
    std::printf("\nPATH %s %s\n", p.isa.c_str(), p.kernel.c_str());
}

using test::ChildOutput;

ChildOutput run_child(const std::string& env) {
    return test::run_this_program(
        "-u NAZAR_ISA -u OPENBLAS_CORETYPE " + env + " " + kChildVar + "=1", "GemmPath.ChildReport",
        "gemm_path");
}

std::string child_tier(const ChildOutput& c) {
    const auto p = c.out.find("\nPATH ");
    if (p == std::string::npos) return "";
    const auto b = p + 6;
    return c.out.substr(b, c.out.find(' ', b) - b);
}

TEST(GemmPath, ForcedSlowOpenBlasCoreIsCorrectedOrReportedOnce) {
    if (naive_build()) GTEST_SKIP() << "naive build: no GEMM library";
    const ChildOutput c = run_child("OPENBLAS_CORETYPE=Prescott");
    const std::string tier = child_tier(c);
    ASSERT_FALSE(tier.empty()) << c.out << c.err;
    const int reports = test::occurrences(c.err, kReport);
    if (tier == gemm_expected_isa())
        EXPECT_EQ(reports, 0) << "corrected, yet reported: " << c.err;
    else
        EXPECT_EQ(reports, 1) << "tier " << tier << " not reported exactly once: " << c.err;
}

TEST(GemmPath, IsaCapBelowTheCpuIsReportedOnce) {
    if (naive_build()) GTEST_SKIP() << "naive build: no GEMM library";
    if (gemm_expected_isa() != "avx512") GTEST_SKIP() << "no AVX-512 here: the cap changes nothing";
    const ChildOutput c = run_child("NAZAR_ISA=avx2");
    const std::string tier = child_tier(c);
    ASSERT_FALSE(tier.empty()) << c.out << c.err;
    EXPECT_NE(tier, "avx512");
    EXPECT_EQ(test::occurrences(c.err, kReport), 1) << c.err;
    EXPECT_EQ(test::occurrences(c.err, "NAZAR_ISA=avx2"), 1) << c.err;
}

}  // namespace
}  // namespace test_gemm_paths
}  // namespace nazar
