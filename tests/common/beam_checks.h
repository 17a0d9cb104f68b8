// Shared checks of the beam-search tests that compare two decoding paths bit for bit
// (tests/unit/test_decode_beam_fused.cpp, test_decode_beam_groups.cpp): sources of mixed lengths
// and the hypothesis-by-hypothesis comparison.
#pragma once

#include "nazar/decode/hypothesis.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nazar::test {

// n source sentences of lengths (5 i) mod 8, so 0..7 with an empty one first, ids in 4..V-1.
inline std::vector<std::vector<int32_t>> mixed_length_sentences(int V, int n) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> x;
        for (int t = 0; t < (i * 5) % 8; ++t)
            x.push_back(static_cast<int32_t>(4 + (i * 3 + t * 7) % (V - 4)));
        out.push_back(x);
    }
    return out;
}

// Every sentence's n-best list equal: tokens, log p, score, finished, steps and every attention
// weight, compared exactly.
inline void expect_same_hypotheses(const std::vector<std::vector<Hypothesis>>& got,
                                   const std::vector<std::vector<Hypothesis>>& want,
                                   const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].size(), want[i].size()) << what << " sentence " << i;
        for (std::size_t k = 0; k < want[i].size(); ++k) {
            const Hypothesis &a = got[i][k], &b = want[i][k];
            EXPECT_EQ(a.tokens, b.tokens) << what << " " << i << " " << k;
            EXPECT_EQ(a.log_prob, b.log_prob) << what << " " << i << " " << k;
            EXPECT_EQ(a.score, b.score) << what << " " << i << " " << k;
            EXPECT_EQ(a.finished, b.finished) << what << " " << i << " " << k;
            EXPECT_EQ(a.steps, b.steps) << what << " " << i << " " << k;
            ASSERT_EQ(a.attention.shape(), b.attention.shape()) << what;
            for (int64_t j = 0; j < a.attention.numel(); ++j)
                EXPECT_EQ(a.attention.data()[j], b.attention.data()[j]) << what;
        }
    }
}

}  // namespace nazar::test
