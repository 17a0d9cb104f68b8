// chrF against sacreBLEU's own published numbers. Every expected value cites repository
// mjpost/sacrebleu, the file and the test (or README section) it comes from; the code under
// test is written from the definitions (chrf.h).
#include "nazar/core/check.h"
#include "nazar/eval/chrf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace test_eval_chrf {

using namespace nazar;

namespace {

using Streams = std::vector<std::vector<std::string>>;

double chrf(std::vector<std::string> hyps, std::vector<std::string> refs, ChrfOptions opt) {
    return corpus_chrf(hyps, Streams{std::move(refs)}, opt).score;
}

// test/test_chrf.py uses char_order=6, word_order=0, beta=3 and toggles eps_smoothing.
constexpr ChrfOptions kBeta3Eps{.beta = 3, .eps_smoothing = true};
constexpr ChrfOptions kBeta3{.beta = 3, .eps_smoothing = false};

}  // namespace

TEST(Chrf, ReadmeCorpusDefault) {
    // README.md "Python API": CHRF().corpus_score(sys, refs) -> "chrF2 = 59.73" (two reference
    // streams, so this also checks the best-reference-per-segment rule).
    const std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.",
                                           "The man had just bitten him."};
    const Streams refs = {
        {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
        {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
    };
    const ChrfScore s = corpus_chrf(hyps, refs);
    EXPECT_EQ(s.format(), "chrF2 = 59.73");
    EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:nazar-0.1.0");
}

TEST(Chrf, EpsSmoothingCases) {
    // test/test_chrf.py test_cases (test_chrf, eps_smoothing=True, EPSILON 1e-4).
    EXPECT_NEAR(chrf({"abcdefg"}, {"hijklmnop"}, kBeta3Eps), 0.0, 1e-4);
    EXPECT_NEAR(chrf({"a"}, {"b"}, kBeta3Eps), 0.0, 1e-4);
    EXPECT_NEAR(chrf({""}, {"b"}, kBeta3Eps), 0.0, 1e-4);
    EXPECT_NEAR(chrf({""}, {"ref"}, kBeta3Eps), 0.0, 1e-4);
    EXPECT_NEAR(chrf({""}, {"reference"}, kBeta3Eps), 0.0, 1e-4);
    EXPECT_NEAR(chrf({"aa"}, {"ab"}, kBeta3Eps), 8.3333, 1e-4);
    EXPECT_NEAR(chrf({"a", "b"}, {"a", "c"}, kBeta3Eps), 8.3333, 1e-4);
    EXPECT_NEAR(chrf({"a"}, {"a"}, kBeta3Eps), 16.6667, 1e-4);
    EXPECT_NEAR(chrf({"a b c"}, {"a b c"}, kBeta3Eps), 50.0, 1e-4);
    EXPECT_NEAR(chrf({"a b c"}, {"abc"}, kBeta3Eps), 50.0, 1e-4);
    EXPECT_NEAR(chrf({" risk assessment must be made of those who are qualified and expertise in "
                      "the sector - these "
                      "are the scientists ."},
                     {"risk assessment has to be undertaken by those who are qualified and expert "
                      "in that area - "
                      "that is the scientists ."},
                     kBeta3Eps),
                63.361730, 1e-4);
    EXPECT_NEAR(
        chrf({" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
             {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
             kBeta3Eps),
        64.1302698, 1e-4);
    EXPECT_NEAR(chrf({"Niemand hat die Absicht, eine Mauer zu errichten"},
                     {"Niemand hat die Absicht, eine Mauer zu errichten"}, kBeta3Eps),
                100.0, 1e-4);
}

TEST(Chrf, EffectiveOrderCases) {
    // test/test_chrf.py test_cases_effective_order (test_chrf_eff_order, eps_smoothing=False).
    EXPECT_NEAR(chrf({"a"}, {"a"}, kBeta3), 100.0, 1e-4);
    EXPECT_NEAR(chrf({""}, {"reference"}, kBeta3), 0.0, 1e-4);
    EXPECT_NEAR(chrf({"a b c"}, {"a b c"}, kBeta3), 100.0, 1e-4);
    EXPECT_NEAR(chrf({"a b c"}, {"abc"}, kBeta3), 100.0, 1e-4);
    EXPECT_NEAR(chrf({""}, {"c"}, kBeta3), 0.0, 1e-4);
    EXPECT_NEAR(chrf({"a", "b"}, {"a", "c"}, kBeta3), 50.0, 1e-4);
    EXPECT_NEAR(chrf({"aa"}, {"ab"}, kBeta3), 25.0, 1e-4);
}

TEST(Chrf, KeepWhitespace) {
    // test/test_chrf.py test_cases_keep_whitespace (test_chrf_keep_whitespace: beta=3,
    // whitespace kept, sacreBLEU's default eps_smoothing=False).
    const ChrfOptions opt{.beta = 3, .whitespace = true};
    EXPECT_NEAR(
        chrf({"Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."},
             {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
             opt),
        67.3481606, 1e-4);
    EXPECT_NEAR(chrf({"risk assessment must be made of those who are qualified and expertise in "
                      "the sector - these are "
                      "the scientists ."},
                     {"risk assessment has to be undertaken by those who are qualified and expert "
                      "in that area - that "
                      "is the scientists ."},
                     opt),
                65.2414427, 1e-4);
}

TEST(Chrf, SentenceLevelChrf2) {
    // test/test_chrf.py test_sentence_level_chrf: sentence_chrf(hyp, refs, eps_smoothing=True),
    // otherwise defaults (chrF2, 6 character orders).
    const ChrfOptions opt{.eps_smoothing = true};
    struct Case {
        const char* hyp;
        const char* ref;
        double expected;
    };
    const Case cases[] = {
        {"Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
         "Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.",
         39.14078509},
        {"Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
         "A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.", 31.22557079},
        {"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
         "Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.",
         57.15704367},
    };
    for (const Case& c : cases) {
        const std::vector<std::string> refs = {c.ref};
        EXPECT_NEAR(sentence_chrf(c.hyp, refs, opt).score, c.expected, 1e-4) << c.hyp;
    }
}

TEST(Chrf, HandCheckedChrfPlusPlus) {
    // chrF++ (word_order = 2), computed by hand from the definitions in chrf.h:
    // hyp "ab." -> chars a b . ; words "ab" "." (the trailing period is split off).
    // ref "ab"  -> chars a b   ; words "ab".
    // char order 1: hyp 3, ref 2, match 2;  order 2: hyp 2 (ab, b.), ref 1, match 1;
    // order 3: ref has none -> hyp counted as 0 ; orders 4-6: nothing.
    // word order 1: hyp 2, ref 1, match 1;  word order 2: ref has none -> 0.
    // Effective orders: c1 (P 2/3, R 1), c2 (P 1/2, R 1), w1 (P 1/2, R 1):
    //   P = 5/9, R = 1, F2 = 5 P R / (4 P + R) = (25/9) / (29/9) = 25/29.
    const ChrfOptions opt{.word_order = 2};
    const ChrfStats st = corpus_chrf_stats(std::vector<std::string>{"ab."}, Streams{{"ab"}}, opt);
    const std::vector<int64_t> expected = {3, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0};
    EXPECT_EQ(st.counts, expected);
    const ChrfScore s = chrf_from_stats(st, opt);
    EXPECT_NEAR(s.score, 100.0 * 25.0 / 29.0, 1e-9);
    EXPECT_EQ(s.name(), "chrF2++");
}

TEST(Chrf, BestReferenceWinsAndErrors) {
    // With two references the exact one is chosen: 100.
    const std::vector<std::string> hyp = {"kitten"};
    EXPECT_NEAR(corpus_chrf(hyp, Streams{{"sitting"}, {"kitten"}}).score, 100.0, 1e-12);
    EXPECT_THROW(corpus_chrf(hyp, Streams{{"a", "b"}}), Error);
    EXPECT_THROW(corpus_chrf(hyp, Streams{{"a"}}, {.char_order = 0}), Error);
    EXPECT_THROW(chrf_from_counts(std::vector<int64_t>{1, 2}, {}), Error);
}

}  // namespace test_eval_chrf
