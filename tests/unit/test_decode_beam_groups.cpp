// Beam search's grouped output (BeamOptions::output_group_rows): the output layer per group of
// whole sentences, each group's candidates selected right after its product, against one product
// of all rows (output_group_rows = 0): every hypothesis, token, log p, score and attention row
// bit for bit; int8 and bf16 weights and fp32 (grouped where its rows go through the packed Wᵀ
// on nazar's NN kernel, whose rows do not depend on the row count), group sizes that do not divide
// the rows, 1 and 2 threads, ranking ties, min_length's forbidden </s>, early-finishing sentences
// and a batch of one.
#include "nazar/core/blas.h"
#include "nazar/core/threads.h"
#include "nazar/decode/beam_groups.h"
#include "nazar/decode/beam_search.h"
#include "tests/common/beam_checks.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <vector>

namespace nazar {
namespace test_decode_beam_groups {
namespace {

using test::expect_same_hypotheses;
using test::mixed_length_sentences;
using test::pad;
using test::Sources;
using test::tiny_config;

// Every group size in `rows` (and the default) against one product of all rows, 1 and 2
// threads.
void check(Seq2Seq& m, int n_sentences, const BeamOptions& base, const std::string& what) {
    const Sources all = pad(mixed_length_sentences(m.config().src_vocab_size, n_sentences));
    const int saved = num_threads();
    for (const int threads : {1, 2}) {
        set_num_threads(threads);
        BeamOptions plain = base;
        plain.output_group_rows = 0;
        const auto want = beam_search(m, all.ids, all.lengths, all.S, plain);
        for (const int rows : {1, 2, 3, 7, 11, -1}) {
            BeamOptions grouped = base;
            grouped.output_group_rows = rows;
            expect_same_hypotheses(
                beam_search(m, all.ids, all.lengths, all.S, grouped), want,
                what + " rows " + std::to_string(rows) + " threads " + std::to_string(threads));
        }
    }
    set_num_threads(saved);
}

ModelConfig big_config() {
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 203;  // the 8-lane screen's blocks and a tail
    c.src_vocab_size = 30;
    return c;
}

// Packed weights: every step from one row. fp32: steps of 9 to 512 rows where the rows go
// through the packed Wᵀ on nazar's NN kernel (AVX-512), none elsewhere.
TEST(BeamSearchGroups, WhichStepsAreGrouped) {
    const ModelConfig c = big_config();
    const Sources all = pad(mixed_length_sentences(c.src_vocab_size, 9));
    for (const Precision p : {Precision::fp32, Precision::bf16, Precision::int8}) {
        Seq2Seq m(c, 41);
        DecodeSession m_s(m);
        m.set_precision(p);
        EncodedSource enc;
        m_s.encode(all.ids, all.lengths, all.S, enc, 4);  // 36 rows a step: the packed Wᵀ
        if (p != Precision::fp32) {
            EXPECT_EQ(m_s.step_logits_group_min_rows(enc, 36), 1);
            continue;
        }
        EXPECT_EQ(m_s.step_logits_group_min_rows(enc, 36),
                  xwt_rows_independent(36) ? kSmallGemmRows + 1 : 0);
        EXPECT_EQ(m_s.step_logits_group_min_rows(enc, 8), 0);    // the small-M kernel's
        EXPECT_EQ(m_s.step_logits_group_min_rows(enc, 513), 0);  // the library's
        const Sources eight = pad(mixed_length_sentences(c.src_vocab_size, 8));
        m_s.encode(eight.ids, eight.lengths, eight.S, enc, 1);  // 8 rows a step: no packed Wᵀ
        EXPECT_EQ(m_s.step_logits_group_min_rows(enc, 9), 0);
    }
}

// The two halves of step_logits: any row ranges of step_logits_rows give step_logits' rows.
// fp32: ranges the size its groups may have (step_logits_group_min_rows).
TEST(BeamSearchGroups, LogitsRowsInAnyRangesEqualTheWholeProduct) {
    constexpr int N = 29;
    for (const Precision p : {Precision::bf16, Precision::int8, Precision::fp32}) {
        if (p == Precision::fp32 && !xwt_rows_independent(N)) continue;  // never grouped here
        const ModelConfig c = big_config();
        Seq2Seq m(c, 7);
        DecodeSession m_s(m);
        m.set_precision(p);
        const Sources all = pad(mixed_length_sentences(c.src_vocab_size, N));
        EncodedSource enc;
        m_s.encode(all.ids, all.lengths, all.S, enc);
        DecoderState s1, s2;
        m_s.init_state(enc, s1);
        m_s.init_state(enc, s2);
        const std::vector<int32_t> prev(N, c.special_ids.bos);
        Tensor whole({N, c.tgt_vocab_size}), at1({N, all.S}), at2({N, all.S});
        m_s.step_logits(prev, enc, s1, whole, at1);
        m_s.step_hidden(prev, enc, s2, at2);
        for (int64_t j = 0; j < at1.numel(); ++j) ASSERT_EQ(at1.data()[j], at2.data()[j]);
        using Ranges = std::vector<std::pair<int, int>>;
        const Ranges ranges = p == Precision::fp32 ? Ranges{{0, N}, {4, 17}, {9, 18}, {20, N}}
                                                   : Ranges{{0, 9}, {4, 7}, {8, 9}, {28, N}};
        for (const auto& [r0, r1] : ranges) {
            Tensor part({r1 - r0, c.tgt_vocab_size});
            m_s.step_logits_rows(r0, r1, part);
            for (int64_t j = 0; j < part.numel(); ++j)
                ASSERT_EQ(part.data()[j], whole.data()[r0 * c.tgt_vocab_size + j]) << r0;
        }
    }
}

TEST(BeamSearchGroups, BitIdenticalToOneProductOfAllRows) {
    const BeamOptions o{
        .beam_size = 4, .n_best = 3, .length_penalty = 0.6f, .coverage_penalty = 0.2f};
    const BeamOptions min_len{.beam_size = 3, .n_best = 2, .max_length = 9, .min_length = 4};
    ModelConfig luong = tiny_config(DecoderKind::luong, ScoreKind::general);
    luong.decoder.input_feeding = true;
    for (const Precision p : {Precision::int8, Precision::bf16, Precision::fp32}) {
        const std::string name = precision_name(p);
        Seq2Seq big(big_config(), 41), small(tiny_config(), 41), feed(luong, 41);
        for (Seq2Seq* m : {&big, &small, &feed}) m->set_precision(p);
        check(big, 13, o, name + " V 203");
        check(small, 13, o, name + " tiny");
        check(feed, 13, o, name + " luong feed");
        check(big, 13, min_len, name + " min_length");
        check(big, 1, o, name + " batch of 1");
        check(big, 2, o, name + " batch of 2");
    }
}

// A model whose output rows are all equal (zero generator): every candidate ties, and the
// ranking falls to the parent's rank and the token id, grouped or not.
TEST(BeamSearchGroups, TiesRankTheSameWay) {
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 40;
    Seq2Seq m(c, 5);
    m.generator.params.weight.fill(0.0f);
    m.generator.params.bias.fill(0.0f);
    m.set_precision(Precision::int8);
    check(m, 7, BeamOptions{.beam_size = 5, .n_best = 5, .max_length = 6}, "ties");
}

// Groups cover every sentence once, in order, none empty; each has at least min_rows rows;
// their count is the threads' multiple that target asks for when the sentences allow it.
TEST(BeamSearchGroups, FormGroupsCoversTheSentencesInOrder) {
    const auto rows_of = [](const std::vector<int>& first, int N, const std::vector<int>& gs) {
        std::vector<int> rows;
        for (std::size_t g = 0; g + 1 < gs.size(); ++g)
            rows.push_back((gs[g + 1] < static_cast<int>(first.size()) ? first[gs[g + 1]] : N) -
                           first[gs[g]]);
        return rows;
    };
    std::vector<int> gs, five;  // 64 sentences of 5 rows
    for (int i = 0; i < 64; ++i) five.push_back(5 * i);
    detail::form_groups(five, 320, 64, 1, 2, gs);
    EXPECT_EQ(gs, (std::vector<int>{0, 11, 22, 32, 43, 54, 64}));  // 6 groups: 5 rounded up
    EXPECT_EQ(rows_of(five, 320, gs), (std::vector<int>{55, 55, 50, 55, 55, 50}));
    detail::form_groups(five, 320, 64, 1, 1, gs);
    EXPECT_EQ(gs.size(), 6u);  // 5 groups
    detail::form_groups(five, 320, 0, 1, 2, gs);
    EXPECT_TRUE(gs.empty());  // target 0: ungrouped
    detail::form_groups(five, 320, 64, 0, 2, gs);
    EXPECT_TRUE(gs.empty());  // min_rows 0: the product may not be split
    detail::form_groups({0}, 5, 1, 1, 2, gs);
    EXPECT_TRUE(gs.empty());  // one sentence
    // uneven sentences (1, 1, 28, 1 rows): no empty group, short ones merged
    const std::vector<int> uneven{0, 1, 2, 30};
    detail::form_groups(uneven, 31, 3, 1, 2, gs);
    EXPECT_EQ(gs, (std::vector<int>{0, 3, 4}));
    detail::form_groups(uneven, 31, 1, 1, 2, gs);  // 4 shares of 7.75 rows: 30 and 1 rows
    EXPECT_EQ(gs, (std::vector<int>{0, 3, 4}));
    detail::form_groups(uneven, 31, 1, 2, 2, gs);  // the 1-row group joins the one before
    EXPECT_TRUE(gs.empty());
    const std::vector<int> twice{0, 1, 2, 30, 31, 32};  // 1, 1, 28, 1, 1, 28 rows
    detail::form_groups(twice, 60, 15, 1, 2, gs);
    EXPECT_EQ(rows_of(twice, 60, gs), (std::vector<int>{30, 1, 29}));
    detail::form_groups(twice, 60, 15, 2, 2, gs);  // the 1-row group joins the one before
    EXPECT_EQ(rows_of(twice, 60, gs), (std::vector<int>{31, 29}));
    detail::form_groups(uneven, 31, 1, 30, 2, gs);
    EXPECT_TRUE(gs.empty());  // all in one group
    for (int target = 1; target <= 40; ++target)
        for (int min_rows = 1; min_rows <= 12; ++min_rows) {
            detail::form_groups(uneven, 31, target, min_rows, 2, gs);
            if (gs.empty()) continue;
            EXPECT_EQ(gs.front(), 0);
            EXPECT_EQ(gs.back(), 4);
            for (const int r : rows_of(uneven, 31, gs)) EXPECT_GE(r, min_rows) << target;
            for (std::size_t g = 0; g + 1 < gs.size(); ++g) EXPECT_LT(gs[g], gs[g + 1]);
        }
}

TEST(BeamSearchGroups, RejectsAGroupSizeBelowMinusOne) {
    EXPECT_THROW(validate(BeamOptions{.output_group_rows = -2}), UsageError);
    EXPECT_NO_THROW(validate(BeamOptions{.output_group_rows = -1}));
}

}  // namespace
}  // namespace test_decode_beam_groups
}  // namespace nazar
