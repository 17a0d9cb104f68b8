// Alignment error rate on hand-computed cases (definitions in nazar/eval/aer.h).
#include "nazar/core/check.h"
#include "nazar/eval/aer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace test_eval_aer {

using namespace nazar;

namespace {
using Lines = std::vector<std::string>;
}

TEST(Aer, ParsesSureAndPossibleLinks) {
    const GoldAlignment g = parse_gold_alignment("2-1 0-0 1?1", "3?3 0-0");
    EXPECT_EQ(g.sure, (std::vector<AlignmentLink>{{0, 0}, {2, 1}}));
    EXPECT_EQ(g.possible, (std::vector<AlignmentLink>{{0, 0}, {1, 1}, {2, 1}, {3, 3}}));  // S ⊆ P
    EXPECT_EQ(parse_hard_alignment("1-2 0-0 1-2"),
              (std::vector<AlignmentLink>{{0, 0}, {1, 2}}));  // a set
    EXPECT_TRUE(parse_hard_alignment("  ").empty());
}

TEST(Aer, SentenceWithPossibleLinksOnTheSameLine) {
    // A = {0-0, 1-1, 2-2}; S = {0-0, 2-1}; P = {0-0, 1-1, 2-1}.
    // |A∩S| = 1, |A∩P| = 2  ->  AER = 1 - (1 + 2) / (3 + 2) = 0.4;  precision 2/3, recall 1/2.
    const AerScore s = corpus_aer(Lines{"0-0 1-1 2-2"}, Lines{"0-0 1?1 2-1"});
    EXPECT_EQ(s.hyp_and_sure, 1);
    EXPECT_EQ(s.hyp_and_possible, 2);
    EXPECT_NEAR(s.score, 40.0, 1e-12);
    EXPECT_NEAR(s.precision, 200.0 / 3.0, 1e-12);
    EXPECT_NEAR(s.recall, 50.0, 1e-12);
}

TEST(Aer, CorpusSumsCountsAndReadsAPossibleFile) {
    // Sentence 1 as above. Sentence 2: A = {0-1, 1-0}, gold S = {0-1}, possible file adds
    // {1-0, 1-1}: |A∩S| = 1, |A∩P| = 2, |A| = 2, |S| = 1 (AER 0 on its own).
    // Corpus: 1 - (2 + 4) / (5 + 3) = 0.25; precision 4/5, recall 2/3.
    const Lines hyp = {"0-0 1-1 2-2", "0-1 1-0"};
    const Lines gold = {"0-0 1?1 2-1", "0-1"};
    const Lines possible = {"", "1-0 1?1"};
    const AerScore s = corpus_aer(hyp, gold, possible);
    EXPECT_EQ(s.hyp_links, 5);
    EXPECT_EQ(s.sure_links, 3);
    EXPECT_EQ(s.possible_links, 6);
    EXPECT_NEAR(s.score, 25.0, 1e-12);
    EXPECT_NEAR(s.precision, 80.0, 1e-12);
    EXPECT_NEAR(s.recall, 200.0 / 3.0, 1e-12);
    EXPECT_EQ(
        s.format(),
        "AER = 25.00 (precision = 80.00 recall = 66.67 |A| = 5 |S| = 3 |P| = 6 segments = 2)");
    // Perfect: A = S = P.
    EXPECT_EQ(corpus_aer(Lines{"0-0 1-1"}, Lines{"1-1 0-0"}).score, 0.0);
    // Nothing aligned anywhere: defined as 0.
    EXPECT_EQ(corpus_aer(Lines{""}, Lines{""}).score, 0.0);
}

TEST(Aer, Errors) {
    EXPECT_THROW(corpus_aer(Lines{"0?1"}, Lines{"0-1"}), Error);  // hypotheses are hard links
    EXPECT_THROW(corpus_aer(Lines{"0-x"}, Lines{"0-1"}), Error);
    EXPECT_THROW(corpus_aer(Lines{"-1"}, Lines{"0-1"}), Error);
    EXPECT_THROW(corpus_aer(Lines{"0-1"}, Lines{"0-1 2"}), Error);
    EXPECT_THROW(corpus_aer(Lines{"0-1", "0-0"}, Lines{"0-1"}), Error);
    EXPECT_THROW(corpus_aer(Lines{"0-1"}, Lines{"0-1"}, Lines{"", ""}), Error);
    try {
        corpus_aer(Lines{"0-0", "3-y"}, Lines{"0-0", "0-0"});
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(
            std::string(e.what()).find("hypothesis alignment line 2: bad alignment link '3-y'"),
            std::string::npos)
            << e.what();
    }
}

}  // namespace test_eval_aer
