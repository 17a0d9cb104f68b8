// Alignments: hard links and their Pharaoh format, the soft JSON matrix, unknown-word replacement
// (source copy and dictionary), forced alignment == TrainPass::score and == the decoder's own
// attention for the tokens it chose, dictionary file errors.
#include "nazar/decode/alignment.h"
#include "nazar/decode/beam_search.h"
#include "nazar/models/train_pass.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace nazar {
namespace test_decode_alignment {
namespace {

// rows: target tokens; columns: source tokens
const Tensor kAttention =
    Tensor::from({3, 3}, std::vector<float>{0.1f, 0.7f, 0.2f,    // j=0 -> i=1
                                            0.5f, 0.25f, 0.25f,  // j=1 -> i=0
                                            0.4f, 0.4f, 0.2f});  // j=2 -> tie: i=0

TEST(Alignment, HardLinksAndPharaohFormat) {
    const auto links = hard_alignment(kAttention, 3);
    ASSERT_EQ(links.size(), 3u);
    EXPECT_EQ(format_hard_alignment(links), "1-0 0-1 0-2");
    EXPECT_EQ(format_hard_alignment(hard_alignment(kAttention, 2)),
              "1-0 0-1");  // the </s> row left out
    EXPECT_EQ(format_hard_alignment(hard_alignment(Tensor({2, 0}), 2)), "");  // empty source
    EXPECT_THROW(hard_alignment(kAttention, 4), Error);
    // the format reads back with the AER parser
    EXPECT_EQ(parse_hard_alignment(format_hard_alignment(links)),
              (std::vector<AlignmentLink>{{0, 1}, {0, 2}, {1, 0}}));
}

TEST(Alignment, SoftIsAJsonMatrix) {
    const std::string s = format_soft_alignment(kAttention, 2);
    EXPECT_EQ(s, "[[0.1,0.7,0.2],[0.5,0.25,0.25]]");
    const auto j = nlohmann::json::parse(s);
    ASSERT_EQ(j.size(), 2u);
    EXPECT_FLOAT_EQ(j[1][0].get<float>(), 0.5f);
    EXPECT_EQ(format_soft_alignment(kAttention, 0), "[]");
}

TEST(Alignment, ReplaceUnkCopiesTheMostAttendedSourceToken) {
    const Vocab v = Vocab::from_pieces(std::vector<std::string>{"the", "house"});  // ids 4, 5
    const std::vector<std::string> src = {"das", "Haus", "Kanzlerin"};
    const std::vector<int32_t> tokens = {4, 1, 1, 3};  // the <unk> <unk> </s>
    const Tensor a = Tensor::from({4, 3}, std::vector<float>{0.9f, 0.05f, 0.05f, 0.1f, 0.8f, 0.1f,
                                                             0.1f, 0.1f, 0.8f, 0.3f, 0.3f, 0.4f});
    EXPECT_EQ(output_pieces(tokens, a, v, 3, 1, false, src, nullptr),
              (std::vector<std::string>{"the", "<unk>", "<unk>"}));
    EXPECT_EQ(output_pieces(tokens, a, v, 3, 1, true, src, nullptr),
              (std::vector<std::string>{"the", "Haus", "Kanzlerin"}));
    const UnkDictionary dict = {{"Haus", "house"}, {"Hund", "dog"}};
    EXPECT_EQ(output_pieces(tokens, a, v, 3, 1, true, src, &dict),
              (std::vector<std::string>{"the", "house", "Kanzlerin"}));
    // wrong number of source pieces
    EXPECT_THROW(output_pieces(tokens, a, v, 3, 1, true, std::vector<std::string>{"x"}, nullptr),
                 Error);
}

TEST(Alignment, DictionaryFile) {
    const std::string path = testing::TempDir() + "/nazar_unk_dict.tsv";
    {
        std::ofstream f(path);
        f << "Haus\thouse\n\nHaus\tbuilding\nKatze\tcat\n";
    }
    const UnkDictionary d = load_unk_dictionary(path);
    EXPECT_EQ(d.size(), 2u);
    EXPECT_EQ(d.at("Haus"), "house");  // the first entry wins
    {
        std::ofstream f(path);
        f << "Haus\thouse\nno tab here\n";
    }
    try {
        load_unk_dictionary(path);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
    }
    EXPECT_THROW(load_unk_dictionary(path + ".missing"), Error);
    std::remove(path.c_str());
    EXPECT_THROW(parse_alignment_format("medium"), UsageError);
}

TEST(Alignment, ForcedAlignmentMatchesScoreAndTheDecodersAttention) {
    auto cfg = test::tiny_config(DecoderKind::luong, ScoreKind::general);
    cfg.decoder.input_feeding = true;
    for (const auto& c : {test::tiny_config(), cfg}) {
        Seq2Seq m(c, 41);
        const std::vector<std::vector<int32_t>> srcs = {{5, 6, 7, 8}, {9, 5}, {}};
        const std::vector<std::vector<int32_t>> tgts = {{5, 6, 7}, {8}, {4, 4}};
        const Batch batch = test::make_batch(srcs, tgts);
        std::vector<double> scores(3);
        TrainPass(m).score(batch, scores);
        const auto fa = forced_alignment(m, batch.src, batch.src_lengths, batch.S, tgts);
        ASSERT_EQ(fa.size(), 3u);
        for (int b = 0; b < 3; ++b) {
            EXPECT_NEAR(fa[b].log_prob, scores[b], 1e-4 * (1 + std::abs(scores[b]))) << b;
            ASSERT_EQ(fa[b].attention.shape(), Shape({static_cast<int64_t>(tgts[b].size()) + 1,
                                                      static_cast<int64_t>(srcs[b].size())}));
            for (int j = 0; j < fa[b].attention.dim(0) && !srcs[b].empty(); ++j) {
                float row = 0;
                for (int i = 0; i < fa[b].attention.dim(1); ++i) row += fa[b].attention.at(j, i);
                EXPECT_NEAR(row, 1.0f, 1e-5);
            }
        }
        // forcing the beam's own output reproduces its attention and log-probability
        const auto hyp = beam_search(m, batch.src, batch.src_lengths, batch.S,
                                     {.beam_size = 3, .max_length_extra = 8});
        for (int b = 0; b < 3; ++b) {
            const Hypothesis& h = hyp[b][0];
            if (!h.finished) continue;
            const std::vector<std::vector<int32_t>> t = {{h.tokens.begin(), h.tokens.end() - 1}};
            const auto one =
                forced_alignment(m, std::span(batch.src).subspan(b * batch.S, batch.S),
                                 std::span(batch.src_lengths).subspan(b, 1), batch.S, t);
            EXPECT_NEAR(one[0].log_prob, h.log_prob, 1e-4);
            EXPECT_LT(max_abs_diff(one[0].attention, h.attention), 1e-5);
        }
    }
}

}  // namespace
}  // namespace test_decode_alignment
}  // namespace nazar
