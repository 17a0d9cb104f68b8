// Beam search's fused output path (BeamOptions::fused_output: logits rows, their bias and
// log-sum-exp added per sentence, log p read as fl(z − lse) and screened on z) against the
// reference path that reads the log-probs step() writes: every hypothesis, token, log p,
// score and attention row bit for bit; fp32 and int8 weights, vocabularies small and large
// (the 8-lane screen and its tail), ranking ties and min_length's forbidden </s>.
#include "nazar/core/kernels.h"
#include "nazar/decode/beam_search.h"
#include "tests/common/beam_checks.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <vector>

namespace nazar {
namespace test_decode_beam_fused {
namespace {

using test::expect_same_hypotheses;
using test::mixed_length_sentences;
using test::pad;
using test::Sources;
using test::tiny_config;

void check(const ModelConfig& c, Precision p, const BeamOptions& base, const char* what) {
    Seq2Seq m(c, 41);
    m.set_precision(p);
    const auto sents = mixed_length_sentences(c.src_vocab_size, 12);
    const Sources all = pad(sents);
    BeamOptions fused = base, plain = base;
    fused.fused_output = true;
    plain.fused_output = false;
    const auto want = beam_search(m, all.ids, all.lengths, all.S, plain);
    for (const bool avx512 : {true, false}) {
        kernels::set_kernels_avx512(avx512);
        expect_same_hypotheses(beam_search(m, all.ids, all.lengths, all.S, fused), want, what);
    }
    kernels::set_kernels_avx512(true);
}

TEST(BeamSearchFused, BitIdenticalToTheLogProbPath) {
    ModelConfig big = tiny_config();
    big.tgt_vocab_size = 203;  // 25 blocks of 8 and a tail of 3; 12 blocks of 16, 8 and 3
    big.src_vocab_size = 30;
    ModelConfig luong = tiny_config(DecoderKind::luong, ScoreKind::general);
    luong.decoder.input_feeding = true;
    const BeamOptions o{
        .beam_size = 4, .n_best = 3, .length_penalty = 0.6f, .coverage_penalty = 0.2f};
    const BeamOptions min_len{.beam_size = 3, .n_best = 2, .max_length = 9, .min_length = 4};
    for (const Precision p : {Precision::fp32, Precision::int8}) {
        check(tiny_config(), p, o, "tiny");
        check(big, p, o, "V 203");
        check(luong, p, o, "luong feed");
        check(big, p, min_len, "min_length");
    }
}

// A model whose output rows are all equal (zero generator): every candidate ties, and the
// ranking falls to the parent's rank and the token id on both paths alike.
TEST(BeamSearchFused, TiesRankTheSameWay) {
    ModelConfig c = tiny_config();
    c.tgt_vocab_size = 40;
    Seq2Seq m(c, 5);
    m.generator.params.weight.fill(0.0f);
    m.generator.params.bias.fill(0.0f);
    const auto sents = mixed_length_sentences(c.src_vocab_size, 5);
    const Sources all = pad(sents);
    BeamOptions fused{.beam_size = 5, .n_best = 5, .max_length = 6};
    BeamOptions plain = fused;
    plain.fused_output = false;
    expect_same_hypotheses(beam_search(m, all.ids, all.lengths, all.S, fused),
                           beam_search(m, all.ids, all.lengths, all.S, plain), "ties");
}

}  // namespace
}  // namespace test_decode_beam_fused
}  // namespace nazar
