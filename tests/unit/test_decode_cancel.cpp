// Cancellation (BeamOptions::cancelled, what the server and the Python API stop a request
// with): a sentence stops at the decoder step after the poll that returned true — it is never
// polled again and returns nothing — while the other sentences of its batch give exactly what
// they give uncancelled; a batch cancelled before it starts returns at once; an exception
// thrown by the poll (an interrupt) leaves the search.
#include "nazar/decode/beam_search.h"
#include "tests/common/beam_checks.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <vector>

namespace nazar {
namespace test_decode_cancel {
namespace {

using test::mixed_length_sentences;
using test::pad;
using test::Sources;
using test::tiny_config;

// Long searches: </s> is forbidden for the first 12 tokens, so every sentence takes >= 12 steps.
BeamOptions long_search(int beam) {
    return {.beam_size = beam,
            .n_best = beam,
            .max_length_ratio = 4,
            .max_length_extra = 16,
            .min_length = 12};
}

TEST(DecodeCancel, StopsAtTheNextStepAndLeavesTheOthersAlone) {
    for (const int beam : {1, 4}) {
        Seq2Seq m(tiny_config(), 17);
        const auto sents = mixed_length_sentences(m.config().src_vocab_size, 9);
        const BeamOptions base = long_search(beam);
        const auto want = beam_search_sorted(m, sents, base, 4);
        for (const int victim : {0, 3, 8}) {
            for (const int after : {0, 1, 5}) {  // polls answered false before the true one
                std::map<int, int> polls;
                int polls_after_true = 0;
                BeamOptions o = base;
                o.cancelled = [&](int i) {
                    const int n = polls[i]++;
                    if (i == victim && n > after) ++polls_after_true;
                    return i == victim && n >= after;
                };
                auto got = beam_search_sorted(m, sents, o, 4);
                EXPECT_EQ(polls_after_true, 0) << "polled again after it was cancelled";
                // The batch-start check polls once; then once per step while it decodes.
                EXPECT_EQ(polls[victim], after + 1) << beam << " " << victim << " " << after;
                EXPECT_TRUE(got[victim].empty());
                // The same search, up to BLAS summation order (the batch's rows changed).
                for (std::size_t i = 0; i < sents.size(); ++i) {
                    if (static_cast<int>(i) == victim) continue;
                    ASSERT_EQ(got[i].size(), want[i].size()) << i;
                    for (std::size_t k = 0; k < want[i].size(); ++k) {
                        EXPECT_EQ(got[i][k].tokens, want[i][k].tokens) << i << " " << k;
                        EXPECT_NEAR(got[i][k].log_prob, want[i][k].log_prob, 1e-4) << i;
                    }
                }
            }
        }
    }
}

TEST(DecodeCancel, ABatchCancelledBeforeItStartsReturnsNothing) {
    Seq2Seq m(tiny_config(), 5);
    const auto sents = mixed_length_sentences(m.config().src_vocab_size, 6);
    const Sources all = pad(sents);
    BeamOptions o = long_search(3);
    int polls = 0;
    o.cancelled = [&](int) { return ++polls > 0; };
    const auto got = beam_search(m, all.ids, all.lengths, all.S, o);
    ASSERT_EQ(got.size(), sents.size());
    for (const auto& h : got) EXPECT_TRUE(h.empty());
    EXPECT_EQ(polls, 6);  // the start check, once per sentence, then no step at all
}

TEST(DecodeCancel, AnExceptionFromThePollLeavesTheSearch) {
    Seq2Seq m(tiny_config(), 5);
    const auto sents = mixed_length_sentences(m.config().src_vocab_size, 6);
    BeamOptions o = long_search(2);
    int polls = 0;
    o.cancelled = [&](int) -> bool {
        if (++polls > 20) throw std::runtime_error("interrupted");
        return false;
    };
    EXPECT_THROW(beam_search_sorted(m, sents, o, 3), std::runtime_error);
    // The model is usable afterwards.
    o.cancelled = nullptr;
    EXPECT_EQ(beam_search_sorted(m, sents, o, 3).size(), sents.size());
}

}  // namespace
}  // namespace test_decode_cancel
}  // namespace nazar
