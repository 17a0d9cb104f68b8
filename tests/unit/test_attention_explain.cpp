// `nazar explain` prints docs/spec.md §10's corrected weights and docs/spec.md §9's counts at the
// default sizes. Runs the built CLI (make test builds every target before ctest runs).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace test_attention_explain {

namespace {
std::string run(const std::string& args) {
    const std::string exe = std::string(NAZAR_BINARY_DIR) + "/nazar";
    if (!std::filesystem::exists(exe)) return "";
    std::string out;
    FILE* p = popen((NAZAR_TARGET_RUNNER + exe + " " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    if (p) pclose(p);
    return out;
}
}  // namespace

TEST(AttentionExplain, PrintsSpecExamplesAndCosts) {
    const std::string out = run("explain --no-measure");
    if (out.empty()) GTEST_SKIP() << "nazar CLI not built in " << NAZAR_BINARY_DIR;
    for (const char* want : {"0.1477", "0.7314", "0.1209", "0.0685", "0.6831", "0.0459", "0.1685",
                             "0.0340", "W_a (key.weight) 256x512", "[s_t; c_t] 768", "W_c 256x768",
                             "s̃_t 256", "6553600", "13107200", "156672", "575488", "13.1M"})
        EXPECT_NE(out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << out;
}

TEST(AttentionExplain, OtherSizesAndDotMismatch) {
    const std::string out =
        run("explain --no-measure --src-len 10 --dec-dim 256 --enc-dim 512 --att-dim 64");
    if (out.empty()) GTEST_SKIP() << "nazar CLI not built in " << NAZAR_BINARY_DIR;
    EXPECT_NE(out.find("U_a H = S·A·C = 327680"), std::string::npos) << out;  // 10·64·512
    EXPECT_NE(out.find("needs H == C (got H=256, C=512)"), std::string::npos) << out;
    EXPECT_NE(run("explain --src-len 0").find("src-len"), std::string::npos);
}

}  // namespace test_attention_explain
