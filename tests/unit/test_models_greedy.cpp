// Greedy decoding: a batch decodes exactly as its sentences do one by one; length limits;
// the attention rows have the sentence's own length; scores are the emitted tokens' log-probs.
#include "nazar/decode/greedy.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>

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
    const Sources s = pad({{5, 6, 7}});
    const auto r =
        greedy_decode(m, s.ids, s.lengths, s.S, {.max_length_ratio = 0, .max_length_extra = 2});
    ASSERT_LE(r[0].tokens.size(), 2u);
    // replay through the step API
    EncodedSource enc;
    m.encode(s.ids, s.lengths, s.S, enc);
    DecoderState st;
    m.init_state(enc, st);
    Tensor lp({1, 10});
    int32_t prev = 2;
    double score = 0;
    for (int32_t y : r[0].tokens) {
        m.step(std::span<const int32_t>(&prev, 1), enc, st, lp, {});
        score += lp.at(0, y);
        prev = y;
    }
    EXPECT_NEAR(score, r[0].score, 1e-5);
    EXPECT_EQ(greedy_decode(m, s.ids, s.lengths, s.S, {.max_length = 1})[0].tokens.size(), 1u);
    EXPECT_THROW(greedy_decode(m, s.ids, s.lengths, s.S, {.max_length = 0}), Error);
}

}  // namespace
}  // namespace test_models_greedy
}  // namespace nazar
