// Greedy decoding: a batch decodes exactly as its sentences do one by one; length limits;
// the attention rows have the sentence's own length; scores are the emitted tokens' log-probs;
// the token choice is exactly the scalar first-maximum scan.
#include "nazar/core/rng.h"
#include "nazar/decode/greedy.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace nazar {
namespace test_models_greedy {
namespace {

using test::tiny_config;

using test::pad;
using test::Sources;

TEST(Greedy, BatchEqualsSentenceBySentence) {
    const std::vector<std::vector<int32_t>> sents = {{5, 6, 7, 8, 9}, {9}, {4, 4, 6}};
    auto feed = tiny_config(DecoderKind::luong, ScoreKind::general);
    feed.decoder.input_feeding = true;
    auto lp = tiny_config(DecoderKind::luong, ScoreKind::general);
    lp.attention.local = LocalMode::predictive;
    lp.attention.window = 1;
    for (const auto& c : {tiny_config(), feed, lp}) {
        Seq2Seq m(c, 17);
        const Sources all = pad(sents);
        const auto batch = greedy_decode(m, all.ids, all.lengths, all.S,
                                         {.max_length_ratio = 2, .max_length_extra = 2});
        ASSERT_EQ(batch.size(), sents.size());
        for (std::size_t i = 0; i < sents.size(); ++i) {
            const Sources one = pad({sents[i]});
            const auto alone = greedy_decode(m, one.ids, one.lengths, one.S,
                                             {.max_length_ratio = 2, .max_length_extra = 2});
            EXPECT_EQ(batch[i].tokens, alone[0].tokens) << i;
            EXPECT_EQ(batch[i].finished, alone[0].finished);
            EXPECT_NEAR(batch[i].score, alone[0].score, 1e-4 * (1 + std::abs(alone[0].score)));
            const int n = static_cast<int>(batch[i].tokens.size());
            ASSERT_EQ(batch[i].attention.shape(),
                      Shape({n, static_cast<int64_t>(sents[i].size())}));
            EXPECT_LT(max_abs_diff(batch[i].attention, alone[0].attention), 1e-5);
            EXPECT_LE(n, 2 * static_cast<int>(sents[i].size()) + 2);
            EXPECT_LT(batch[i].score, 0);
            if (batch[i].finished) {
                EXPECT_EQ(batch[i].tokens.back(), 3);
            }
        }
    }
}

TEST(Greedy, LengthLimitsAndScoreIsSumOfStepLogProbs) {
    Seq2Seq m(tiny_config(), 17);
    DecodeSession m_s(m);
    const Sources s = pad({{5, 6, 7}});
    const auto r =
        greedy_decode(m, s.ids, s.lengths, s.S, {.max_length_ratio = 0, .max_length_extra = 2});
    ASSERT_LE(r[0].tokens.size(), 2u);
    // replay through the step API
    EncodedSource enc;
    m_s.encode(s.ids, s.lengths, s.S, enc);
    DecoderState st;
    m_s.init_state(enc, st);
    Tensor lp({1, 10});
    int32_t prev = 2;
    double score = 0;
    for (int32_t y : r[0].tokens) {
        m_s.step(std::span<const int32_t>(&prev, 1), enc, st, lp, {});
        score += lp.at(0, y);
        prev = y;
    }
    EXPECT_NEAR(score, r[0].score, 1e-5);
    EXPECT_EQ(greedy_decode(m, s.ids, s.lengths, s.S, {.max_length = 1})[0].tokens.size(), 1u);
    EXPECT_THROW(greedy_decode(m, s.ids, s.lengths, s.S, {.max_length = 0}), Error);
}

// The scan best_token stands for: best = the first allowed id; best = y when lp[y] > lp[best].
int scan_best(const std::vector<float>& lp, int pad, int bos) {
    int best = -1;
    for (int y = 0; y < static_cast<int>(lp.size()); ++y) {
        if (y == pad || y == bos) continue;
        if (best < 0 || lp[y] > lp[best]) best = y;
    }
    return best;
}

// Rows with ties, NaN, ±inf and only a few distinct values, at sizes around the vector widths
// (8 and 32 ids), with <pad> and <s> at the start, inside and at the end of the row.
TEST(Greedy, TokenChoiceIsTheFirstMaximumOfTheAllowedIds) {
    Rng rng(5);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    int checked = 0;
    for (const int V : {3, 7, 8, 9, 31, 32, 33, 64, 100, 8000})
        for (const auto& [pad, bos] : {std::pair{0, 1}, {1, 2}, {V - 1, 0}, {V / 2, V / 3 + 1}})
            for (int trial = 0; trial < 30; ++trial) {
                std::vector<float> lp(static_cast<std::size_t>(V));
                const int kinds = 1 + trial % 5;  // few distinct values: many ties
                for (float& x : lp)
                    x = -static_cast<float>(rng.below(static_cast<uint64_t>(kinds)));
                const int specials = trial % 4;
                for (int i = 0; i < specials; ++i) {
                    const float v[] = {nan, inf, -inf, 0.5f, -0.0f};
                    lp[rng.below(static_cast<uint64_t>(V))] = v[(trial + i) % 5];
                }
                if (trial == 7) std::fill(lp.begin(), lp.end(), nan);
                if (trial == 8) std::fill(lp.begin(), lp.end(), -inf);
                if (trial == 9)
                    lp[static_cast<std::size_t>(pad)] = lp[static_cast<std::size_t>(bos)] = 9;
                ASSERT_EQ(detail::best_token(lp.data(), V, pad, bos), scan_best(lp, pad, bos))
                    << "V " << V << " pad " << pad << " bos " << bos << " trial " << trial;
                ++checked;
            }
    EXPECT_EQ(checked, 10 * 4 * 30);
    const std::vector<float> two{1, 2};
    EXPECT_THROW(detail::best_token(two.data(), 2, 0, 1), Error);
}

}  // namespace
}  // namespace test_models_greedy
}  // namespace nazar
