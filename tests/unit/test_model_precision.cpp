// Seq2Seq::set_precision (models/precision.cpp): bf16 / int8 pack the model's weight matrices
// and every product runs packed (scores move, a little); fp32 again is bit-identical to a model
// never packed; training a packed model is refused. Bounds: a sentence's log-probability
// within 0.02 (bf16) / 0.1 (int8) + 2% of its size of the fp32 one, for a model of small
// random weights (values measured: about a tenth of that).
#include "nazar/core/blas.h"
#include "nazar/core/block_cache.h"
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
namespace test_model_precision {
namespace {

ModelConfig mid_config(DecoderKind kind, ScoreKind score) {
    ModelConfig c = test::tiny_config(kind, score);
    c.src_vocab_size = c.tgt_vocab_size = 50;
    c.embedding_size = 24;
    c.encoder.hidden_size = 20;
    c.decoder.hidden_size = 36;
    c.attention.attention_size = 28;
    return c;
}

Batch some_batch() {
    std::vector<std::vector<int32_t>> src, tgt;
    for (int i = 0; i < 12; ++i) {
        std::vector<int32_t> s, t;
        for (int j = 0; j < 3 + i % 5; ++j) s.push_back(4 + (7 * i + 3 * j) % 46);
        for (int j = 0; j < 2 + i % 4; ++j) t.push_back(4 + (5 * i + 11 * j) % 46);
        src.push_back(s);
        tgt.push_back(t);
    }
    return test::make_batch(src, tgt);
}

std::vector<double> scores(Seq2Seq& m, const Batch& b) {
    std::vector<double> s(b.B);
    TrainPass(m).score(b, s);
    return s;
}

class ModelPrecision : public ::testing::TestWithParam<std::pair<DecoderKind, ScoreKind>> {};

TEST_P(ModelPrecision, PackedScoresCloseAndFp32Restored) {
    Seq2Seq m(mid_config(GetParam().first, GetParam().second), 7);
    const Batch b = some_batch();
    const std::vector<double> ref = scores(m, b);
    for (Precision p : {Precision::bf16, Precision::int8}) {
        m.set_precision(p);
        EXPECT_EQ(m.precision(), p);
        EXPECT_GT(m.packed_bytes(), 0u);
        const std::vector<double> got = scores(m, b);
        const double tol = p == Precision::bf16 ? 0.02 : 0.1;
        int moved = 0;
        for (int i = 0; i < b.B; ++i) {
            EXPECT_NEAR(got[i], ref[i], tol + 0.02 * std::fabs(ref[i]))
                << precision_name(p) << " sentence " << i;
            moved += got[i] != ref[i];
        }
        EXPECT_GT(moved, 0) << precision_name(p) << ": the packed weights were not used";
        // beam search over 12 sentences x 5 beams (60 rows: the batched step products)
        std::vector<std::vector<int32_t>> srcs;
        for (int i = 0; i < b.B; ++i)
            srcs.emplace_back(b.src.begin() + i * b.S, b.src.begin() + i * b.S + b.src_lengths[i]);
        const auto hyps = beam_search_sorted(m, srcs, {.beam_size = 5});
        ASSERT_EQ(hyps.size(), srcs.size());
        for (const auto& h : hyps) {
            ASSERT_FALSE(h.empty());
            EXPECT_TRUE(std::isfinite(h[0].log_prob));
        }
    }
    m.set_precision(Precision::fp32);
    EXPECT_EQ(m.packed_bytes(), 0u);
    EXPECT_EQ(scores(m, b), ref);  // bit-identical: nothing packed remains
}

INSTANTIATE_TEST_SUITE_P(Kinds, ModelPrecision,
                         ::testing::Values(std::pair{DecoderKind::bahdanau, ScoreKind::additive},
                                           std::pair{DecoderKind::luong, ScoreKind::general}));

TEST(ModelPrecision, TrainingRefused) {
    Seq2Seq m(mid_config(DecoderKind::bahdanau, ScoreKind::additive), 3);
    m.set_precision(Precision::int8);
    Rng rng(1);
    EXPECT_THROW(TrainPass(m).train_step(some_batch(), {}, rng), UsageError);
}

// A quantized model file through bytes: I8 / BF16 tensors round-trip raw; loading it for
// inference gives the model set to the file's precision, whose int8 values are the file's
// (the scores equal those of set_precision on the original model within 1e-6 relative: only
// the per-row scales may differ in their last bit); loading it for training is refused.
TEST(ModelPrecision, QuantizedFileRoundTrip) {
    Seq2Seq m(mid_config(DecoderKind::bahdanau, ScoreKind::additive), 5);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const Batch b = some_batch();
    for (Precision p : {Precision::int8, Precision::bf16}) {
        const SafeTensors q = quantize_model_file(st, p);
        EXPECT_EQ(q.meta(kPrecisionKey), precision_name(p));
        ASSERT_TRUE(q.raw().count("decoder.rnn.weight_hh_l0"));
        EXPECT_EQ(q.raw().at("decoder.rnn.weight_hh_l0").dtype,
                  p == Precision::int8 ? "I8" : "BF16");
        EXPECT_EQ(q.contains("decoder.rnn.weight_hh_l0.scale"), p == Precision::int8);
        // the embeddings too (lookups dequantize their rows), not the one-row vectors
        ASSERT_TRUE(q.raw().count("decoder.embedding.weight"));
        EXPECT_EQ(q.contains("encoder.embedding.weight.scale"), p == Precision::int8);
        EXPECT_FALSE(q.contains("decoder.embedding.weight"));
        EXPECT_FALSE(q.raw().count("attention.v.weight"));
        const SafeTensors back = parse_safetensors(serialize_safetensors(q), "q.safetensors");
        ASSERT_EQ(back.raw().size(), q.raw().size());
        for (const auto& [name, r] : q.raw()) EXPECT_EQ(back.raw().at(name).bytes, r.bytes) << name;
        try {
            model_from_safetensors(back);
            ADD_FAILURE() << "a quantized file loaded for training";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("quantized"), std::string::npos) << e.what();
        }
        LoadedModel lm = model_from_safetensors(back, ParamMode::inference);
        EXPECT_EQ(lm.model->precision(), p);
        m.set_precision(p);
        const std::vector<double> want = scores(m, b), got = scores(*lm.model, b);
        m.set_precision(Precision::fp32);
        for (int i = 0; i < b.B; ++i)
            EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]))
                << precision_name(p) << " " << i;
    }
}

// What the fp32 matrices a quantized file stores packed take (bytes) and how many there are.
std::pair<std::size_t, int> quantized_matrices(Seq2Seq& m) {
    std::size_t bytes = 0;
    int n = 0;
    for (const ParamRef& r : m.parameters())
        if (quantized_param(r.name, r.value->shape())) {
            bytes += static_cast<std::size_t>(r.value->numel()) * sizeof(float);
            ++n;
        }
    return {bytes, n};
}

std::vector<std::vector<int32_t>> sources(const Batch& b) {
    std::vector<std::vector<int32_t>> srcs;
    for (int i = 0; i < b.B; ++i)
        srcs.emplace_back(b.src.begin() + i * b.S, b.src.begin() + i * b.S + b.src_lengths[i]);
    return srcs;
}

void expect_same_beams(Seq2Seq& a, Seq2Seq& b, const Batch& batch) {
    const auto ha = beam_search_sorted(a, sources(batch), {.beam_size = 5});
    const auto hb = beam_search_sorted(b, sources(batch), {.beam_size = 5});
    ASSERT_EQ(ha.size(), hb.size());
    for (std::size_t i = 0; i < ha.size(); ++i) {
        ASSERT_EQ(ha[i].size(), hb[i].size()) << i;
        for (std::size_t k = 0; k < ha[i].size(); ++k) {
            EXPECT_EQ(ha[i][k].tokens, hb[i][k].tokens) << i << " " << k;
            EXPECT_EQ(ha[i][k].log_prob, hb[i][k].log_prob) << i << " " << k;
        }
    }
}

// Loading for inference (ParamMode::inference): no gradient tensors at all; a quantized file's
// matrices are held only packed (fp32 placeholders without memory), and its scores and beams
// are bit-identical to set_precision on the fp32 model the file was made from.
TEST(ModelPrecision, InferenceLoadHoldsNoGradientsNorFp32Copies) {
    Seq2Seq m(mid_config(DecoderKind::bahdanau, ScoreKind::additive), 5);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const Batch b = some_batch();
    const ParamMemory train = m.memory();
    EXPECT_EQ(train.gradients, train.values);
    EXPECT_EQ(train.packed_only, 0);

    LoadedModel f = model_from_safetensors(st, ParamMode::inference);
    const ParamMemory fm = f.model->memory();
    EXPECT_EQ(fm.gradients, 0u);
    EXPECT_EQ(fm.values, train.values);
    EXPECT_EQ(fm.packed_only, 0);
    for (const ParamRef& r : f.model->parameters()) EXPECT_EQ(r.grad, nullptr) << r.name;
    EXPECT_EQ(scores(*f.model, b), scores(m, b));

    const auto [fp32_bytes, count] = quantized_matrices(m);
    ASSERT_GT(count, 5);
    for (Precision p : {Precision::int8, Precision::bf16}) {
        LoadedModel lm = model_from_safetensors(quantize_model_file(st, p), ParamMode::inference);
        const ParamMemory qm = lm.model->memory();
        EXPECT_EQ(qm.packed_only, count) << precision_name(p);
        EXPECT_EQ(qm.values, train.values - fp32_bytes) << precision_name(p);
        EXPECT_EQ(qm.gradients, 0u);
        EXPECT_GT(qm.packed, 0u);
        // packed: a quarter (int8, plus scales and panel padding) or a half (bf16) of fp32
        EXPECT_LT(qm.packed, fp32_bytes / (p == Precision::int8 ? 3 : 1.5)) << precision_name(p);
        for (const ParamRef& r : lm.model->parameters())
            EXPECT_EQ(r.value->reserved(), quantized_param(r.name, r.value->shape())) << r.name;
        m.set_precision(p);
        EXPECT_EQ(scores(*lm.model, b), scores(m, b)) << precision_name(p);
        expect_same_beams(*lm.model, m, b);
        m.set_precision(Precision::fp32);
    }
}

// An inference model set to int8 from an fp32 file drops its fp32 matrices as a quantized file's
// load does, with the same products as a training model set to int8 (which keeps them).
TEST(ModelPrecision, InferenceSetPrecisionKeepsOnlyPacked) {
    Seq2Seq m(mid_config(DecoderKind::luong, ScoreKind::general), 9);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    LoadedModel f = model_from_safetensors(st, ParamMode::inference);
    f.model->set_precision(Precision::int8);
    m.set_precision(Precision::int8);
    const auto [fp32_bytes, count] = quantized_matrices(m);
    EXPECT_EQ(f.model->memory().packed_only, count);
    EXPECT_EQ(m.memory().packed_only, 0);
    EXPECT_EQ(f.model->memory().values + fp32_bytes, m.memory().values);
    const Batch b = some_batch();
    EXPECT_EQ(scores(*f.model, b), scores(m, b));
    // int8 -> bf16 starts from the int8 values (dequantized), as the fp32 model would from them
    f.model->set_precision(Precision::bf16);
    EXPECT_EQ(f.model->memory().packed_only, count);
    SafeTensors deq = dequantize_model_file(quantize_model_file(st, Precision::int8));
    LoadedModel d = model_from_safetensors(deq, ParamMode::inference);
    d.model->set_precision(Precision::bf16);
    EXPECT_EQ(scores(*f.model, b), scores(*d.model, b));
}

// The fp32 matrices an inference model drops go back to the system, not into the cache of freed
// tensor blocks (core/block_cache.h), which would keep them resident.
TEST(ModelPrecision, DroppedFp32MatricesAreNotKeptForReuse) {
    ModelConfig c = mid_config(DecoderKind::bahdanau, ScoreKind::additive);
    c.src_vocab_size = c.tgt_vocab_size = 1200;
    c.embedding_size = 64;  // 1200 x 64 floats: 300 KiB tables, over the cache's smallest block
    Seq2Seq m(c, 5);
    ASSERT_GE(sizeof(float) * 1200 * 64, kBlockCacheMinBytes);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    LoadedModel f = model_from_safetensors(st, ParamMode::inference);
    const std::size_t limit = block_cache_stats().limit_bytes;
    set_block_cache_limit(64 << 20);
    f.model->set_precision(Precision::int8);
    EXPECT_GT(f.model->memory().packed_only, 0);
    EXPECT_EQ(block_cache_stats().kept_bytes, 0u);
    set_block_cache_limit(limit);
}

// Every way to read a matrix held only packed fails with an error rather than reading its
// placeholder: a product other than A Wᵀ, saving, training, gradients. set_precision(fp32)
// gives it fp32 memory again (the dequantized values).
TEST(ModelPrecision, PackedOnlyWeightsFailLoudly) {
    Seq2Seq m(mid_config(DecoderKind::bahdanau, ScoreKind::additive), 4);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const SafeTensors q = quantize_model_file(st, Precision::int8);
    LoadedModel lm = model_from_safetensors(q, ParamMode::inference);
    Seq2Seq& qm = *lm.model;
    const Tensor& w = qm.attention.params.W_k;  // (A, C), stored int8
    ASSERT_TRUE(w.reserved());
    const int N = w.dim(0), K = w.dim(1);
    Tensor x({3, K}), y({3, N}), x2({3, N}), y2({3, K}), wt({K, 3});
    x.fill(0.5f);
    EXPECT_NO_THROW(gemm(x, false, w, true, y));  // y = x Wᵀ: the packed product
    EXPECT_NE(y[0], 0.0f);
    EXPECT_THROW(gemm(x2, false, w, false, y2), Error);  // x W
    EXPECT_THROW(gemm(w, true, x2, true, wt), Error);    // Wᵀ xᵀ
    SafeTensors out;
    EXPECT_THROW(model_to_safetensors(qm, {}, out), Error);
    Rng rng(1);
    EXPECT_THROW(TrainPass(qm).train_step(some_batch(), {}, rng), Error);
    EXPECT_THROW(zero_grads(qm.parameters()), Error);

    qm.set_precision(Precision::fp32);
    EXPECT_EQ(qm.memory().packed_only, 0);
    EXPECT_FALSE(qm.attention.params.W_k.reserved());
    LoadedModel d = model_from_safetensors(dequantize_model_file(q), ParamMode::inference);
    const Batch b = some_batch();
    EXPECT_EQ(scores(qm, b), scores(*d.model, b));
}

// Layer-normalised cells (nn/layer_norm.h) decode in bf16 / int8: the weight matrices are packed,
// the LN gains (vectors) stay fp32 in the model and in a quantized file, the scores stay within
// the bounds above, and a quantized file loaded for inference scores as set_precision does.
class LayerNormPrecision : public ::testing::TestWithParam<CellType> {};

TEST_P(LayerNormPrecision, PackedAndQuantizedFile) {
    ModelConfig c = mid_config(DecoderKind::bahdanau, ScoreKind::additive);
    c.encoder.layer_norm = c.decoder.layer_norm = true;
    c.encoder.num_layers = 2;
    c.encoder.cell = c.decoder.cell = GetParam();
    Seq2Seq m(c, 11);
    Rng rng(4);
    for (const ParamRef& r : m.parameters())
        if (r.name.find(".ln_weight_") != std::string::npos) rng.fill_uniform(*r.value, 0.5f, 1.5f);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const Batch b = some_batch();
    const std::vector<double> ref = scores(m, b);
    for (Precision p : {Precision::bf16, Precision::int8}) {
        m.set_precision(p);
        const std::vector<double> got = scores(m, b);
        const double tol = p == Precision::bf16 ? 0.02 : 0.1;
        int moved = 0;
        for (int i = 0; i < b.B; ++i) {
            EXPECT_NEAR(got[i], ref[i], tol + 0.02 * std::fabs(ref[i]))
                << precision_name(p) << " sentence " << i;
            moved += got[i] != ref[i];
        }
        EXPECT_GT(moved, 0) << precision_name(p);
        const SafeTensors q = quantize_model_file(st, p);
        for (const char* name :
             {"encoder.rnn.ln_weight_ih_l1_reverse", "decoder.rnn.ln_weight_hh_l0"}) {
            EXPECT_FALSE(q.raw().count(name)) << name << " was quantized";
            ASSERT_TRUE(q.contains(name)) << name;
        }
        LoadedModel lm = model_from_safetensors(q, ParamMode::inference);
        EXPECT_EQ(scores(*lm.model, b), got) << precision_name(p);
        expect_same_beams(*lm.model, m, b);
        m.set_precision(Precision::fp32);
    }
    EXPECT_EQ(scores(m, b), ref);
}

INSTANTIATE_TEST_SUITE_P(Cells, LayerNormPrecision,
                         ::testing::Values(CellType::gru, CellType::lstm),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace test_model_precision
}  // namespace nazar
