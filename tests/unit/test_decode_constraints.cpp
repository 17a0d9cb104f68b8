// Lexically constrained beam search (decode/constraints.h, beam_search.h) and protected spans
// (decode/protect.h): constraint states step by step (spellings, the fallback within a
// phrase, abandoning); random constraint sets on random models — every include phrase in every
// finished hypothesis of the n-best list, no exclude phrase in any, sentences without
// constraints in the same batch bit-identical to a search without any; ensembles; the
// built-in protected-span expressions on real placeholder strings.
#include "nazar/decode/beam_search.h"
#include "nazar/decode/constraints.h"
#include "nazar/decode/ensemble.h"
#include "nazar/decode/protect.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace nazar {
namespace test_decode_constraints {
namespace {

using test::pad;
using test::tiny_config;

bool contains(const std::vector<int32_t>& tokens, const std::vector<int32_t>& phrase) {
    return std::search(tokens.begin(), tokens.end(), phrase.begin(), phrase.end()) != tokens.end();
}

TEST(ConstraintState, PhrasesAreMetTokenByToken) {
    TokenConstraints c;
    c.include = {{{4, 5, 6}}, {{7}}};
    EXPECT_EQ(c.include_tokens(), 4);
    ConstraintState s = initial_state(c);
    std::vector<int32_t> adv;
    advancing_tokens(c, s, adv);
    EXPECT_EQ(adv, (std::vector<int32_t>{4, 7}));
    s = next_state(c, s, 4);
    EXPECT_EQ(s.current, 0);
    EXPECT_EQ(s.met_tokens, 1);
    adv.clear();
    advancing_tokens(c, s, adv);
    EXPECT_EQ(adv, (std::vector<int32_t>{5}));
    s = next_state(c, s, 9);  // abandoned: its token stops counting
    EXPECT_EQ(s.current, -1);
    EXPECT_EQ(s.met_tokens, 0);
    s = next_state(c, s, 7);  // a one-token phrase is met at once
    EXPECT_TRUE(s.met[1]);
    EXPECT_EQ(s.met_tokens, 1);
    for (int32_t y : {4, 5, 6}) s = next_state(c, s, y);
    EXPECT_TRUE(s.all_met(c));
    EXPECT_EQ(s.met_tokens, 4);
    s = next_state(c, s, 4);  // met phrases are not tracked again
    EXPECT_TRUE(s.all_met(c));
    EXPECT_EQ(s.met_tokens, 4);
}

TEST(ConstraintState, FallsBackToTheLongestTailThatStillBeginsThePhrase) {
    TokenConstraints c;
    c.include = {{{4, 4, 5}}};
    ConstraintState s = initial_state(c);
    for (int32_t y : {4, 4, 4}) s = next_state(c, s, y);  // "4 4 4": still "4 4"
    EXPECT_EQ(s.progress, 2);
    EXPECT_EQ(s.met_tokens, 2);
    s = next_state(c, s, 5);
    EXPECT_TRUE(s.all_met(c));
    // a b a b c inside a b a b a b c
    TokenConstraints d;
    d.include = {{{4, 5, 4, 5, 6}}};
    ConstraintState t = initial_state(d);
    for (int32_t y : {4, 5, 4, 5, 4, 5, 6}) t = next_state(d, t, y);
    EXPECT_TRUE(t.all_met(d));
}

TEST(ConstraintState, PhrasesSharingTheirStartCanComeInAnyOrder) {
    // "%2" and "%1" are both "▁%" then a digit: "%1" first must still count
    TokenConstraints c;
    c.include = {{{7, 5}}, {{7, 4}}};
    ConstraintState s = initial_state(c);
    s = next_state(c, s, 7);  // taken as the start of the first phrase
    EXPECT_EQ(s.current, 0);
    s = next_state(c, s, 4);  // ... but it was the second
    EXPECT_TRUE(s.met[1]);
    EXPECT_FALSE(s.met[0]);
    EXPECT_EQ(s.met_tokens, 2);
    EXPECT_EQ(s.current, -1);
    for (int32_t y : {7, 5}) s = next_state(c, s, y);
    EXPECT_TRUE(s.all_met(c));
    EXPECT_EQ(s.met_tokens, 4);
    // a longer phrase resumes in another: "a b c" broken after "a b" by "d", with "b d"
    TokenConstraints d;
    d.include = {{{4, 5, 6}}, {{5, 8}}};
    ConstraintState t = initial_state(d);
    for (int32_t y : {4, 5, 8}) t = next_state(d, t, y);
    EXPECT_TRUE(t.met[1]);
    EXPECT_EQ(t.met_tokens, 2);
}

TEST(ConstraintState, AnySpellingMeetsAPhrase) {
    TokenConstraints c;
    c.include = {{{4, 5}, {6, 5, 7}}};  // two spellings; the phrase counts as 3 tokens
    EXPECT_EQ(c.include_tokens(), 3);
    ConstraintState s = initial_state(c);
    std::vector<int32_t> adv;
    advancing_tokens(c, s, adv);
    EXPECT_EQ(adv, (std::vector<int32_t>{4, 6}));
    s = next_state(c, next_state(c, s, 4), 5);
    EXPECT_TRUE(s.all_met(c));
    EXPECT_EQ(s.met_tokens, 3);
    s = initial_state(c);
    for (int32_t y : {6, 5, 7}) s = next_state(c, s, y);
    EXPECT_TRUE(s.all_met(c));
}

TEST(ConstraintState, BannedTokensCompleteAnExcludePhrase) {
    TokenConstraints c;
    c.exclude = {{8}, {4, 5}, {6, 6, 7}};
    EXPECT_EQ(longest_exclude(c), 3);
    std::vector<int32_t> out;
    banned_tokens(c, std::vector<int32_t>{}, out);
    EXPECT_EQ(out, (std::vector<int32_t>{8}));
    out.clear();
    banned_tokens(c, std::vector<int32_t>{9, 6, 6}, out);
    EXPECT_EQ(out, (std::vector<int32_t>{8, 7}));
    out.clear();
    banned_tokens(c, std::vector<int32_t>{6, 4}, out);
    EXPECT_EQ(out, (std::vector<int32_t>{8, 5}));
    const std::vector<int32_t> reserved = {0, 2, 3};
    TokenConstraints bad;
    bad.include = {{{4, 3}}};
    EXPECT_THROW(validate(bad, 10, reserved), UsageError);
    bad.include = {{{}}};
    EXPECT_THROW(validate(bad, 10, reserved), UsageError);
    bad.include = {{{10}}};
    EXPECT_THROW(validate(bad, 10, reserved), UsageError);
    bad.include = {};
    bad.exclude = {{0}};
    EXPECT_THROW(validate(bad, 10, reserved), UsageError);
}

// Random phrases of output ids 4..9.
std::vector<int32_t> random_phrase(std::mt19937& rng, int max_len) {
    std::vector<int32_t> p(1 + rng() % max_len);
    for (int32_t& y : p) y = 4 + static_cast<int32_t>(rng() % 6);
    return p;
}

const std::vector<std::vector<int32_t>> kSents = {{5, 6, 7, 8, 9},       {9},   {4, 4, 6}, {},
                                                  {7, 5, 9, 9, 4, 6, 8}, {6, 6}};

// A random model whose outputs end (</s> about 0.3 a step, the rest flat), whatever was
// emitted before: a forced token does not lead it into a loop that never ends.
void make_ending(Seq2Seq& m) {
    for (const ParamRef& p : m.parameters()) {
        if (p.name == "generator.weight")
            for (int64_t i = 0; i < p.value->numel(); ++i) p.value->data()[i] *= 0.1f;
        if (p.name == "generator.bias") p.value->at(m.config().special_ids.eos) += 1.1f;
    }
}

BeamOptions roomy(int K, int n_best) {
    return {.beam_size = K,
            .n_best = n_best,
            .max_length_ratio = 3.0f,
            .max_length_extra = 12,
            .max_length = 64};
}

TEST(ConstrainedBeam, EveryFinishedHypothesisMeetsItsConstraints) {
    std::mt19937 rng(7);
    const test::Sources s = pad(kSents);
    int constrained = 0, finished = 0, best_finished = 0, plain_finished = 0;
    for (int trial = 0; trial < 12; ++trial) {
        Seq2Seq m(tiny_config(), 100 + trial);
        make_ending(m);
        std::vector<TokenConstraints> cons(kSents.size());
        for (std::size_t b = 0; b < kSents.size(); ++b) {
            if (b % 3 == 1) continue;  // some sentences without constraints
            for (int k = 0, n = 1 + static_cast<int>(rng() % 2); k < n; ++k)
                cons[b].include.push_back({random_phrase(rng, 3)});
            if (rng() % 2) cons[b].exclude.push_back(random_phrase(rng, 2));
            // an exclude phrase that is a part of an include one cannot be met: drop it
            for (const auto& inc : cons[b].include)
                std::erase_if(cons[b].exclude,
                              [&](const Spelling& e) { return contains(inc[0], e); });
        }
        BeamOptions o = roomy(8, 4);
        o.constraints = cons;
        const auto res = beam_search(m, s.ids, s.lengths, s.S, o);
        const auto plain = beam_search(m, s.ids, s.lengths, s.S, roomy(8, 4));
        for (std::size_t b = 0; b < kSents.size(); ++b) {
            ASSERT_FALSE(res[b].empty());
            if (cons[b].empty()) {  // bit-identical to the unconstrained search
                ASSERT_EQ(res[b].size(), plain[b].size());
                for (std::size_t k = 0; k < res[b].size(); ++k) {
                    EXPECT_EQ(res[b][k].tokens, plain[b][k].tokens);
                    EXPECT_EQ(res[b][k].score, plain[b][k].score);
                }
                continue;
            }
            ++constrained;
            plain_finished += plain[b][0].finished ? 1 : 0;
            for (const Hypothesis& h : res[b]) {
                for (const Spelling& e : cons[b].exclude)
                    EXPECT_FALSE(contains(h.tokens, e)) << "trial " << trial << " sentence " << b;
                if (!h.finished) continue;
                ++finished;
                EXPECT_TRUE(h.constraints_met);
                for (const auto& inc : cons[b].include)
                    EXPECT_TRUE(contains(h.tokens, inc[0]))
                        << "trial " << trial << " sentence " << b;
            }
            EXPECT_TRUE(res[b][0].constraints_met) << "trial " << trial << " sentence " << b;
            best_finished += res[b][0].finished ? 1 : 0;
        }
    }
    EXPECT_GT(constrained, 40);
    EXPECT_GT(finished, 100);
    EXPECT_EQ(best_finished, constrained) << "plain searches finished: " << plain_finished;
}

TEST(ConstrainedBeam, ExcludeOnlyNeverEmitsThePhraseAndBeamOneWorks) {
    Seq2Seq m(tiny_config(), 3);
    const test::Sources s = pad(kSents);
    const auto plain = beam_search(m, s.ids, s.lengths, s.S, roomy(1, 1));
    // ban the first token greedy emits for every sentence
    std::vector<TokenConstraints> cons(kSents.size());
    for (std::size_t b = 0; b < kSents.size(); ++b)
        if (!plain[b][0].tokens.empty() && plain[b][0].tokens[0] != 3)
            cons[b].exclude = {{plain[b][0].tokens[0]}};
    BeamOptions o = roomy(1, 1);
    o.constraints = cons;
    const auto res = beam_search(m, s.ids, s.lengths, s.S, o);
    for (std::size_t b = 0; b < kSents.size(); ++b)
        for (const Spelling& e : cons[b].exclude) EXPECT_FALSE(contains(res[b][0].tokens, e)) << b;
    // an include phrase with beam 1
    std::vector<TokenConstraints> inc(kSents.size());
    for (auto& c : inc) c.include = {{{7, 8}}};
    o.constraints = inc;
    for (const auto& h : beam_search(m, s.ids, s.lengths, s.S, o))
        if (h[0].finished) {
            EXPECT_TRUE(contains(h[0].tokens, {7, 8}));
        }
}

TEST(ConstrainedBeam, EnsemblesAndSortedBatchesKeepEachSentencesConstraints) {
    Seq2Seq a(tiny_config(), 11), b(tiny_config(), 12);
    DecodeSession sa(a), sb(b);
    Ensemble ens(Ensemble::Sessions({&sa, &sb}));
    std::vector<TokenConstraints> cons(kSents.size());
    for (std::size_t i = 0; i < kSents.size(); ++i)
        cons[i].include = {{{4 + static_cast<int32_t>(i % 6), 9}}};
    BeamOptions o = roomy(6, 3);
    o.constraints = cons;
    const auto res = beam_search_sorted(ens, kSents, o, 2);
    for (std::size_t i = 0; i < kSents.size(); ++i)
        for (const Hypothesis& h : res[i])
            if (h.finished) {
                EXPECT_TRUE(contains(h.tokens, cons[i].include[0][0])) << i;
            }
    o.constraints = std::span<const TokenConstraints>(cons).first(2);
    EXPECT_THROW(beam_search_sorted(ens, kSents, o, 2), UsageError);
}

TEST(ProtectedSpans, BuiltinExpressionsFindPlaceholdersOptionsUrlsAndTags) {
    const SpanProtector p = SpanProtector::builtin();
    const auto spans = [&p](const char* s) { return p.spans(s); };
    using V = std::vector<std::string>;
    EXPECT_EQ(spans("Delete %d files from %s?"), (V{"%d", "%s"}));
    EXPECT_EQ(spans("%1$s of %2$5.2f, 100%% done, %lld bytes, %@"),
              (V{"%1$s", "%2$5.2f", "%%", "%lld", "%@"}));
    EXPECT_EQ(spans("100% sure"), V{});  // prose, not a placeholder
    EXPECT_EQ(spans("Hello {name}, you have {0} new {count, plural, one {message}}"),
              (V{"{name}", "{0}", "{message}"}));
    EXPECT_EQ(spans("%(count)d items in ${HOME} and $PATH"), (V{"%(count)d", "${HOME}", "$PATH"}));
    EXPECT_EQ(spans("Use --force or --color=auto, or -v, but not well-known"),
              (V{"--force", "--color=auto", "-v"}));
    EXPECT_EQ(spans("See https://example.org/a?b=1. Mail root@example.org"),
              (V{"https://example.org/a?b=1", "root@example.org"}));
    EXPECT_EQ(spans("<b>Bold</b> &amp; <br/> <a href=\"x\">"),
              (V{"<b>", "</b>", "&amp;", "<br/>", "<a href=\"x\">"}));
    EXPECT_EQ(spans("%s and %s"), V{"%s"});  // each distinct span once
    // Long lines (std::regex recursed once per character: a 60 KB run overflowed the stack) are
    // matched word by word, words over 256 bytes skipped.
    EXPECT_EQ(p.spans(std::string(60000, 'x')), V{});
    EXPECT_EQ(p.spans("see https://" + std::string(60000, 'a')), V{});
    EXPECT_EQ(p.spans("<a " + std::string(60000, 'b') + ">"), V{});
    EXPECT_EQ(p.spans("Use %s and --force " + std::string(2000, 'y') + " {0}"),
              (V{"%s", "--force", "{0}"}));
    const SpanProtector mine = SpanProtector::from_patterns({R"(\bACME\b)"}, false);
    EXPECT_EQ(mine.spans("ACME %s"), V{"ACME"});
    EXPECT_THROW(SpanProtector::from_patterns({"("}, false), UsageError);
}

}  // namespace
}  // namespace test_decode_constraints
}  // namespace nazar
