// Streaming greedy decoding (nazar/decode/stream.h): the same output as greedy decoding of the
// whole source, each token emitted as soon as it can be (read_i = max(read_{i−1}, j_i + 1) for a
// token attending to position j_i, the whole source for one attending nowhere), the Average
// Proportion, the Translator's and the models it refuses.
#include "nazar/decode/greedy.h"
#include "nazar/decode/stream.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "tests/common/monotonic_decoding.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace nazar {
namespace test_stream {
namespace {

ModelConfig streamable(DecoderKind kind, float bias) {
    auto c = test::tiny_config(
        kind, kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive);
    c.encoder.bidirectional = false;
    c.decoder.hidden_size = 3;
    c.decoder.bridge = BridgeKind::zero;
    c.attention.monotonic = true;
    c.attention.monotonic_bias_init = bias;
    return c;
}

}  // namespace

TEST(Stream, SameOutputAsGreedyEachTokenAsSoonAsItCanBe) {
    int early = 0, late = 0;
    for (const DecoderKind kind : {DecoderKind::bahdanau, DecoderKind::luong})
        for (const float bias : {-0.5f, 0.0f, 1.0f})
            for (const uint64_t seed : {1, 2, 3}) {
                Seq2Seq m(streamable(kind, bias), seed);
                DecodeSession session(m);
                test::monotonic::expect_streaming_is_greedy(
                    session, "seed " + std::to_string(seed),
                    [&](const Hypothesis& got, const GreedyResult& want, int S_b) {
                        int last = std::min(S_b, 1);
                        for (std::size_t i = 0; i < got.read.size(); ++i) {
                            int at = -1;  // the one-hot row's position
                            for (int j = 0; j < S_b; ++j) {
                                EXPECT_EQ(got.attention.at(i, j), want.attention.at(i, j));
                                if (got.attention.at(i, j) == 1.0f) at = j;
                            }
                            const int expect = at >= 0 ? std::max(last, at + 1) : S_b;
                            EXPECT_EQ(got.read[i], expect) << "token " << i << " of S_b " << S_b;
                            last = got.read[i];
                            (got.read[i] < S_b ? early : late) += 1;
                        }
                    });
            }
    EXPECT_GT(early, 10) << "no token was emitted before its source ended";
    EXPECT_GT(late, 10);
}

TEST(Stream, AverageProportion) {
    EXPECT_DOUBLE_EQ(average_proportion(std::vector<int>{1, 2, 4, 4}, 4), 11.0 / 16.0);
    EXPECT_DOUBLE_EQ(average_proportion(std::vector<int>{}, 4), 0.0);
    EXPECT_DOUBLE_EQ(average_proportion(std::vector<int>{0}, 0), 0.0);
}

TEST(Stream, RefusesModelsWhoseOutputReadsAheadOfTheInput) {
    EXPECT_NO_THROW(check_streamable(streamable(DecoderKind::bahdanau, 0.0f)));
    auto soft = streamable(DecoderKind::bahdanau, 0.0f);
    soft.attention.monotonic = false;
    EXPECT_THROW(check_streamable(soft), UsageError);
    auto bidir = streamable(DecoderKind::bahdanau, 0.0f);
    bidir.encoder.bidirectional = true;
    EXPECT_THROW(check_streamable(bidir), UsageError);
    auto mean = streamable(DecoderKind::bahdanau, 0.0f);
    mean.decoder.bridge = BridgeKind::mean;
    EXPECT_THROW(check_streamable(mean), UsageError);
    Seq2Seq m(bidir, 1);
    DecodeSession session(m);
    EXPECT_THROW(stream_greedy(session, std::vector<int32_t>{5, 6}), UsageError);
}

}  // namespace test_stream
}  // namespace nazar
