// A copy-attention model (models/copy.h) quantized to int8 / bf16 (models/quantized_file.h, as
// `nazar quantize` writes it): the gate stays F32 (a one-row vector), the file loads for
// inference at its precision, its mixture scores stay within the bounds test_model_precision.cpp
// uses for plain models (0.02 bf16 / 0.1 int8 + 2% of the score), and beam search over the
// extended vocabulary mostly returns the fp32 model's translations (copied ids included).
#include "nazar/data/extended_vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/models/model_file.h"
#include "nazar/models/quantized_file.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nazar {
namespace test_model_precision_copy {
namespace {

constexpr int kV = 50;

ModelConfig copy_config() {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = c.tgt_vocab_size = kV;
    c.embedding_size = 24;
    c.encoder.hidden_size = 20;
    c.decoder.hidden_size = 36;
    c.attention.attention_size = 28;
    c.copy_attention = true;
    return c;
}

// Source ids >= 40 stand for words the target vocabulary lacks: extended id 50 + (id − 40).
int32_t extended(int32_t x) {
    return x < 40 ? x : kV + (x - 40);
}

struct Data {
    std::vector<std::vector<int32_t>> src, tgt, src_ext, tgt_ext;
};

Data some_data() {
    Data d;
    for (int i = 0; i < 12; ++i) {
        std::vector<int32_t> s, t;
        for (int j = 0; j < 3 + i % 5; ++j) s.push_back(4 + (7 * i + 3 * j) % 46);
        for (int j = 0; j < 2 + i % 4; ++j) t.push_back(4 + (5 * i + 11 * j) % 36);
        std::vector<int32_t> se, te = t;
        for (int32_t x : s) se.push_back(extended(x));
        if (s[0] >= 40) te[0] = extended(s[0]);  // a copy-only target word
        d.src.push_back(s);
        d.tgt.push_back(t);
        d.src_ext.push_back(se);
        d.tgt_ext.push_back(te);
    }
    return d;
}

std::vector<double> scores(Seq2Seq& m, const Data& d) {
    Batch b = test::make_batch(d.src, d.tgt);
    set_copy_ids(b, d.src_ext, d.tgt_ext);
    std::vector<double> s(b.B);
    TrainPass(m).score(b, s);
    return s;
}

TEST(ModelPrecisionCopy, QuantizedCopyModelScoresAndTranslatesClose) {
    Seq2Seq m(copy_config(), 7);
    m.copy_gate.linear.params.bias[0] = -3.0f;  // p_gen ≈ 0.05: the random model copies
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const Data d = some_data();
    const std::vector<double> ref = scores(m, d);
    const BeamOptions beam{.beam_size = 5};
    const auto ref_hyps = beam_search_sorted(m, d.src, beam, 32, d.src_ext);
    bool copied = false;
    for (const auto& h : ref_hyps)
        for (int32_t y : h[0].tokens) copied |= y >= kV;
    EXPECT_TRUE(copied) << "the fp32 model copies nothing: the test would not see copied ids";
    for (Precision p : {Precision::int8, Precision::bf16}) {
        const SafeTensors q = parse_safetensors(serialize_safetensors(quantize_model_file(st, p)),
                                                "copy.safetensors");
        EXPECT_TRUE(q.contains("copy.gate.weight"));
        EXPECT_FALSE(q.raw().count("copy.gate.weight"));  // a one-row vector stays F32
        EXPECT_TRUE(q.raw().count("generator.weight"));   // the generator is packed
        LoadedModel lm = model_from_safetensors(q, ParamMode::inference);
        ASSERT_TRUE(lm.model->config().copy_attention);
        EXPECT_EQ(lm.model->precision(), p);
        const std::vector<double> got = scores(*lm.model, d);
        const double tol = p == Precision::bf16 ? 0.02 : 0.1;
        int moved = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_NEAR(got[i], ref[i], tol + 0.02 * std::fabs(ref[i]))
                << precision_name(p) << " sentence " << i;
            moved += got[i] != ref[i];
        }
        EXPECT_GT(moved, 0) << precision_name(p) << ": the packed weights were not used";
        const auto hyps = beam_search_sorted(*lm.model, d.src, beam, 32, d.src_ext);
        ASSERT_EQ(hyps.size(), ref_hyps.size());
        int same = 0;
        for (std::size_t i = 0; i < hyps.size(); ++i)
            same += hyps[i][0].tokens == ref_hyps[i][0].tokens;
        EXPECT_GE(same, 10) << precision_name(p) << ": " << same << " of 12 translations as fp32";
    }
}

}  // namespace
}  // namespace test_model_precision_copy
}  // namespace nazar
