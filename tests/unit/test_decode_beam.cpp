// Beam search: K = 1 is greedy token for token; scores are forced-decoding log-probabilities;
// n-best lists are sorted by the GNMT score; a batch decodes as its sentences do one by one;
// early stopping never changes the n-best list; a hand-built model where greedy's first choice
// leads to a worse sequence; length limits, min_length and option errors.
#include "nazar/core/threads.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/train_pass.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <set>

namespace nazar {
namespace test_decode_beam {
namespace {

using test::tiny_config;

using test::pad;
using test::Sources;

// Σ log p of `tokens` after <s>, one step at a time.
double replay(Seq2Seq& m, const std::vector<int32_t>& src, const std::vector<int32_t>& tokens) {
    Sources s = pad({src});
    DecodeSession m_s(m);
    EncodedSource enc;
    m_s.encode(s.ids, s.lengths, s.S, enc);
    DecoderState st;
    m_s.init_state(enc, st);
    Tensor lp({1, m.config().tgt_vocab_size});
    int32_t prev = m.config().special_ids.bos;
    double sum = 0;
    for (int32_t y : tokens) {
        m_s.step(std::span<const int32_t>(&prev, 1), enc, st, lp, {});
        sum += lp.at(0, y);
        prev = y;
    }
    return sum;
}

const std::vector<std::vector<int32_t>> kSents = {
    {5, 6, 7, 8, 9}, {9}, {4, 4, 6}, {}, {7, 5, 9, 9, 4, 6, 8}};

std::vector<ModelConfig> configs() {
    auto feed = tiny_config(DecoderKind::luong, ScoreKind::general);
    feed.decoder.input_feeding = true;
    auto lp = tiny_config(DecoderKind::luong, ScoreKind::general);
    lp.attention.local = LocalMode::predictive;
    lp.attention.window = 1;
    auto lstm = tiny_config(DecoderKind::luong, ScoreKind::dot);
    lstm.decoder.cell = CellType::lstm;
    lstm.decoder.hidden_size = 6;  // dot needs H == C
    // layer-normalised cells: GRU Bahdanau with 2-layer encoder and decoder at H = 16 (the
    // vector widths), GRU Luong with input feeding, LSTM Luong
    auto ln = tiny_config();
    ln.encoder.layer_norm = ln.decoder.layer_norm = true;
    ln.encoder.hidden_size = ln.decoder.hidden_size = 16;
    ln.encoder.num_layers = ln.decoder.num_layers = 2;
    auto ln_feed = feed;
    ln_feed.encoder.layer_norm = ln_feed.decoder.layer_norm = true;
    auto ln_lstm = lstm;
    ln_lstm.encoder.layer_norm = ln_lstm.decoder.layer_norm = true;
    return {tiny_config(), feed, lp, lstm, ln, ln_feed, ln_lstm};
}

TEST(BeamSearch, BeamOneIsGreedyTokenForToken) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 23);
        const Sources s = pad(kSents);
        const auto g = greedy_decode(m, s.ids, s.lengths, s.S,
                                     {.max_length_ratio = 1.5f, .max_length_extra = 3});
        const auto b =
            beam_search(m, s.ids, s.lengths, s.S,
                        {.beam_size = 1, .max_length_ratio = 1.5f, .max_length_extra = 3});
        ASSERT_EQ(b.size(), kSents.size());
        for (std::size_t i = 0; i < kSents.size(); ++i) {
            ASSERT_EQ(b[i].size(), 1u);
            EXPECT_EQ(b[i][0].tokens, g[i].tokens) << i;
            EXPECT_EQ(b[i][0].finished, g[i].finished) << i;
            EXPECT_DOUBLE_EQ(b[i][0].log_prob, g[i].score) << i;  // same sums of the same floats
            EXPECT_EQ(b[i][0].attention.shape(), g[i].attention.shape());
            EXPECT_EQ(max_abs_diff(b[i][0].attention, g[i].attention), 0.0f);
        }
    }
}

TEST(BeamSearch, ScoresEqualForcedDecodingAndNBestIsSorted) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 29);
        for (const ParamRef& p : m.parameters())  // make </s> likely, so that hypotheses finish
            if (p.name == "generator.bias") p.value->at(3) += 1.5f;
        const Sources s = pad(kSents);
        const BeamOptions o{.beam_size = 4,
                            .n_best = 4,
                            .length_penalty = 0.8f,
                            .coverage_penalty = 0.2f,
                            .max_length_extra = 8};
        const auto res = beam_search(m, s.ids, s.lengths, s.S, o);
        int checked = 0;
        for (std::size_t i = 0; i < kSents.size(); ++i) {
            ASSERT_GE(res[i].size(), 1u);
            ASSERT_LE(res[i].size(), 4u);
            std::set<std::vector<int32_t>> distinct;
            for (std::size_t k = 0; k < res[i].size(); ++k) {
                const Hypothesis& h = res[i][k];
                distinct.insert(h.tokens);
                if (k) {
                    EXPECT_GE(res[i][k - 1].score, h.score) << "sentence " << i << " rank " << k;
                }
                EXPECT_NEAR(h.score, ranking_score(h.log_prob, h.attention, 0.8f, 0.2f), 1e-9);
                ASSERT_EQ(h.attention.shape(), Shape({static_cast<int64_t>(h.tokens.size()),
                                                      static_cast<int64_t>(kSents[i].size())}));
                if (!h.finished) {  // cut at the limit: replay the tokens through the step API
                    EXPECT_NEAR(h.log_prob, replay(m, kSents[i], h.tokens),
                                1e-4 * (1 + std::abs(h.log_prob)));
                    continue;
                }
                ASSERT_EQ(h.tokens.back(), 3);
                EXPECT_NEAR(h.log_prob, replay(m, kSents[i], h.tokens),
                            1e-4 * (1 + std::abs(h.log_prob)));
                // <pad> (which score() skips as a target) and <s> are never emitted
                EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), 0), 0);
                EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), 2), 0);
                const std::vector<int32_t> tgt(h.tokens.begin(), h.tokens.end() - 1);
                const Batch batch = test::make_batch({kSents[i]}, {tgt});
                double forced = 0;
                TrainPass(m).score(batch, std::span<double>(&forced, 1));
                EXPECT_NEAR(h.log_prob, forced, 1e-4 * (1 + std::abs(forced)))
                    << "sentence " << i << " rank " << k;
                ++checked;
            }
            EXPECT_EQ(distinct.size(), res[i].size());
        }
        EXPECT_GT(checked, 0);  // some hypotheses finish, and those equal TrainPass::score
    }
}

TEST(BeamSearch, BatchEqualsSentenceBySentenceAndSortedOrder) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 31);
        const BeamOptions o{
            .beam_size = 3, .n_best = 2, .length_penalty = 0.6f, .coverage_penalty = 0.1f};
        const Sources all = pad(kSents);
        const auto batch = beam_search(m, all.ids, all.lengths, all.S, o);
        const auto sorted = beam_search_sorted(m, kSents, o, 2);
        for (std::size_t i = 0; i < kSents.size(); ++i) {
            const Sources one = pad({kSents[i]});
            const auto alone = beam_search(m, one.ids, one.lengths, one.S, o);
            for (const auto* other : {&batch[i], &sorted[i]}) {
                ASSERT_EQ(other->size(), alone[0].size()) << i;
                for (std::size_t k = 0; k < alone[0].size(); ++k) {
                    EXPECT_EQ((*other)[k].tokens, alone[0][k].tokens) << i << " " << k;
                    EXPECT_NEAR((*other)[k].log_prob, alone[0][k].log_prob, 1e-4);
                    EXPECT_LT(max_abs_diff((*other)[k].attention, alone[0][k].attention), 1e-5);
                }
            }
        }
    }
}

// Sorted batches end before their padding would exceed their real tokens: one long sentence
// among short ones is batched with few of them, not with batch_size of them.
TEST(BeamSearch, SortedBatchesBoundTheirPadding) {
    using detail::sorted_batch_ends;
    const auto ends = [](std::vector<int> lengths, int batch) {
        return sorted_batch_ends(lengths, batch);
    };
    EXPECT_EQ(ends({}, 4), std::vector<int>{});
    EXPECT_EQ(ends({5, 5, 5, 5, 5}, 2), (std::vector<int>{2, 4, 5}));  // equal: batch_size only
    EXPECT_EQ(ends({0, 0, 0}, 2), (std::vector<int>{2, 3}));           // empty sources
    // 113 then 26s: 2 sentences hold 226 positions for 139 tokens; a third would be 339 > 2·165.
    EXPECT_EQ(ends({113, 26, 26, 26, 26, 26}, 32), (std::vector<int>{2, 6}));
    // 10, 3, 3, 3: (3 · 10 = 30) <= 2 · 16, (4 · 10 = 40) > 2 · 19: the batch ends at 3.
    EXPECT_EQ(ends({10, 3, 3, 3}, 8), (std::vector<int>{3, 4}));
    EXPECT_EQ(ends({10, 4, 4, 4}, 8), std::vector<int>{4});  // 40 <= 2 · 22
    EXPECT_EQ(ends({7}, 1), std::vector<int>{1});
    EXPECT_THROW(ends({3, 2}, 0), UsageError);
    // Every batch: at most batch_size sentences, padded positions at most twice its tokens
    // unless it holds one sentence, and the batches tile the input.
    std::vector<int> lengths;
    for (int i = 0; i < 300; ++i) lengths.push_back(1 + (i * 37) % 97);
    std::sort(lengths.rbegin(), lengths.rend());
    lengths.insert(lengths.begin(), 500);
    const std::vector<int> e = ends(lengths, 16);
    ASSERT_FALSE(e.empty());
    EXPECT_EQ(e.back(), static_cast<int>(lengths.size()));
    for (std::size_t k = 0, begin = 0; k < e.size(); begin = e[k++]) {
        const int n = e[k] - static_cast<int>(begin);
        ASSERT_GE(n, 1);
        EXPECT_LE(n, 16);
        const int sum = std::accumulate(lengths.begin() + begin, lengths.begin() + e[k], 0);
        if (n > 1) {
            EXPECT_LE(n * lengths[begin], 2 * sum) << k;
        }
    }
    EXPECT_EQ(e[0], 2);  // 500 with one more (2 · 500 <= 2 · 597), not with 15
}

// The sentences of a step advance in parallel (beam_search.cpp): every hypothesis, score and
// attention row is bit-identical at 1, 2 and 3 threads, with enough sentences for the pool to
// split them (grain: 4 sentences).
TEST(BeamSearch, SameResultsAtAnyThreadCount) {
    std::vector<std::vector<int32_t>> sents;
    for (int i = 0; i < 40; ++i) {
        std::vector<int32_t> x;
        for (int t = 0; t < 1 + (i * 7) % 9; ++t)
            x.push_back(static_cast<int32_t>(4 + (i + t) % 6));
        sents.push_back(x);
    }
    const int saved = num_threads();
    for (const auto& c : configs()) {
        Seq2Seq m(c, 17);
        const BeamOptions o{.beam_size = 4,
                            .n_best = 3,
                            .length_penalty = 0.6f,
                            .coverage_penalty = 0.2f,
                            .max_length = 12};
        const Sources all = pad(sents);
        std::vector<std::vector<std::vector<Hypothesis>>> runs;
        for (int threads : {1, 2, 3}) {
            set_num_threads(threads);
            runs.push_back(beam_search(m, all.ids, all.lengths, all.S, o));
        }
        set_num_threads(saved);
        for (std::size_t r = 1; r < runs.size(); ++r)
            for (std::size_t i = 0; i < sents.size(); ++i) {
                ASSERT_EQ(runs[r][i].size(), runs[0][i].size()) << i;
                for (std::size_t k = 0; k < runs[0][i].size(); ++k) {
                    const Hypothesis &a = runs[0][i][k], &b = runs[r][i][k];
                    EXPECT_EQ(b.tokens, a.tokens) << r << " " << i << " " << k;
                    EXPECT_EQ(b.log_prob, a.log_prob);
                    EXPECT_EQ(b.score, a.score);
                    EXPECT_EQ(b.finished, a.finished);
                    EXPECT_EQ(max_abs_diff(b.attention, a.attention), 0.0f);
                }
            }
    }
}

TEST(BeamSearch, EarlyStopNeverChangesTheNBestList) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 37);
        const Sources s = pad(kSents);
        for (int nb : {1, 3}) {
            BeamOptions o{.beam_size = 5,
                          .n_best = nb,
                          .length_penalty = 1.0f,
                          .coverage_penalty = 0.3f,
                          .max_length_extra = 10};
            const auto fast = beam_search(m, s.ids, s.lengths, s.S, o);
            o.early_stop = false;
            const auto full = beam_search(m, s.ids, s.lengths, s.S, o);
            for (std::size_t i = 0; i < kSents.size(); ++i) {
                ASSERT_EQ(fast[i].size(), full[i].size());
                for (std::size_t k = 0; k < full[i].size(); ++k) {
                    EXPECT_EQ(fast[i][k].tokens, full[i][k].tokens);
                    EXPECT_NEAR(fast[i][k].score, full[i][k].score,
                                1e-5);  // batch composition differs
                }
            }
        }
    }
}

// A model whose every step's argmax is <pad> (bias +30) or <s> (+20): neither greedy nor beam
// search emits them; the scores stay the model's own log p of the emitted tokens (far below 0,
// not renormalised over the allowed tokens), equal to TrainPass::score and to a step-by-step
// replay.
TEST(BeamSearch, NeverEmitsPadOrBos) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 41);
        DecodeSession m_s(m);
        for (const ParamRef& p : m.parameters())
            if (p.name == "generator.bias") {
                p.value->at(0) += 30.0f;
                p.value->at(2) += 20.0f;
                p.value->at(3) += 2.0f;  // let some outputs finish
            }
        const Sources s = pad(kSents);
        {  // the premise: unmasked, <pad> would be the argmax
            EncodedSource enc;
            m_s.encode(s.ids, s.lengths, s.S, enc);
            DecoderState st;
            m_s.init_state(enc, st);
            Tensor lp({static_cast<int64_t>(kSents.size()), m.config().tgt_vocab_size});
            const std::vector<int32_t> bos(kSents.size(), 2);
            m_s.step(bos, enc, st, lp, {});
            for (std::size_t i = 0; i < kSents.size(); ++i) {
                const float* row = lp.data() + i * lp.dim(1);
                EXPECT_EQ(std::max_element(row, row + lp.dim(1)) - row, 0);
            }
        }
        const auto g = greedy_decode(m, s.ids, s.lengths, s.S);
        const auto b1 =
            beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 1, .length_penalty = 0});
        const auto b4 = beam_search(m, s.ids, s.lengths, s.S,
                                    {.beam_size = 4, .n_best = 4, .length_penalty = 0});
        int finished = 0;
        for (std::size_t i = 0; i < kSents.size(); ++i) {
            EXPECT_EQ(b1[i][0].tokens, g[i].tokens) << i;
            EXPECT_DOUBLE_EQ(b1[i][0].log_prob, g[i].score) << i;
            std::vector<const std::vector<int32_t>*> outs = {&g[i].tokens};
            for (const Hypothesis& h : b4[i]) outs.push_back(&h.tokens);
            for (const auto* y : outs) {
                EXPECT_EQ(std::count(y->begin(), y->end(), 0), 0) << i;
                EXPECT_EQ(std::count(y->begin(), y->end(), 2), 0) << i;
            }
            EXPECT_LT(g[i].score,
                      -10.0 * static_cast<double>(g[i].tokens.size()));  // log p(y) < −(20 − O(1))
            EXPECT_NEAR(g[i].score, replay(m, kSents[i], g[i].tokens),
                        1e-4 * (1 + std::abs(g[i].score)));
            for (const Hypothesis& h : b4[i]) {
                EXPECT_NEAR(h.log_prob, replay(m, kSents[i], h.tokens),
                            1e-4 * (1 + std::abs(h.log_prob)));
                if (!h.finished) continue;
                const Batch batch =
                    test::make_batch({kSents[i]}, {{h.tokens.begin(), h.tokens.end() - 1}});
                double forced = 0;
                TrainPass(m).score(batch, std::span<double>(&forced, 1));
                EXPECT_NEAR(h.log_prob, forced, 1e-4 * (1 + std::abs(forced))) << i;
                ++finished;
            }
        }
        EXPECT_GT(finished, 0);
    }
}

// Empty sources: a batch where every source is empty (S = 0: attention has no positions, the
// context is 0) decodes and scores as those sentences do in a batch with longer ones (S > 0).
TEST(BeamSearch, AllEmptyAndMixedBatches) {
    for (const auto& c : configs()) {
        Seq2Seq m(c, 43);
        for (const ParamRef& p : m.parameters())
            if (p.name == "generator.bias") p.value->at(3) += 1.5f;  // let some outputs finish
        const Sources empty = pad({{}, {}, {}});
        ASSERT_EQ(empty.S, 0);
        const Sources mixed = pad({{}, {5, 6, 7}, {}});
        const BeamOptions o{
            .beam_size = 3, .n_best = 2, .length_penalty = 0.6f, .coverage_penalty = 0.2f};
        const auto ge = greedy_decode(m, empty.ids, empty.lengths, 0);
        const auto gm = greedy_decode(m, mixed.ids, mixed.lengths, mixed.S);
        const auto be = beam_search(m, empty.ids, empty.lengths, 0, o);
        const auto bm = beam_search(m, mixed.ids, mixed.lengths, mixed.S, o);
        const auto b1 = beam_search(m, empty.ids, empty.lengths, 0, {.beam_size = 1});
        ASSERT_EQ(ge.size(), 3u);
        ASSERT_EQ(be.size(), 3u);
        for (int i : {0, 2}) {
            EXPECT_EQ(ge[i].tokens, gm[i].tokens) << i;
            EXPECT_EQ(ge[i].tokens, ge[0].tokens) << i;  // same (empty) source
            EXPECT_NEAR(ge[i].score, gm[i].score, 1e-4 * (1 + std::abs(gm[i].score)));
            EXPECT_EQ(ge[i].attention.shape(),
                      Shape({static_cast<int64_t>(ge[i].tokens.size()), 0}));
            EXPECT_EQ(b1[i][0].tokens, ge[i].tokens) << i;
            EXPECT_DOUBLE_EQ(b1[i][0].log_prob, ge[i].score) << i;
            EXPECT_NEAR(ge[i].score, replay(m, {}, ge[i].tokens),
                        1e-4 * (1 + std::abs(ge[i].score)));
            ASSERT_EQ(be[i].size(), bm[i].size()) << i;
            for (std::size_t k = 0; k < be[i].size(); ++k) {
                const Hypothesis& h = be[i][k];
                EXPECT_EQ(h.tokens, bm[i][k].tokens) << i << " " << k;
                EXPECT_NEAR(h.log_prob, bm[i][k].log_prob, 1e-4 * (1 + std::abs(h.log_prob)));
                EXPECT_NEAR(h.score,
                            h.log_prob / length_penalty(static_cast<int>(h.tokens.size()), 0.6f),
                            1e-9);
                EXPECT_EQ(h.attention.shape(), Shape({static_cast<int64_t>(h.tokens.size()), 0}));
            }
        }
        // score: all-empty and mixed batches give each sentence its decoded log p
        std::vector<std::vector<int32_t>> tgts;
        for (const auto& r : ge)
            tgts.emplace_back(r.tokens.begin(), r.tokens.end() - (r.finished ? 1 : 0));
        std::vector<double> se(3), sm(3);
        TrainPass(m).score(test::make_batch({{}, {}, {}}, tgts), se);
        TrainPass(m).score(test::make_batch({{}, {5, 6, 7}, {}}, tgts), sm);
        for (int i : {0, 2}) {
            EXPECT_NEAR(se[i], sm[i], 1e-4 * (1 + std::abs(sm[i]))) << i;
            if (ge[i].finished) {
                EXPECT_NEAR(se[i], ge[i].score, 1e-4 * (1 + std::abs(se[i]))) << i;
            }
        }
        EXPECT_TRUE(std::isfinite(se[1]) && std::isfinite(sm[1]));
        LossStats loss = TrainPass(m).eval_loss(test::make_batch({{}, {}, {}}, tgts));
        EXPECT_TRUE(std::isfinite(loss.loss) && loss.tokens > 0);
    }
}

// Target ids: <pad> 0, <unk> 1, <s> 2, </s> 3, a 4, b 5. The decoder's state after reading y is
// one-hot(y) (update gate saturated shut, candidate tanh(40·e_y) = e_y, context ignored), so
// p(· | y_prev) is column y_prev of the generator, set to:
//   <s> -> a 0.6, b 0.4;   a -> </s> 0.34, a 0.33, b 0.33;   b -> </s> 0.99, a 0.005, b 0.005.
// Greedy: a </s> (0.6 · 0.34 = 0.204). The best sequence: b </s> (0.4 · 0.99 = 0.396).
std::unique_ptr<Seq2Seq> hand_built_model() {
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 6;
    c.embedding_size = 6;
    c.decoder.hidden_size = 6;
    auto m = std::make_unique<Seq2Seq>(c, 3);
    const int H = 6;
    for (const ParamRef& p : m->parameters()) {
        if (p.name.rfind("decoder.", 0) == 0 || p.name.rfind("generator.", 0) == 0) p.value->zero();
    }
    for (const ParamRef& p : m->parameters()) {
        if (p.name == "decoder.embedding.weight")
            for (int y = 0; y < 6; ++y) p.value->at(y, y) = 1.0f;
        if (p.name == "decoder.rnn.weight_ih_l0")
            for (int j = 0; j < 6; ++j) p.value->at(2 * H + j, j) = 40.0f;  // n gate reads e_y
        if (p.name == "decoder.rnn.bias_ih_l0")
            for (int j = 0; j < H; ++j) p.value->at(H + j) = -40.0f;  // z ≈ 4e-18: s_t = n_t
        if (p.name == "generator.weight") {
            p.value->view().fill(-50.0f);  // every transition not listed below is ~e^-50
            auto set = [&](int from, int to, double prob) {
                p.value->at(to, from) = static_cast<float>(std::log(prob));
            };
            set(2, 4, 0.6), set(2, 5, 0.4);
            set(4, 3, 0.34), set(4, 4, 0.33), set(4, 5, 0.33);
            set(5, 3, 0.99), set(5, 4, 0.005), set(5, 5, 0.005);
        }
    }
    return m;
}

TEST(BeamSearch, FindsTheBestSequenceThatGreedyMisses) {
    auto model = hand_built_model();
    Seq2Seq& m = *model;
    const Sources s = pad({{5, 6, 7}});
    const auto g = greedy_decode(m, s.ids, s.lengths, s.S);
    EXPECT_EQ(g[0].tokens, (std::vector<int32_t>{4, 3}));
    EXPECT_NEAR(g[0].score, std::log(0.6 * 0.34), 1e-5);
    const auto b =
        beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 2, .n_best = 2, .length_penalty = 0});
    ASSERT_EQ(b[0].size(), 2u);
    EXPECT_EQ(b[0][0].tokens, (std::vector<int32_t>{5, 3}));
    EXPECT_NEAR(b[0][0].log_prob, std::log(0.4 * 0.99), 1e-5);
    EXPECT_NEAR(b[0][0].score, std::log(0.4 * 0.99), 1e-5);
    EXPECT_EQ(b[0][1].tokens, (std::vector<int32_t>{4, 3}));
    EXPECT_TRUE(b[0][0].finished && b[0][1].finished);
    // length normalisation: both have |Y| = 2, so lp = (7/6)^α divides both
    const auto n = beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 2, .length_penalty = 1.0f});
    EXPECT_NEAR(n[0][0].score, std::log(0.4 * 0.99) / (7.0 / 6.0), 1e-5);
    // K = 1 is greedy
    EXPECT_EQ(beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 1})[0][0].tokens, g[0].tokens);
}

TEST(BeamSearch, LengthLimitsAndMinLength) {
    auto model = hand_built_model();
    Seq2Seq& m = *model;
    const Sources s = pad({{5, 6, 7}});
    // max length 1: nothing can finish after "a"/"b"; both are returned unfinished, a (0.6) first
    const auto cut =
        beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 2, .n_best = 2, .max_length = 1});
    ASSERT_EQ(cut[0].size(), 2u);
    EXPECT_EQ(cut[0][0].tokens, (std::vector<int32_t>{4}));
    EXPECT_FALSE(cut[0][0].finished);
    // ratio 0, extra 0: max(1, 0) = 1 token
    EXPECT_EQ(
        beam_search(m, s.ids, s.lengths, s.S, {.max_length_ratio = 0, .max_length_extra = 0})[0][0]
            .tokens.size(),
        1u);
    // min_length 7 with max 6: </s> never allowed, exactly 6 tokens, unfinished
    const auto forced = beam_search(
        m, s.ids, s.lengths, s.S,
        {.beam_size = 2, .max_length_ratio = 0, .max_length_extra = 6, .min_length = 7});
    EXPECT_FALSE(forced[0][0].finished);
    EXPECT_EQ(forced[0][0].tokens.size(), 6u);
    for (int32_t y : forced[0][0].tokens) EXPECT_NE(y, 3);
    // min_length 3: </s> may be token 3 at the earliest
    const auto three = beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 2, .min_length = 3});
    EXPECT_EQ(three[0][0].tokens.size(), 3u);
    EXPECT_EQ(three[0][0].tokens.back(), 3);
}

TEST(BeamSearch, TiesGoToTheLowerLiveRankThenTheLowerTokenId) {
    // A zero generator makes every log p equal (−log V), so every candidate total ties exactly:
    // the kept candidates must be the lowest ids (<pad> 0 and <s> 2 never, </s> 3 barred by
    // min_length) at step 1, then all from live rank 0 at step 2 — the rule the vectorised
    // candidate screen in beam_search.cpp must keep (equal totals take the exact comparison).
    Seq2Seq m(tiny_config(), 31);
    m.generator.params.weight.fill(0.0f);  // the generator_weight(): no tying here
    if (m.generator.params.bias.numel() > 0) m.generator.params.bias.fill(0.0f);
    const Sources s = pad({{5, 6, 7}, {4}});
    for (int K : {3, 5}) {
        const auto out = beam_search(m, s.ids, s.lengths, s.S,
                                     {.beam_size = K,
                                      .n_best = K,
                                      .max_length_ratio = 0,
                                      .max_length_extra = 2,
                                      .min_length = 3,
                                      .early_stop = false});
        const std::vector<int32_t> ids = {1, 4, 5, 6, 7};
        for (const auto& hyps : out) {
            ASSERT_EQ(static_cast<int>(hyps.size()), K);
            for (int k = 0; k < K; ++k) {
                EXPECT_EQ(hyps[k].tokens, (std::vector<int32_t>{1, ids[k]}))
                    << "K " << K << " k " << k;
                EXPECT_FALSE(hyps[k].finished);
                EXPECT_DOUBLE_EQ(hyps[k].log_prob, 2.0 * static_cast<double>(-std::log(10.0f)));
            }
        }
    }
}

TEST(BeamSearch, GreedyAndBeamOneTakeTheLowestIdOfTiedMaxima) {
    // Zero generator weights, V = 40, bias: <pad> 0 and <s> 2 highest (never chosen), ids 5, 21
    // and 30 tied next (5 in the block holding <pad>/<s>, taken by the scalar loop; 21 and 30 in
    // vector blocks): greedy's two-pass argmax must take 5 every step, as the first-maximum scan
    // did; without 5, 21.
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 40;
    Seq2Seq m(c, 37);
    m.generator.params.weight.fill(0.0f);  // the generator_weight(): no tying here
    Tensor& b = m.generator.params.bias;
    ASSERT_EQ(b.numel(), 40);
    b.fill(0.0f);
    b.data()[0] = b.data()[2] = 10.0f;
    b.data()[21] = b.data()[30] = 3.0f;
    const Sources s1 = pad({{5, 6, 7}});
    EXPECT_EQ(greedy_decode(m, s1.ids, s1.lengths, s1.S, {.max_length = 2})[0].tokens,
              (std::vector<int32_t>{21, 21}));
    b.data()[5] = 3.0f;
    const Sources s = pad({{5, 6, 7}, {4}, {}});
    const auto g = greedy_decode(m, s.ids, s.lengths, s.S, {.max_length = 4});
    const auto k1 = beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 1, .max_length = 4});
    for (std::size_t i = 0; i < g.size(); ++i) {
        EXPECT_EQ(g[i].tokens, (std::vector<int32_t>{5, 5, 5, 5})) << i;
        EXPECT_EQ(k1[i][0].tokens, g[i].tokens) << i;
    }
}

TEST(BeamSearch, RejectsBadOptions) {
    Seq2Seq m(tiny_config(), 1);
    const Sources s = pad({{5}});
    EXPECT_THROW(beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 0}), UsageError);
    EXPECT_THROW(beam_search(m, s.ids, s.lengths, s.S, {.beam_size = 2, .n_best = 3}), UsageError);
    EXPECT_THROW(beam_search(m, s.ids, s.lengths, s.S, {.length_penalty = -1}), UsageError);
    EXPECT_THROW(beam_search(m, s.ids, s.lengths, s.S, {.coverage_penalty = -0.5f}), UsageError);
    EXPECT_THROW(beam_search(m, s.ids, s.lengths, s.S, {.max_length = 0}), UsageError);
    const std::vector<int> bad_len = {2};
    EXPECT_THROW(beam_search(m, s.ids, bad_len, s.S), Error);
    EXPECT_TRUE(beam_search(m, {}, {}, 0).empty());
}

TEST(Hypothesis, PenaltiesByHand) {
    EXPECT_DOUBLE_EQ(length_penalty(7, 0.0f), 1.0);
    EXPECT_NEAR(length_penalty(7, 0.5f), std::sqrt(2.0), 1e-12);
    // coverage: columns sum to 0.5, 1.2 (clamped to 1), 0 (clamped to 1e-10)
    const Tensor a =
        Tensor::from({2, 3}, std::vector<float>{0.25f, 0.75f, 0.0f, 0.25f, 0.45f, 0.0f});
    EXPECT_NEAR(coverage_penalty(a, 0.5f), 0.5 * (std::log(0.5) + 0.0 + std::log(1e-10)), 1e-6);
    EXPECT_EQ(coverage_penalty(a, 0.0f), 0.0);
    EXPECT_NEAR(ranking_score(-3.0, a, 1.0f, 0.0f), -3.0 / (7.0 / 6.0), 1e-12);
}

}  // namespace
}  // namespace test_decode_beam
}  // namespace nazar
