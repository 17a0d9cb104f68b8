// WER / CER / PER / exact match on hand-computed cases (definitions in nazar/eval/wer.h).
#include "nazar/core/check.h"
#include "nazar/eval/wer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace test_eval_wer {

using namespace nazar;

namespace {
using Streams = std::vector<std::vector<std::string>>;
using Lines = std::vector<std::string>;

std::vector<uint32_t> units(std::string_view s) {
    return {s.begin(), s.end()};
}
}  // namespace

TEST(EditDistance, KittenSitting) {
    // ref "kitten" -> hyp "sitting": k/s and e/i substituted, g inserted.
    const EditCounts e = edit_distance(units("sitting"), units("kitten"));
    EXPECT_EQ(e.substitutions, 2);
    EXPECT_EQ(e.insertions, 1);
    EXPECT_EQ(e.deletions, 0);
    EXPECT_EQ(edit_distance(units(""), units("abc")).deletions, 3);
    EXPECT_EQ(edit_distance(units("ab"), units("")).insertions, 2);
    EXPECT_EQ(edit_distance(units(""), units("")).errors(), 0);
}

TEST(EditDistance, RandomSequencesAgreeWithFullMatrixDp) {
    // Oracle: the textbook (|ref|+1) x (|hyp|+1) table. The split must add up (S + D + I = total)
    // and be consistent with the lengths (I - D = |hyp| - |ref|).
    std::mt19937 gen(3);
    for (int trial = 0; trial < 500; ++trial) {
        std::vector<uint32_t> h(gen() % 9), r(gen() % 9);
        for (auto& x : h) x = gen() % 3;
        for (auto& x : r) x = gen() % 3;
        std::vector<std::vector<int64_t>> D(r.size() + 1, std::vector<int64_t>(h.size() + 1));
        for (std::size_t i = 0; i <= r.size(); ++i)
            for (std::size_t j = 0; j <= h.size(); ++j)
                D[i][j] = i == 0   ? int64_t(j)
                          : j == 0 ? int64_t(i)
                                   : std::min({D[i - 1][j - 1] + (r[i - 1] != h[j - 1]),
                                               D[i - 1][j] + 1, D[i][j - 1] + 1});
        const EditCounts e = edit_distance(h, r);
        ASSERT_EQ(e.errors(), D[r.size()][h.size()]) << "trial " << trial;
        ASSERT_EQ(e.insertions - e.deletions, int64_t(h.size()) - int64_t(r.size()))
            << "trial " << trial;
    }
}

TEST(Wer, CorpusSumsErrorsOverReferenceLength) {
    // Segment 1: "the cat sat on mat" vs "the cat sat on the mat": one deletion (ref_len 6).
    // Segment 2: "a b c d" vs "a x c": b/x substituted, d inserted (ref_len 3).
    // WER = (1 + 2) / (6 + 3) = 33.33%.
    const Lines hyps = {"the cat sat on mat", "a b c d"};
    const ErrorRate w = corpus_wer(hyps, Streams{{"the cat sat on the mat", "a x c"}});
    EXPECT_EQ(w.errors, 3);
    EXPECT_EQ(w.substitutions, 1);
    EXPECT_EQ(w.deletions, 1);
    EXPECT_EQ(w.insertions, 1);
    EXPECT_EQ(w.ref_len, 9);
    EXPECT_EQ(w.hyp_len, 9);
    EXPECT_NEAR(w.score, 100.0 / 3.0, 1e-12);
    EXPECT_EQ(w.format(), "WER = 33.33 (S = 1 D = 1 I = 1 errors = 3 ref_len = 9 segments = 2)");
}

TEST(Wer, SeveralReferencesTakeTheBestPerSegment) {
    // g2p style: two pronunciations; the second matches exactly, so it is chosen (ref_len 3).
    // Segment 2 has one reference only in stream 1 (stream 2 is empty there).
    // Segment 2: "t uw" vs "t ow": 1 substitution (ref_len 2).  WER = 1 / 5.
    const Lines hyps = {"k ae t", "t uw"};
    const Streams refs = {{"k a t", "t ow"}, {"k ae t", ""}};
    const ErrorRate w = corpus_wer(hyps, refs);
    EXPECT_EQ(w.errors, 1);
    EXPECT_EQ(w.ref_len, 5);
    EXPECT_NEAR(w.score, 20.0, 1e-12);
    // Ties keep the first reference: "a b" vs {"a", "a b c"} is one error either way -> ref_len 1.
    const ErrorRate t = corpus_wer(Lines{"a b"}, Streams{{"a"}, {"a b c"}});
    EXPECT_EQ(t.errors, 1);
    EXPECT_EQ(t.ref_len, 1);
}

TEST(Cer, CharactersWithCollapsedWhitespace) {
    // hyp "abc  d" -> units a b c ' ' d (the double space counts once); ref "abd".
    // Two insertions (c and the space): CER = 2 / 3.
    const ErrorRate c = corpus_cer(Lines{"abc  d"}, Streams{{"abd"}});
    EXPECT_EQ(c.insertions, 2);
    EXPECT_EQ(c.ref_len, 3);
    EXPECT_NEAR(c.score, 200.0 / 3.0, 1e-12);
    // Code points, not bytes: "é" vs "e" is one substitution over one character.
    const ErrorRate u = corpus_cer(Lines{"é"}, Streams{{"e"}});
    EXPECT_EQ(u.substitutions, 1);
    EXPECT_EQ(u.ref_len, 1);
    EXPECT_EQ(u.name(), "CER");
}

TEST(Per, BagOfTokens) {
    // "a b c d" vs "d c b a e": all four hypothesis tokens occur in the reference (order
    // ignored): errors = max(4, 5) - 4 = 1 (one deletion); WER would be 5 here.
    const ErrorRate p = corpus_per(Lines{"a b c d"}, Streams{{"d c b a e"}});
    EXPECT_EQ(p.errors, 1);
    EXPECT_EQ(p.deletions, 1);
    EXPECT_NEAR(p.score, 20.0, 1e-12);
    EXPECT_EQ(corpus_wer(Lines{"a b c d"}, Streams{{"d c b a e"}}).errors, 4);
    // Counts are clipped: "a a b" vs "a b b" matches a once and b once -> 1 substitution.
    const ErrorRate q = corpus_per(Lines{"a a b"}, Streams{{"a b b"}});
    EXPECT_EQ(q.errors, 1);
    EXPECT_EQ(q.substitutions, 1);
    // Best of several references.
    EXPECT_EQ(corpus_per(Lines{"x y"}, Streams{{"x z"}, {"y x"}}).errors, 0);
}

TEST(ExactMatchAccuracy, AnyReferenceAndWhitespaceInsensitive) {
    // "a  b" equals "a b" token for token; "c" matches the second reference; "d" matches none.
    const Lines hyps = {"a  b", "c", "d"};
    const Streams refs = {{"a b", "x", "y"}, {"", "c", "z"}};
    const ExactMatch m = exact_match(hyps, refs);
    EXPECT_EQ(m.correct, 2);
    EXPECT_EQ(m.segments, 3);
    EXPECT_NEAR(m.score, 200.0 / 3.0, 1e-12);
    EXPECT_EQ(m.format(), "Exact = 66.67 (correct = 2 segments = 3)");
}

TEST(ErrorRates, Errors) {
    const Lines hyps = {"a", "b"};
    EXPECT_THROW(corpus_wer(hyps, Streams{{"a"}}), Error);      // line counts differ
    EXPECT_THROW(corpus_wer(hyps, Streams{{"a", ""}}), Error);  // segment 2 has no reference
    EXPECT_THROW(exact_match(hyps, Streams{}), Error);          // no reference stream
    try {
        corpus_cer(hyps, Streams{{"a", "b"}, {"a"}});
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("2 hypotheses but reference stream 2 has 1 lines"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace test_eval_wer
