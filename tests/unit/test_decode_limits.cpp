// Output length limits with huge options (audit item 3): `--max-length-ratio 1e9` or
// `--max-length-extra 2147483640` overflowed `int` and cut every output to one token. The limit
// is computed in 64 bits and clamped to [1, max_length].
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace test_decode_limits {

using namespace nazar;
using nazar::test::tiny_config;

namespace {

// The documented formula with unbounded integers (Python's int in the PyTorch reference).
int64_t reference_limit(int S, float ratio, int extra, int max_length) {
    const double prod = static_cast<double>(ratio * static_cast<float>(S));
    const double base = std::isnan(prod) ? 0.0 : std::floor(prod);
    const double m = std::max(1.0, base + extra);
    return static_cast<int64_t>(std::min<double>(max_length, m));
}

}  // namespace

TEST(DecodeLimits, MaxOutputLengthIsComputedIn64Bits) {
    constexpr int kMax = std::numeric_limits<int>::max();
    EXPECT_EQ(max_output_length(3, 1e9f, 5, 512), 512);
    EXPECT_EQ(max_output_length(3, 2.0f, 2147483640, 512), 512);
    EXPECT_EQ(max_output_length(3, 1e9f, 2147483640, 512), 512);
    EXPECT_EQ(max_output_length(1000, 1e30f, kMax, 1 << 20), 1 << 20);
    EXPECT_EQ(max_output_length(3, std::numeric_limits<float>::infinity(), 5, 77), 77);
    // inf · 0 is NaN: an empty source counts 0, so the extra alone
    EXPECT_EQ(max_output_length(0, std::numeric_limits<float>::infinity(), 5, 512), 5);
    EXPECT_EQ(max_output_length(3, 2.0f, std::numeric_limits<int>::min(), 512), 1);
    EXPECT_EQ(max_output_length(kMax, 2.0f, kMax, kMax), kMax);
    // ordinary values: the formula, unchanged
    for (int S : {0, 1, 3, 17, 200})
        for (float ratio : {0.0f, 0.5f, 1.1f, 2.0f, 3.7f})
            for (int extra : {-10, 0, 5, 40})
                for (int max_length : {1, 7, 512})
                    EXPECT_EQ(max_output_length(S, ratio, extra, max_length),
                              reference_limit(S, ratio, extra, max_length))
                        << S << " " << ratio << " " << extra << " " << max_length;
}

TEST(DecodeLimits, HugeRatioOrExtraDecodeUpToMaxLength) {
    Seq2Seq m(tiny_config(), 7);
    const std::vector<int32_t> src = {5, 6, 7, 8};
    const std::vector<int> lengths = {4};
    constexpr int kMaxLength = 9;
    // The same limit (9) stated plainly: ratio 0, extra 9.
    const auto plain = greedy_decode(
        m, src, lengths, 4,
        {.max_length_ratio = 0.0f, .max_length_extra = kMaxLength, .max_length = kMaxLength});
    ASSERT_GT(plain[0].tokens.size(), 1u) << "the test needs an output longer than one token";
    const auto beam_plain = beam_search(m, src, lengths, 4,
                                        {.beam_size = 3,
                                         .max_length_ratio = 0.0f,
                                         .max_length_extra = kMaxLength,
                                         .max_length = kMaxLength});
    ASSERT_GT(beam_plain[0][0].tokens.size(), 1u);
    struct Case {
        float ratio;
        int extra;
    };
    for (const Case c : {Case{1e9f, 5}, Case{2.0f, 2147483640}, Case{1e9f, 2147483640}}) {
        const auto g = greedy_decode(
            m, src, lengths, 4,
            {.max_length_ratio = c.ratio, .max_length_extra = c.extra, .max_length = kMaxLength});
        EXPECT_EQ(g[0].tokens, plain[0].tokens) << c.ratio << " " << c.extra;
        const auto b = beam_search(m, src, lengths, 4,
                                   {.beam_size = 3,
                                    .max_length_ratio = c.ratio,
                                    .max_length_extra = c.extra,
                                    .max_length = kMaxLength});
        EXPECT_EQ(b[0][0].tokens, beam_plain[0][0].tokens) << c.ratio << " " << c.extra;
    }
}

// Hypothesis::steps is the number of decoder steps its own sentence ran (what `nazar bench
// decode` counts for its bandwidth roofline): at least the hypothesis's length, at most the
// sentence's limit, equal to the length for a hypothesis cut at the limit, and per sentence,
// not per batch.
TEST(DecodeLimits, BeamHypothesisStepsAreItsSentencesSteps) {
    Seq2Seq m(tiny_config(), 7);
    const std::vector<int32_t> src = {5, 6, 7, 8, 5, 0, 0, 0};  // lengths 4 and 1, padded
    const std::vector<int> lengths = {4, 1};
    // limits: 2 · 4 + 1 = 9 and 2 · 1 + 1 = 3
    const auto out = beam_search(m, src, lengths, 4,
                                 {.beam_size = 3,
                                  .n_best = 3,
                                  .max_length_ratio = 2.0f,
                                  .max_length_extra = 1,
                                  .max_length = 64});
    ASSERT_EQ(out.size(), 2u);
    const int limits[2] = {9, 3};
    for (int b = 0; b < 2; ++b) {
        ASSERT_FALSE(out[b].empty());
        const int steps = out[b][0].steps;
        EXPECT_GE(steps, 1);
        EXPECT_LE(steps, limits[b]);
        for (const Hypothesis& h : out[b]) {
            EXPECT_EQ(h.steps, steps) << "sentence " << b;
            EXPECT_GE(h.steps, static_cast<int>(h.tokens.size())) << "sentence " << b;
            if (!h.finished) {
                EXPECT_EQ(h.steps, static_cast<int>(h.tokens.size()));
            }
        }
    }
}

}  // namespace test_decode_limits
