// Vocabularies (nazar/data/vocab.h): specials, ordering, size limit, minimum frequency,
// literal special-looking pieces, decode, serialisation.
#include "nazar/core/check.h"
#include "nazar/data/vocab.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace test_data_vocab {

using namespace nazar;

namespace {

PieceCounter count(const std::vector<std::string>& pieces) {
    PieceCounter c;
    for (const auto& p : pieces) c.count(c.intern(p));
    return c;
}

}  // namespace

TEST(DataVocab, SpecialsHaveFixedIds) {
    const Vocab v;
    EXPECT_EQ(v.size(), 4);
    EXPECT_EQ(Vocab::pad, 0);
    EXPECT_EQ(Vocab::unk, 1);
    EXPECT_EQ(Vocab::bos, 2);
    EXPECT_EQ(Vocab::eos, 3);
    EXPECT_EQ(v.piece(0), "<pad>");
    EXPECT_EQ(v.piece(3), "</s>");
    EXPECT_EQ(v.id("anything"), Vocab::unk);
    EXPECT_THROW(v.piece(4), Error);
    EXPECT_THROW(v.piece(-1), Error);
}

TEST(DataVocab, OrderedByCountThenBytes) {
    // counts: b 3, a 2, c 2, d 1
    const PieceCounter c = count({"b", "a", "c", "b", "a", "c", "b", "d"});
    std::vector<int32_t> remap;
    const Vocab v = Vocab::build(c, {}, &remap);
    EXPECT_EQ(v.size(), 8);
    EXPECT_EQ(v.id("b"), 4);
    EXPECT_EQ(v.id("a"), 5);
    EXPECT_EQ(v.id("c"), 6);
    EXPECT_EQ(v.id("d"), 7);
    // remap: provisional ids (first-seen order b, a, c, d) -> final ids.
    EXPECT_EQ(remap, (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(DataVocab, MaxSizeAndMinFreq) {
    const PieceCounter c = count({"b", "a", "c", "b", "a", "c", "b", "d"});
    std::vector<int32_t> remap;
    const Vocab small = Vocab::build(c, {.max_size = 6}, &remap);  // 4 specials + 2 pieces
    EXPECT_EQ(small.size(), 6);
    EXPECT_EQ(small.id("c"), Vocab::unk);
    EXPECT_EQ(remap, (std::vector<int32_t>{4, 5, Vocab::unk, Vocab::unk}));
    const Vocab frequent = Vocab::build(c, {.min_freq = 2});
    EXPECT_EQ(frequent.size(), 7);
    EXPECT_EQ(frequent.id("d"), Vocab::unk);
    EXPECT_EQ(frequent.id("c"), 6);
    EXPECT_THROW(Vocab::build(c, {.max_size = 4}), Error);
    EXPECT_THROW(Vocab::build(c, {.min_freq = 0}), Error);
}

TEST(DataVocab, LiteralSpecialNamesAreOrdinaryPieces) {
    // "<s>" in the text (an HTML strike-through tag, say) must not become sentence start.
    const Vocab v = Vocab::build(count({"<s>", "text", "</s>", "<unk>"}), {});
    EXPECT_GE(v.id("<s>"), Vocab::kNumSpecials);
    EXPECT_GE(v.id("</s>"), Vocab::kNumSpecials);
    EXPECT_GE(v.id("<unk>"), Vocab::kNumSpecials);
    EXPECT_EQ(v.piece(v.id("<s>")), "<s>");
    const Vocab back = Vocab::from_json(v.to_json());
    EXPECT_EQ(back.id("<s>"), v.id("<s>"));
}

TEST(DataVocab, DecodeStopsAtEosAndSkipsPadAndBos) {
    const Vocab v = Vocab::from_pieces(std::vector<std::string>{"Ouvrir", "le", "fichier"});
    const std::vector<int32_t> ids = {Vocab::bos, 4, Vocab::unk, 6, Vocab::eos, 5, Vocab::pad};
    EXPECT_EQ(v.decode(ids, Tokenizer::word()), "Ouvrir <unk> fichier");
    Pieces pieces;
    Tokenizer::word().encode("le fichier inconnu", pieces);
    std::vector<int32_t> out;
    v.encode(pieces, out);
    EXPECT_EQ(out, (std::vector<int32_t>{5, 6, Vocab::unk}));
}

TEST(DataVocab, JsonRoundTripAndErrors) {
    const Vocab v = Vocab::build(count({"é", "日本", "a b", "\"quoted\"", "é"}), {});
    const std::string json = v.to_json();
    const Vocab back = Vocab::from_json(json);
    EXPECT_TRUE(back == v);
    ASSERT_EQ(back.size(), v.size());
    for (int32_t i = 0; i < v.size(); ++i) EXPECT_EQ(back.piece(i), v.piece(i));
    EXPECT_EQ(Vocab::from_json(R"({"pieces": ["x"]})").id("x"), 4);
    EXPECT_THROW(Vocab::from_json("nope"), Error);
    EXPECT_THROW(Vocab::from_json(R"({"pieces": ["x", "x"]})"), Error);
    EXPECT_THROW(Vocab::from_json(R"({"specials": ["<pad>"], "pieces": []})"), Error);
    EXPECT_THROW(Vocab::from_json(R"({"words": []})"), Error);
    EXPECT_THROW(Vocab::from_json(R"({"pieces": [1, 2]})"), Error);  // not strings: nazar::Error,
    EXPECT_THROW(Vocab::from_json(R"({"specials": 3, "pieces": []})"),
                 Error);  // never a json exception
}

}  // namespace test_data_vocab
