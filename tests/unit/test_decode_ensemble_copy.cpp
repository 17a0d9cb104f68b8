// Ensembles of copy-attention models (decode/ensemble.h, models/copy.h): a step's values over
// the extended vocabulary are the mean of the members' log(P_m + ε), p_gen the members' mean;
// two identical copy members decode as one, bit for bit (greedy and beam n-best, extended ids,
// p_gen); a copy member beside a plain one is refused.
#include "nazar/core/check.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/ensemble.h"
#include "nazar/decode/greedy.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace nazar {
namespace test_decode_ensemble_copy {
namespace {

constexpr int kV = 11, kExt = kV + 3;  // extended ids 11, 12, 13

ModelConfig copy_config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = 12;
    c.tgt_vocab_size = kV;
    c.copy_attention = true;
    return c;
}

struct Sources {
    std::vector<int32_t> ids, copy;  // (B·S) source ids and their extended ids
    std::vector<int> lengths;
    int S = 0;
};

// Extended ids: a source word the target vocabulary holds keeps a target id (< 11), the others
// get 11 + k (the same word, the same id).
Sources sources() {
    const std::vector<std::vector<int32_t>> s = {{4, 5, 6, 7, 8}, {9, 10}, {11, 4, 4, 5, 7}, {5}};
    const std::vector<std::vector<int32_t>> x = {
        {4, 11, 6, 12, 13}, {9, 11}, {11, 4, 4, 12, 13}, {11}};
    Sources out;
    for (const auto& r : s) out.S = std::max(out.S, static_cast<int>(r.size()));
    for (std::size_t b = 0; b < s.size(); ++b) {
        out.lengths.push_back(static_cast<int>(s[b].size()));
        for (int i = 0; i < out.S; ++i) {
            const bool real = i < static_cast<int>(s[b].size());
            out.ids.push_back(real ? s[b][i] : 0);
            out.copy.push_back(real ? x[b][i] : 0);
        }
    }
    return out;
}

TEST(EnsembleCopy, StepIsTheMeanOfTheMembersLogMixtures) {
    Seq2Seq a(copy_config(), 5), b(copy_config(), 6);
    DecodeSession a_s(a), b_s(b);
    Ensemble e({&a, &b});
    const Sources s = sources();
    const int N = static_cast<int>(s.lengths.size());
    Ensemble::Source es;
    Ensemble::State st;
    e.encode(s.ids, s.lengths, s.S, es);
    e.set_copy_source(es, s.copy, kExt);
    e.init_state(es, st);
    EncodedSource sa, sb;
    DecoderState ta, tb;
    for (auto [m, src, state] : {std::tuple{&a_s, &sa, &ta}, std::tuple{&b_s, &sb, &tb}}) {
        m->encode(s.ids, s.lengths, s.S, *src);
        m->set_copy_source(*src, s.copy, kExt);
        m->init_state(*src, *state);
    }
    Tensor lp({N, kExt}), la({N, kExt}), lb({N, kExt}), none;
    std::vector<int32_t> prev(N, copy_config().special_ids.bos);
    for (int t = 0; t < 3; ++t) {
        e.step(prev, es, st, lp, none);
        const std::vector<float> pe(e.last_p_gen().begin(), e.last_p_gen().end());
        a_s.step(prev, sa, ta, la, none);
        b_s.step(prev, sb, tb, lb, none);
        ASSERT_EQ(pe.size(), static_cast<std::size_t>(N));
        for (int n = 0; n < N; ++n) {
            EXPECT_FLOAT_EQ(pe[n], (a_s.last_p_gen()[n] + b_s.last_p_gen()[n]) / 2) << n;
            for (int w = 0; w < kExt; ++w)
                EXPECT_FLOAT_EQ(lp.select(n)[w], (la.select(n)[w] + lb.select(n)[w]) / 2)
                    << "t " << t << " row " << n << " id " << w;
        }
        prev = {4, 11, 12, 13};  // extended ids fed back (read as <unk>)
    }
}

TEST(EnsembleCopy, TwoIdenticalMembersDecodeAsOne) {
    Seq2Seq a(copy_config(), 7);
    Ensemble e({&a, &a});
    const Sources s = sources();
    const auto g1 = greedy_decode(a, s.ids, s.lengths, s.S, {}, s.copy);
    const auto g2 = greedy_decode(e, s.ids, s.lengths, s.S, {}, s.copy);
    ASSERT_EQ(g1.size(), g2.size());
    for (std::size_t i = 0; i < g1.size(); ++i) {
        EXPECT_EQ(g1[i].tokens, g2[i].tokens) << i;
        EXPECT_EQ(g1[i].score, g2[i].score) << i;
        EXPECT_EQ(g1[i].p_gen, g2[i].p_gen) << i;
        EXPECT_FALSE(g1[i].p_gen.empty()) << i;
    }
    const BeamOptions o{.beam_size = 4, .n_best = 3};
    const auto b1 = beam_search(a, s.ids, s.lengths, s.S, o, s.copy);
    const auto b2 = beam_search(e, s.ids, s.lengths, s.S, o, s.copy);
    ASSERT_EQ(b1.size(), b2.size());
    bool copied = false;
    for (std::size_t i = 0; i < b1.size(); ++i) {
        ASSERT_EQ(b1[i].size(), b2[i].size()) << i;
        for (std::size_t k = 0; k < b1[i].size(); ++k) {
            EXPECT_EQ(b1[i][k].tokens, b2[i][k].tokens) << i << "/" << k;
            EXPECT_EQ(b1[i][k].log_prob, b2[i][k].log_prob) << i << "/" << k;
            EXPECT_EQ(b1[i][k].p_gen, b2[i][k].p_gen) << i << "/" << k;
            for (int32_t y : b1[i][k].tokens) copied |= y >= kV;
        }
    }
    EXPECT_TRUE(copied) << "no hypothesis holds an extended id: the test would not see them";
}

TEST(EnsembleCopy, CopyAndPlainMembersAreRefused) {
    ModelConfig plain = copy_config();
    plain.copy_attention = false;
    Seq2Seq a(copy_config(), 5), p(plain, 6);
    EXPECT_THROW(Ensemble({&a, &p}), UsageError);
    EXPECT_THROW(Ensemble({&p, &a}), UsageError);
}

}  // namespace
}  // namespace test_decode_ensemble_copy
}  // namespace nazar
