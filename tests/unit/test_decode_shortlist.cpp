// Vocabulary shortlists (decode/shortlist.h, DecodeSession::restrict_output): the table built
// from toy pairs holds the expected associations; load / candidates; a shortlist of every token
// decodes as none (fp32, bf16, int8: the packed rows gathered as they are); a partial one
// emits only its candidates, with log-probs normalised over them; errors name file and line.
#include "nazar/core/fileio.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/shortlist.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>

namespace nazar {
namespace test_decode_shortlist {
namespace {

using test::pad;
using test::tiny_config;

std::string tmp(const std::string& name) {
    return testing::TempDir() + "/nazar_shortlist_" + std::to_string(::getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    return {std::istreambuf_iterator<char>(f), {}};
}

// Source words a..f, target words p..u: "a" always with "p", "b" with "q".
TEST(Shortlist, BuildsCooccurrenceTablesAndLoadsThem) {
    const std::vector<std::string> sw = {"a", "b", "c", "d", "e", "f"};
    const std::vector<std::string> tw = {"p", "q", "r", "s", "t", "u"};
    const Vocab sv = Vocab::from_pieces(sw), tv = Vocab::from_pieces(tw);
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"a c", "p r"}, {"a d", "p s"}, {"b c", "q r"}, {"b e", "q t"},
        {"a b", "p q"}, {"c", "r"},     {"f", "u"}};
    const std::string path = tmp("table.tsv");
    const ShortlistBuildStats st =
        build_shortlist(pairs, Tokenizer::word(), sv, Tokenizer::word(), tv, 2, path);
    EXPECT_EQ(st.pairs, 7);
    EXPECT_EQ(st.source_tokens, 6);
    const std::string text = slurp(path);
    EXPECT_EQ(text.rfind("#nazar-shortlist 1\n<frequent>\tp\t3\n<frequent>\tq\t3\n", 0), 0u)
        << text;
    EXPECT_NE(text.find("a\tp\t1\n"), std::string::npos) << text;  // Dice 2·3 / (3 + 3)
    EXPECT_NE(text.find("b\tq\t1\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("f\t"), std::string::npos) << "f and u met once: below 2";

    const Shortlist sl = Shortlist::load(path, sv, tv, {.frequent = 1, .best = 1});
    EXPECT_EQ(sl.target_vocab_size(), tv.size());
    // sentence "b c": frequent p, b's best q, c's best r, specials 3 (</s>) and 1 (<unk>)
    const std::vector<int32_t> src = {sv.id("b"), sv.id("c")};
    const std::vector<int> lengths = {2};
    TokenConstraints cons;
    cons.include = {{{tv.id("u")}}};
    const std::vector<int32_t> always = {3, 1};
    EXPECT_EQ(sl.candidates(src, lengths, 2, std::span<const TokenConstraints>(&cons, 1), always),
              (std::vector<int32_t>{1, 3, tv.id("p"), tv.id("q"), tv.id("r"), tv.id("u")}));
}

TEST(Shortlist, LoadingKeepsTheBestScoresWhateverTheOrder) {
    const Vocab v = test::vocab_of_size(10);
    atomic_write_file(tmp("order.tsv"),
                      "#nazar-shortlist 1\n<frequent>\tp5\t2\n<frequent>\tp6\t9\n"
                      "p4\tp7\t0.1\np4\tp8\t0.9\np4\tp9\t0.5\n");
    const Shortlist sl = Shortlist::load(tmp("order.tsv"), v, v, {.frequent = 1, .best = 2});
    const std::vector<int32_t> src = {4};
    const std::vector<int> lengths = {1};
    EXPECT_EQ(sl.candidates(src, lengths, 1, {}, {}), (std::vector<int32_t>{6, 8, 9}));
}

TEST(Shortlist, BadFilesNameTheLine) {
    const Vocab v = test::vocab_of_size(8);
    const auto fails = [&](const std::string& text, const std::string& why) {
        atomic_write_file(tmp("bad.tsv"), text);
        try {
            Shortlist::load(tmp("bad.tsv"), v, v);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    fails("p4\tp5\t1\n", "bad.tsv:1: not a nazar shortlist");
    fails("#nazar-shortlist 1\np4\tp5\n", "bad.tsv:2: expected 'source<TAB>target<TAB>score'");
    fails("#nazar-shortlist 1\np4\tp5\tx\n", "bad.tsv:2: score 'x' is not a number");
}

// A table over the tiny model's ids (pieces p4..p9): `frequent` then, for every source piece,
// `best` (target pieces).
std::string table(const std::vector<int>& frequent, const std::vector<int>& best) {
    std::string t = "#nazar-shortlist 1\n";
    for (int y : frequent) t += "<frequent>\tp" + std::to_string(y) + "\t1\n";
    for (int x = 4; x < 10; ++x)
        for (int y : best) t += "p" + std::to_string(x) + "\tp" + std::to_string(y) + "\t1\n";
    return t;
}

const std::vector<std::vector<int32_t>> kSents = {{5, 6, 7, 8, 9}, {9}, {4, 4, 6}, {7, 5, 9, 9}};

TEST(Shortlist, EveryTokenDecodesAsNoneInEveryPrecision) {
    const Vocab v = test::vocab_of_size(10);
    atomic_write_file(tmp("all.tsv"), table({4, 5, 6, 7, 8, 9}, {}));
    const Shortlist all = Shortlist::load(tmp("all.tsv"), v, v);
    for (const Precision p : {Precision::fp32, Precision::bf16, Precision::int8}) {
        Seq2Seq m(tiny_config(), 5);
        if (p != Precision::fp32) m.set_precision(p);
        DecodeSession session(m);
        BeamOptions o{.beam_size = 4, .n_best = 3};
        const auto plain = beam_search_sorted(session, kSents, o, 2);
        o.shortlist = &all;
        const auto restricted = beam_search_sorted(session, kSents, o, 2);
        for (std::size_t b = 0; b < kSents.size(); ++b) {
            ASSERT_EQ(plain[b].size(), restricted[b].size());
            for (std::size_t k = 0; k < plain[b].size(); ++k) {
                EXPECT_EQ(plain[b][k].tokens, restricted[b][k].tokens) << precision_name(p);
                EXPECT_NEAR(plain[b][k].log_prob, restricted[b][k].log_prob, 1e-5);
            }
        }
        EXPECT_TRUE(session.output_ids().empty()) << "the search gives the restriction back";
    }
}

TEST(Shortlist, PartialShortlistsEmitOnlyTheirTokensNormalisedOverThem) {
    const Vocab v = test::vocab_of_size(10);
    atomic_write_file(tmp("part.tsv"), table({4}, {6}));
    const Shortlist part = Shortlist::load(tmp("part.tsv"), v, v);
    Seq2Seq m(tiny_config(), 9);
    DecodeSession session(m);
    BeamOptions o{.beam_size = 3, .n_best = 3, .length_penalty = 0.0f};
    o.shortlist = &part;
    const auto res = beam_search_sorted(session, kSents, o, 4);
    const std::set<int32_t> allowed = {1, 3, 4, 6};  // <unk>, </s>, frequent, best (and the
                                                     // never emitted <pad>, <s>)
    for (const auto& hyps : res)
        for (const Hypothesis& h : hyps)
            for (const int32_t y : h.tokens) EXPECT_TRUE(allowed.count(y)) << y;
    // the first step's log-probs over the shortlist sum to one
    const std::vector<int32_t> ids = {1, 3, 4, 6};
    session.restrict_output(ids);
    const test::Sources s = pad({kSents[0]});
    EncodedSource enc;
    session.encode(s.ids, s.lengths, s.S, enc);
    DecoderState st;
    session.init_state(enc, st);
    Tensor lp({1, 4});
    const int32_t bos = m.config().special_ids.bos;
    session.step(std::span<const int32_t>(&bos, 1), enc, st, lp, {});
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += std::exp(static_cast<double>(lp.at(0, j)));
    EXPECT_NEAR(sum, 1.0, 1e-5);
    session.restrict_output({});
    const std::vector<int32_t> bad = {6, 4};
    EXPECT_THROW(session.restrict_output(bad), Error);
}

TEST(Shortlist, SelectedPackedRowsGiveTheSameProductsBitForBit) {
    const int N = 37, K = 45, M = 3;
    std::vector<float> w(N * K), a(M * K);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * float(i)) * 0.5f;
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::cos(0.11f * float(i));
    const std::vector<int32_t> rows = {31, 2, 16, 17, 0};
    for (const Precision p : {Precision::bf16, Precision::int8}) {
        const PackedMatrix full = PackedMatrix::pack(w.data(), N, K, K, p);
        const PackedMatrix sub = full.select_rows(rows);
        std::vector<float> c_full(M * N), c_sub(M * rows.size());
        gemm_packed(M, 0, N, 0, K, 1.0f, a.data(), K, full, 0.0f, c_full.data(), N);
        gemm_packed(M, 0, static_cast<int>(rows.size()), 0, K, 1.0f, a.data(), K, sub, 0.0f,
                    c_sub.data(), static_cast<int>(rows.size()));
        for (int m = 0; m < M; ++m)
            for (std::size_t j = 0; j < rows.size(); ++j)
                EXPECT_EQ(c_sub[m * rows.size() + j], c_full[m * N + rows[j]])
                    << precision_name(p) << " row " << rows[j];
    }
}

}  // namespace
}  // namespace test_decode_shortlist
}  // namespace nazar
