// BLEU against sacreBLEU's own published numbers. Every expected value cites where it comes
// from: repository mjpost/sacrebleu, file, and test (or README section). The numbers are
// sacreBLEU's; the code under test is written from the definitions (bleu.h).
#include "nazar/core/check.h"
#include "nazar/eval/bleu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace test_eval_bleu {

using namespace nazar;

namespace {

using Streams = std::vector<std::vector<std::string>>;

// mjpost/sacrebleu README.md ("Python API" example) and test/test_bleu.py (_hyps, _refs).
const std::vector<std::string> kHyps = {"The dog bit the man.", "It wasn't surprising.",
                                        "The man had just bitten him."};
const Streams kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
};

// sacreBLEU's raw_corpus_bleu: floor smoothing, no tokenization, effective order.
BleuOptions raw(double floor) {
    return {.smooth_method = BleuSmooth::floor,
            .smooth_value = floor,
            .tokenize = BleuTokenize::none,
            .effective_order = true};
}

}  // namespace

TEST(Bleu, CorpusDefaultsMatchSacrebleu) {
    const BleuScore s = corpus_bleu(kHyps, kRefs);
    EXPECT_NEAR(s.score, 48.530827, 1e-6);  // test/test_bleu.py test_corpus_bleu (default settings)
    // README.md "Python API": the full line and the signature (our version field differs).
    EXPECT_EQ(
        s.format(),
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
    EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:nazar-0.1.0");
    EXPECT_EQ(s.counts, (std::vector<int64_t>{14, 7, 5, 3}));  // 82.4% of 17, 50% of 14, ...
    EXPECT_EQ(s.totals, (std::vector<int64_t>{17, 14, 11, 8}));
}

TEST(Bleu, CorpusVariants) {
    // test/test_bleu.py test_corpus_bleu: tokenize 'none', tokenize '13a', smooth 'none'.
    EXPECT_NEAR(corpus_bleu(kHyps, kRefs, {.tokenize = BleuTokenize::none}).score, 49.1919566,
                1e-6);
    EXPECT_NEAR(corpus_bleu(kHyps, kRefs, {.tokenize = BleuTokenize::mteval_13a}).score, 48.530827,
                1e-6);
    EXPECT_NEAR(corpus_bleu(kHyps, kRefs, {.smooth_method = BleuSmooth::none}).score, 48.530827,
                1e-6);
    // test/test_bleu.py test_corpus_bleu: "ensure that empty hypotheses are not removed".
    const std::vector<std::string> empty = {"", "", ""};
    EXPECT_EQ(corpus_bleu(empty, kRefs).score, 0.0);
}

TEST(Bleu, MaxNgramOrder) {
    // test/test_bleu.py test_max_ngram_order (formatted to two decimals there).
    const char* expected[] = {"77.65", "60.50", "53.93", "48.53", "46.14", "43.28"};
    for (int order = 1; order <= 6; ++order)
        EXPECT_EQ(
            fmt::format("{:.2f}", corpus_bleu(kHyps, kRefs, {.max_ngram_order = order}).score),
            expected[order - 1])
            << "order " << order;
}

TEST(Bleu, VariableNumberOfReferences) {
    // README.md "Variable Number of References": the first reference of the first sentence
    // removed. (The README's listing also blanks the second stream's, but its prose and its
    // numbers, ref_len 19 = 18 - 6 + 7 and 2-gram 6/14, are those of blanking only the first.)
    Streams refs = kRefs;
    refs[0][0] = "";
    const BleuScore s = corpus_bleu(kHyps, refs);
    EXPECT_EQ(
        s.format(),
        "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 ref_len = 19)");
    EXPECT_EQ(s.signature.substr(0, 10), "nrefs:var|");
    refs[1][0] = "";  // now the first segment has no reference at all: sacreBLEU raises too
    EXPECT_THROW(corpus_bleu(kHyps, refs), Error);
}

TEST(Bleu, RawCorpusBleuCases) {
    // test/test_bleu.py test_raw_bleu (score / 100 there).
    EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"this is a test", "another test"},
                            Streams{{"ref1", "ref2"}}, raw(0.01))
                    .score,
                0.0, 1e-8);
    EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"this is a test"}, Streams{{"this is a test"}},
                            raw(0.01))
                    .score,
                100.0, 1e-8);
    EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"this is a fest"}, Streams{{"this is a test"}},
                            raw(0.01))
                    .score,
                100 * 0.223606797749979, 1e-8);
    // test/test_bleu.py test_effective_order.
    EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"test"}, Streams{{"a test"}}, raw(0.01)).score,
                100 * 0.3678794411714425, 1e-8);
    EXPECT_NEAR(
        corpus_bleu(std::vector<std::string>{"a test"}, Streams{{"a test"}}, raw(0.01)).score,
        100.0, 1e-8);
    EXPECT_NEAR(
        corpus_bleu(std::vector<std::string>{"a little test"}, Streams{{"a test"}}, raw(0.01))
            .score,
        100 * 0.03218297948685433, 1e-8);
}

TEST(Bleu, StatisticsAndOffset) {
    const std::vector<std::string> hyp = {"am I am a character sequence"};
    const Streams ref = {{"I am a symbol string sequence a a"}};
    // test/test_bleu.py test_statistics: counts [4, 2, 1, 0], totals [6, 5, 4, 3].
    const BleuScore s = corpus_bleu(hyp, ref, raw(0.01));
    EXPECT_EQ(s.counts, (std::vector<int64_t>{4, 2, 1, 0}));
    EXPECT_EQ(s.totals, (std::vector<int64_t>{6, 5, 4, 3}));
    // test/test_bleu.py test_offset: 0 without offset, 0.1555722182 with the default 0.1.
    EXPECT_NEAR(corpus_bleu(hyp, ref, raw(0.0)).score, 0.0, 1e-8);
    BleuOptions def = raw(0.0);
    def.smooth_value.reset();
    EXPECT_NEAR(corpus_bleu(hyp, ref, def).score, 100 * 0.1555722182, 1e-7);
}

TEST(Bleu, ScoreFromStatistics) {
    // test/test_bleu.py test_scoring: compute_bleu([9,7,5,3], [10,8,6,4], 11, 11) = 0.8375922397
    // (compute_bleu's default smoothing is 'none').
    const BleuStats st{
        .correct = {9, 7, 5, 3}, .total = {10, 8, 6, 4}, .hyp_len = 11, .ref_len = 11};
    EXPECT_NEAR(bleu_from_stats(st, {.smooth_method = BleuSmooth::none}).score, 100 * 0.8375922397,
                1e-7);
    // test/test_bleu.py test_degenerate_statistics (floor smoothing with the given value): all 0.
    struct Case {
        std::vector<int64_t> c, t;
        int64_t hyp, ref;
        double floor;
    };
    const Case cases[] = {
        {{0, 0, 0, 0}, {4, 4, 2, 1}, 0, 1, 0.0}, {{0, 0, 0, 0}, {10, 11, 12, 0}, 14, 10, 0.0},
        {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.0}, {{6, 5, 4, 0}, {6, 5, 4, 3}, 6, 6, 0.0},
        {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.1}, {{0, 0, 0, 0}, {0, 0, 0, 0}, 1, 5, 0.01}};
    for (const Case& c : cases) {
        const BleuStats s{.correct = c.c, .total = c.t, .hyp_len = c.hyp, .ref_len = c.ref};
        EXPECT_EQ(
            bleu_from_stats(s, {.smooth_method = BleuSmooth::floor, .smooth_value = c.floor}).score,
            0.0);
    }
}

TEST(Bleu, SentenceBleuSmoothingAndTokenizers) {
    // test/test_sentence_bleu.py test_cases ("Example taken from #98"), effective order on,
    // tolerance 1e-3 as there.
    const std::string ref = "producţia de zahăr brut se exprimă în zahăr alb;";
    const std::string sys =
        "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";
    const std::vector<std::string> refs = {ref};
    struct Case {
        BleuSmooth smooth;
        std::optional<double> value;
        bool lc;
        BleuTokenize tok;
        double expected;
    };
    const Case cases[] = {
        {BleuSmooth::exp, {}, false, BleuTokenize::mteval_13a, 8.493},
        {BleuSmooth::none, {}, false, BleuTokenize::mteval_13a, 0.0},
        {BleuSmooth::floor, {}, false, BleuTokenize::mteval_13a, 4.51688},
        {BleuSmooth::floor, 0.1, false, BleuTokenize::mteval_13a, 4.51688},
        {BleuSmooth::floor, 0.5, false, BleuTokenize::mteval_13a, 10.10},
        {BleuSmooth::add_k, {}, false, BleuTokenize::mteval_13a, 14.882},
        {BleuSmooth::add_k, 1, false, BleuTokenize::mteval_13a, 14.882},
        {BleuSmooth::add_k, 2, false, BleuTokenize::mteval_13a, 21.389},
        {BleuSmooth::exp, {}, false, BleuTokenize::none, 7.347},
        {BleuSmooth::exp, {}, false, BleuTokenize::chars, 40.8759},
        {BleuSmooth::exp, {}, true, BleuTokenize::chars, 42.0267},
    };
    for (const Case& c : cases) {
        const BleuOptions opt{.smooth_method = c.smooth,
                              .smooth_value = c.value,
                              .tokenize = c.tok,
                              .lowercase = c.lc,
                              .effective_order = true};
        EXPECT_NEAR(sentence_bleu(sys, refs, opt).score, c.expected, 1e-3)
            << to_string(c.smooth) << " " << to_string(c.tok) << " lc=" << c.lc;
    }
    // The default options of sentence_bleu use the effective order: "test" vs "a test" is
    // p_1 = 1 and BP = exp(1 - 2/1) (hand-checked; same as test_bleu.py test_effective_order).
    EXPECT_NEAR(sentence_bleu("test", std::vector<std::string>{"a test"}).score,
                100 * 0.3678794411714425, 1e-9);
    // test/test_sentence_bleu.py test_cases_zero_bleu ("Example taken from #141"): all 0.
    const std::vector<std::string> ref0 = {"okay thanks"};
    for (auto sm : {BleuSmooth::exp, BleuSmooth::none, BleuSmooth::floor, BleuSmooth::add_k})
        EXPECT_EQ(
            sentence_bleu("this is a cat", ref0, {.smooth_method = sm, .effective_order = true})
                .score,
            0.0);
}

TEST(Bleu, ClosestReferenceLengthPrefersShorterOnTies) {
    // Hand-checked: hyp 3 tokens, refs of 2 and 4 tokens are equally close -> r = 2, BP = 1.
    const std::vector<std::string> hyp = {"a b c"};
    const BleuScore s =
        corpus_bleu(hyp, Streams{{"a b"}, {"a b c d"}}, {.tokenize = BleuTokenize::none});
    EXPECT_EQ(s.ref_len, 2);
    EXPECT_EQ(s.bp, 1.0);
    // Clipping takes the max count over references: "a a a" vs {"a", "a a"} -> 2 of 3 unigrams.
    const BleuScore t = corpus_bleu(std::vector<std::string>{"a a a"}, Streams{{"a"}, {"a a"}},
                                    {.tokenize = BleuTokenize::none});
    EXPECT_EQ(t.counts[0], 2);
}

TEST(Bleu, ErrorsNameTheCounts) {
    const std::vector<std::string> hyp = {"a", "b"};
    try {
        corpus_bleu(hyp, Streams{{"a"}});
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("2 hypotheses but reference stream 1 has 1 lines"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(corpus_bleu(hyp, Streams{}), Error);
    EXPECT_THROW(corpus_bleu(hyp, Streams{{"a", "b"}}, {.max_ngram_order = 0}), Error);
    EXPECT_THROW(parse_bleu_smooth("laplace"), UsageError);
    EXPECT_EQ(parse_bleu_tokenize("char"), BleuTokenize::chars);
}

}  // namespace test_eval_bleu
