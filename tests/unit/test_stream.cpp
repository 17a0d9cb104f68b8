// Streaming greedy decoding (nazar/decode/stream.h): the same output as greedy decoding of the
// whole source, each token emitted as soon as it can be (read_i = max(read_{i−1}, j_i + 1) for a
// token attending to position j_i, the whole source for one attending nowhere), the Average
// Proportion, the Translator's and the models it refuses. Streaming beam search: the search's
// output, each token once every hypothesis has it, checked against searches of the prefixes.
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/decode/stream.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "tests/common/monotonic_decoding.h"
#include "tests/common/tiny_models.h"

#include <fmt/format.h>
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

// f(session, what) for a session of each streamable model: both decoders, three initial
// biases (readers that stop early, midway and late), three seeds.
template <class F>
void for_each_streamable(const F& f) {
    for (const DecoderKind kind : {DecoderKind::bahdanau, DecoderKind::luong})
        for (const float bias : {-0.5f, 0.0f, 1.0f})
            for (const uint64_t seed : {1, 2, 3}) {
                Seq2Seq m(streamable(kind, bias), seed);
                DecodeSession session(m);
                f(session,
                  fmt::format("{} bias {} seed {}",
                              kind == DecoderKind::luong ? "luong" : "bahdanau", bias, seed));
            }
}

}  // namespace

TEST(Stream, SameOutputAsGreedyEachTokenAsSoonAsItCanBe) {
    int early = 0, late = 0;
    for_each_streamable([&](DecodeSession& session, const std::string& model) {
        test::monotonic::expect_streaming_is_greedy(
            session, model, [&](const Hypothesis& got, const GreedyResult& want, int S_b) {
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
    });
    EXPECT_GT(early, 10) << "no token was emitted before its source ended";
    EXPECT_GT(late, 10);
}

// Beam search's recorded reads (BeamOptions::stream) at beam size 1 are what streaming greedy
// decoding, prefix by prefix, read: the recording is the simulation's.
TEST(StreamBeam, BeamOfOneReadsWhatGreedyStreamingReads) {
    for_each_streamable([](DecodeSession& session, const std::string& model) {
        for (const auto& src : test::monotonic::kStreamSources) {
            const int S_b = static_cast<int>(src.size());
            const std::vector<int> len{S_b};
            const auto got = beam_search(session, src, len, S_b, {.beam_size = 1, .stream = true});
            const Hypothesis want = stream_greedy(session, src);
            ASSERT_EQ(got[0][0].tokens, want.tokens) << model << " S_b " << S_b;
            EXPECT_EQ(got[0][0].read, want.read) << model << " S_b " << S_b;
        }
    });
}

// The checks of one streamed beam hypothesis `got` of src: reads never fall, stay within the
// source and cover the token's own stop; a token read before the source ended is checked
// against a search of the prefix read (the caller's options o, without streaming), whose best
// hypothesis must begin with it. Counts the tokens emitted early and late.
void expect_prefixes_agree(DecodeSession& session, std::span<const int32_t> src,
                           const Hypothesis& got, BeamOptions o, const std::string& what,
                           int& early, int& late) {
    const int S_b = static_cast<int>(src.size());
    o.stream = false;
    int last = std::min(S_b, 1);
    for (std::size_t i = 0; i < got.read.size(); ++i) {
        const int r = got.read[i];
        EXPECT_TRUE(last <= r && r <= S_b) << what << " token " << i;
        last = r;
        int stop = -1;  // the token's own step read up to its stop
        for (int j = 0; j < S_b; ++j)
            if (got.attention.at(static_cast<int64_t>(i), j) != 0.0f) stop = j;
        EXPECT_GE(r, stop >= 0 ? stop + 1 : S_b) << what << " token " << i;
        if (r == S_b) {
            ++late;
            continue;
        }
        ++early;
        const std::vector<int> plen{r};
        const auto prefix =
            beam_search(session, src.first(static_cast<std::size_t>(r)), plen, r, o);
        const auto& p = prefix[0][0].tokens;
        ASSERT_GT(p.size(), i) << what << " read " << r;
        EXPECT_TRUE(std::equal(got.tokens.begin(), got.tokens.begin() + i + 1, p.begin()))
            << what << " token " << i << " read " << r;
    }
}

// With a beam: the search's own output, and each token comes once every hypothesis still in the
// search begins with it. Checked from outside: a beam search over the source read so far (the
// same length limit: ratio 0) returns a best hypothesis that begins with the tokens emitted by
// then, since every step until then read only that prefix.
TEST(StreamBeam, TheSearchsOutputEachTokenOnceEveryHypothesisHasIt) {
    int early = 0, late = 0;
    for_each_streamable([&](DecodeSession& session, const std::string& model) {
        BeamOptions o{.beam_size = 4, .max_length_ratio = 0, .max_length_extra = 16};
        for (const auto& src : test::monotonic::kStreamSources) {
            const int S_b = static_cast<int>(src.size());
            const std::string what = fmt::format("{} S_b {}", model, S_b);
            const std::vector<int> len{S_b};
            o.stream = false;
            const auto want = beam_search(session, src, len, S_b, o);
            o.stream = true;
            const Hypothesis got = beam_search(session, src, len, S_b, o)[0][0];
            ASSERT_EQ(got.tokens, want[0][0].tokens) << what;
            EXPECT_EQ(got.log_prob, want[0][0].log_prob) << what;
            ASSERT_EQ(got.read.size(), got.tokens.size()) << what;
            expect_prefixes_agree(session, src, got, o, what, early, late);
        }
    });
    EXPECT_GT(early, 10) << "no token was emitted before its source ended";
    EXPECT_GT(late, 10);
}

TEST(StreamBeam, OneHypothesisOnly) {
    EXPECT_THROW(validate(BeamOptions{.beam_size = 3, .n_best = 2, .stream = true}), UsageError);
    EXPECT_NO_THROW(validate(BeamOptions{.beam_size = 3, .n_best = 1, .stream = true}));
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
