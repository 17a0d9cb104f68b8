// Quantized embedding tables (quantized_file.h, nn/embedding.h): a bf16 / int8 file stores the
// two embeddings like the weight matrices (I8 + per-row F32 ".scale", or BF16), a tied model's
// generator.weight as the same bytes; the lookup of a packed table dequantizes exactly the rows
// it reads (equal to PackedMatrix::dequantize_row), so an inference model holds no fp32 table;
// files written before (F32 embeddings) load to the same model; corrupt tables are refused with
// an error naming the file and the tensor.
#include "nazar/core/gemm/packed.h"
#include "nazar/models/model_file.h"
#include "nazar/models/quantized_file.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "nazar/nn/embedding.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_quantized_embedding {
namespace {

ModelConfig config(bool tied) {
    ModelConfig c = test::tiny_config(DecoderKind::luong, ScoreKind::general);
    c.src_vocab_size = 45;  // not a multiple of the 16-row panels
    c.tgt_vocab_size = 50;
    c.embedding_size = 23;  // nor of the 4-byte groups
    c.encoder.hidden_size = 20;
    c.decoder.hidden_size = tied ? 23 : 36;  // tied: d_out (H, Luong) == E
    c.tie_target_embeddings = tied;
    return c;
}

Batch some_batch() {
    std::vector<std::vector<int32_t>> src, tgt;
    for (int i = 0; i < 10; ++i) {
        std::vector<int32_t> s, t;
        for (int j = 0; j < 2 + i % 5; ++j) s.push_back(4 + (7 * i + 3 * j) % 41);
        for (int j = 0; j < 2 + i % 4; ++j) t.push_back(4 + (5 * i + 11 * j) % 46);
        src.push_back(s);
        tgt.push_back(t);
    }
    return test::make_batch(src, tgt);
}

std::vector<double> scores(Seq2Seq& m) {
    const Batch b = some_batch();
    std::vector<double> s(b.B);
    TrainPass(m).score(b, s);
    return s;
}

std::string error_of(const SafeTensors& st) {
    return test::error_of([&] { model_from_safetensors(st, ParamMode::inference); }, "(loaded)");
}

TEST(QuantizedEmbedding, LookupEqualsDequantizedRows) {
    Rng rng(3);
    for (Precision p : {Precision::int8, Precision::bf16}) {
        Embedding emb({.num_embeddings = 37, .embedding_dim = 13}, rng);  // 3 panels, partial
        auto table = std::make_shared<const PackedMatrix>(
            PackedMatrix::pack(emb.params.weight.data(), 37, 13, 13, p));
        emb.set_packed(table);
        ASSERT_EQ(emb.packed(), table.get());
        const std::vector<int32_t> ids{0, 36, 15, 16, 17, 31, 32, 5, 5};
        Tensor out({static_cast<int64_t>(ids.size()), 13});
        emb.forward(ids, out);
        std::vector<float> want(13);
        int moved = 0;
        for (std::size_t n = 0; n < ids.size(); ++n) {
            table->dequantize_row(ids[n], want.data());
            for (int k = 0; k < 13; ++k) {
                EXPECT_EQ(out.at(n, k), want[k]) << precision_name(p) << " " << n << " " << k;
                moved += out.at(n, k) != emb.params.weight.at(ids[n], k);
                // within the rounding: int8 half a step of the row's scale, bf16 2^-9 relative
                const float w = emb.params.weight.at(ids[n], k);
                const float tol = p == Precision::int8 ? 0.5001f * table->scales()[ids[n]]
                                                       : std::fabs(w) * 0x1p-8f;
                EXPECT_NEAR(out.at(n, k), w, tol);
            }
        }
        EXPECT_GT(moved, 0) << precision_name(p) << ": the fp32 rows were read";
        // backward with a packed table is refused; null gives the fp32 lookups back
        EXPECT_THROW(emb.backward(out, ids), Error);
        emb.set_packed(nullptr);
        emb.forward(ids, out);
        EXPECT_EQ(out.at(1, 4), emb.params.weight.at(36, 4));
    }
}

TEST(QuantizedEmbedding, SetPackedChecksTheShape) {
    Rng rng(1);
    Embedding emb({.num_embeddings = 20, .embedding_dim = 8}, rng);
    const Tensor w({20, 9});
    EXPECT_THROW(emb.set_packed(std::make_shared<const PackedMatrix>(
                     PackedMatrix::pack(w.data(), 20, 9, 9, Precision::int8))),
                 Error);
}

// The file's tables: raw, with scales; the inference model holds them packed only, and its
// lookups give the rows of the dequantized file.
TEST(QuantizedEmbedding, FileRoundTripAndNoFp32Table) {
    for (bool tied : {false, true}) {
        Seq2Seq m(config(tied), 5);
        SafeTensors st;
        model_to_safetensors(m, {}, st);
        for (Precision p : {Precision::int8, Precision::bf16}) {
            const std::string what = std::string(precision_name(p)) + (tied ? " tied" : "");
            const SafeTensors q = parse_safetensors(
                serialize_safetensors(quantize_model_file(st, p)), "q.safetensors");
            for (const char* name :
                 {"encoder.embedding.weight", "decoder.embedding.weight", "generator.weight"}) {
                ASSERT_TRUE(q.raw().count(name)) << what << " " << name;
                EXPECT_EQ(q.raw().at(name).dtype, p == Precision::int8 ? "I8" : "BF16");
                EXPECT_EQ(q.contains(std::string(name) + kScaleSuffix), p == Precision::int8);
            }
            if (tied) {  // the generator's copy: the same bytes as the embedding
                EXPECT_EQ(q.raw().at("generator.weight").bytes,
                          q.raw().at("decoder.embedding.weight").bytes);
            }
            LoadedModel lm = model_from_safetensors(q, ParamMode::inference);
            Seq2Seq& qm = *lm.model;
            for (Embedding* e : {&qm.encoder.embedding, &qm.decoder.embedding}) {
                EXPECT_TRUE(e->params.weight.reserved()) << what;
                ASSERT_NE(e->packed(), nullptr) << what;
            }
            std::size_t fp32 = 0;  // what stays fp32: biases, vectors
            for (const ParamRef& r : qm.parameters())
                if (!quantized_param(r.name, r.value->shape()))
                    fp32 += static_cast<std::size_t>(r.value->numel()) * sizeof(float);
            EXPECT_EQ(qm.memory().values, fp32) << what;
            const SafeTensors d = dequantize_model_file(q);
            const Tensor& table = d.get("decoder.embedding.weight");
            const std::vector<int32_t> ids{0, 49, 16, 3};
            Tensor out({4, 23});
            qm.decoder.embedding.forward(ids, out);
            for (int n = 0; n < 4; ++n)
                for (int k = 0; k < 23; ++k) EXPECT_EQ(out.at(n, k), table.at(ids[n], k)) << what;
            // the same numbers as set_precision on the model the file came from
            m.set_precision(p);
            EXPECT_EQ(scores(qm), scores(m)) << what;
            m.set_precision(Precision::fp32);
        }
    }
}

// A file of the earlier format (F32 embeddings; tied: an F32 generator.weight) loads, with its
// tables quantized at load: the same model as the new format's file.
TEST(QuantizedEmbedding, EarlierFormatLoadsToTheSameModel) {
    for (bool tied : {false, true}) {
        Seq2Seq m(config(tied), 8);
        SafeTensors st;
        model_to_safetensors(m, {}, st);
        for (Precision p : {Precision::int8, Precision::bf16}) {
            SafeTensors old = quantize_model_file(st, p);
            for (const char* name :
                 {"encoder.embedding.weight", "decoder.embedding.weight", "generator.weight"}) {
                if (!tied && std::string(name) == "generator.weight") continue;
                old.set(name, st.get(name).view());  // replaces the raw tensor
                old.erase(std::string(name) + kScaleSuffix);
            }
            ASSERT_FALSE(old.raw().count("decoder.embedding.weight"));
            LoadedModel a = model_from_safetensors(old, ParamMode::inference);
            LoadedModel b =
                model_from_safetensors(quantize_model_file(st, p), ParamMode::inference);
            EXPECT_TRUE(a.model->decoder.embedding.params.weight.reserved());
            EXPECT_EQ(a.model->memory().values, b.model->memory().values);
            EXPECT_EQ(scores(*a.model), scores(*b.model)) << precision_name(p) << tied;
        }
    }
}

TEST(QuantizedEmbedding, CorruptTablesAreRefused) {
    Seq2Seq m(config(true), 2);
    SafeTensors st;
    model_to_safetensors(m, {}, st);
    const SafeTensors q = quantize_model_file(st, Precision::int8);
    auto expect_error = [](const SafeTensors& bad, const std::string& words) {
        const std::string e = error_of(bad);
        EXPECT_NE(e.find(words), std::string::npos) << e;
    };
    {  // a tied generator that is not the embedding: its bytes, or its scales
        SafeTensors bad = q;
        RawTensor g = bad.raw().at("generator.weight");
        g.bytes[5] = static_cast<char>(g.bytes[5] ^ 1);
        bad.set_raw("generator.weight", g);
        expect_error(bad, "generator.weight differs from decoder.embedding.weight");
        bad = q;
        bad.get("generator.weight.scale")[3] *= 2;
        expect_error(bad, "generator.weight differs from decoder.embedding.weight");
    }
    {  // a tied F32 generator beside a quantized embedding
        SafeTensors bad = q;
        bad.erase_raw("generator.weight");
        bad.erase("generator.weight.scale");
        bad.set("generator.weight", st.get("generator.weight").view());
        expect_error(bad, "is I8 but 'generator.weight' is F32");
    }
    {  // an embedding without its scales, or with scales of the wrong length or value
        SafeTensors bad = q;
        bad.erase("encoder.embedding.weight.scale");
        expect_error(bad, "has no scales 'encoder.embedding.weight.scale'");
        bad = q;
        bad.set("encoder.embedding.weight.scale", Tensor({3}));
        expect_error(bad, "tensor 'encoder.embedding.weight.scale' has shape (3,)");
        bad = q;
        bad.get("encoder.embedding.weight.scale")[1] = -1;
        expect_error(bad, "row 1: scale -1 is not a finite value >= 0");
    }
    {  // a BF16 table in an int8 file
        SafeTensors bad = q;
        RawTensor r = bad.raw().at("encoder.embedding.weight");
        r.dtype = "BF16";
        r.bytes.append(r.bytes);
        bad.set_raw("encoder.embedding.weight", r);
        expect_error(bad, "tensor 'encoder.embedding.weight' is BF16 in a int8 file");
    }
}

}  // namespace
}  // namespace test_quantized_embedding
}  // namespace nazar
