// Decoding checks shared by the monotonic attention and MoChA model tests
// (tests/unit/test_monotonic_models.cpp, test_mocha_models.cpp, test_stream.cpp): forced
// alignment against the teacher-forced scores, and streaming against greedy decoding.
#pragma once

#include "nazar/decode/alignment.h"
#include "nazar/decode/greedy.h"
#include "nazar/decode/stream.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace nazar::test::monotonic {

// Forced alignment of each pair's target (its steps take the expected alignment) scores what
// TrainPass::score gives the pair; returns the forced results for further checks.
inline std::vector<ForcedAlignment> expect_forced_is_teacher_forced(Seq2Seq& m,
                                                                    DecodeSession& session,
                                                                    const Batch& b) {
    std::vector<double> want(b.B);
    TrainPass(m).score(b, want);
    std::vector<std::vector<int32_t>> targets(b.B);
    for (int r = 0; r < b.B; ++r)
        for (int t = 0; t + 1 < b.tgt_lengths[r]; ++t) targets[r].push_back(b.tgt_out_at(r, t));
    auto forced = forced_alignment(session, b.src, b.src_lengths, b.S, targets);
    for (int r = 0; r < b.B; ++r)
        EXPECT_NEAR(forced[r].log_prob, want[r], 1e-5 * std::abs(want[r])) << "pair " << r;
    return forced;
}

// Sources for the streaming tests: long, short, one token, empty, a run of one token.
inline const std::vector<std::vector<int32_t>> kStreamSources{
    {5, 6, 7, 8, 9, 4, 5}, {9, 5}, {4, 4, 6}, {7}, {}, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8}};

// Streaming greedy decoding of each of kStreamSources gives greedy decoding's tokens and log p;
// check(got, want, S_b) then compares the rest. what: named in the failures.
template <class Check>
void expect_streaming_is_greedy(DecodeSession& session, const std::string& what,
                                const Check& check) {
    for (const auto& src : kStreamSources) {
        const int S_b = static_cast<int>(src.size());
        const std::vector<int> len{S_b};
        const auto want = greedy_decode(session, src, len, S_b);
        const Hypothesis got = stream_greedy(session, src);
        ASSERT_EQ(got.tokens, want[0].tokens) << what << " S_b " << S_b;
        EXPECT_NEAR(got.log_prob, want[0].score, 1e-5) << what << " S_b " << S_b;
        ASSERT_EQ(got.read.size(), got.tokens.size()) << what;
        check(got, want[0], S_b);
    }
}

}  // namespace nazar::test::monotonic
