// The decoder's batched weight gradients (SequenceBackward: one GEMM with K = chunk·B rows per
// weight and chunk of steps) against the per-step reference (TrainOptions::decoder_backward =
// per_step, Decoder::step_backward: every step adds its K = B product into grad), for several
// chunk sizes (TrainOptions::decoder_chunk_rows: the weight gradients are flushed per chunk).
//
// Both runs start from the same seed, see the same batch and draw the same dropout masks and
// scheduled-sampling choices (same Rng seed), so every gradient is the same sum of the same
// per-step terms, grouped differently. Tolerance: an entry is a sum of K = T·B ≤ 40 products;
// regrouping a float32 sum of K terms changes it by at most ≈ K · 2⁻²⁴ · Σ|terms|, i.e. well
// under 1e-5 of the gradient's scale here (|g| ≲ 1, K ≤ 40): we require
// max |batched − per-step| ≤ 1e-5 · max(1, max |per-step|) per tensor (observed: ≤ 6e-8).
// The data gradients differ only by rounding too (layer 0's d_e = d_gi W_e is one GEMM over all
// steps, its d_f a column block of the per-step product), and are held to the same bound.
// The losses agree to 1e-6 relative: the forward differs only where Luong without feeding runs
// its combine as one GEMM over all steps (Decoder::outputs_forward) instead of one per step —
// the same dot products, blocked differently (float32 rounding ≈ 1e-7 relative per output).
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace nazar {
namespace test_models_batched_grads {
namespace {

using test::tiny_batch4;  // B = 4, T = 6, padded on both sides
using test::tiny_config;

void expect_same_grads_chunked(const ModelConfig& cfg, float sampling, int chunk_rows,
                               const std::string& what) {
    SCOPED_TRACE(what + (sampling > 0 ? " (scheduled sampling)" : "") + ", chunk rows " +
                 std::to_string(chunk_rows));
    Seq2Seq batched(cfg, 5), per_step(cfg, 5);
    ParamList pb = batched.parameters(), ps = per_step.parameters();
    ASSERT_EQ(pb.size(), ps.size());
    zero_grads(pb);
    zero_grads(ps);
    const Batch batch = tiny_batch4();
    const TrainOptions opt{
        .sampling_prob = sampling, .grad_scale = 1.0f, .decoder_chunk_rows = chunk_rows};
    const TrainOptions ref{.sampling_prob = sampling,
                           .grad_scale = 1.0f,
                           .decoder_backward = DecoderBackwardPath::per_step};
    // two batches in a row: the buffers are reused (and must not leak state between batches)
    for (int rep = 0; rep < 2; ++rep) {
        Rng ra(17 + rep), rb(17 + rep);
        const LossStats a = TrainPass(batched).train_step(batch, opt, ra);
        const LossStats b = TrainPass(per_step).train_step(batch, ref, rb);
        EXPECT_NEAR(a.loss, b.loss, 1e-6 * b.loss);
        EXPECT_EQ(a.tokens, b.tokens);
    }
    for (std::size_t i = 0; i < pb.size(); ++i) {
        ASSERT_EQ(pb[i].name, ps[i].name);
        const TensorView g = *pb[i].grad, r = *ps[i].grad;
        float scale = 1.0f;
        for (int64_t j = 0; j < r.numel(); ++j) scale = std::max(scale, std::fabs(r[j]));
        EXPECT_LE(max_abs_diff(g, r), 1e-5 * scale) << pb[i].name;
        bool any = false;  // the comparison is not vacuous: the decoder weights do get gradient
        for (int64_t j = 0; j < r.numel(); ++j) any = any || r[j] != 0.0f;
        if (pb[i].name.rfind("decoder.rnn.weight", 0) == 0) {
            EXPECT_TRUE(any) << pb[i].name;
        }
    }
}

// B = 4, T = 6: chunk rows 4, 8, 12, 20, 512 give chunks of 1, 2, 3, 5 (a partial last
// chunk [5, 6)) and 6 steps (one chunk).
void expect_same_grads(const ModelConfig& cfg, float sampling, const std::string& what) {
    for (int rows : {4, 8, 12, 20, 512}) expect_same_grads_chunked(cfg, sampling, rows, what);
}

TEST(BatchedDecoderGrads, EveryDecoderKindCellAndFeeding) {
    for (float sampling : {0.0f, 0.5f}) {
        expect_same_grads(tiny_config(), sampling, "bahdanau gru");
        {
            auto c = tiny_config();
            c.decoder.cell = CellType::lstm;
            c.decoder.num_layers = 2;
            c.decoder.dropout = 0.3f;
            expect_same_grads(c, sampling, "bahdanau lstm 2 layers, dropout");
        }
        {
            auto c = tiny_config();
            c.decoder.deep_output = true;
            expect_same_grads(c, sampling, "bahdanau deep output");
        }
        expect_same_grads(tiny_config(DecoderKind::luong, ScoreKind::general), sampling,
                          "luong general");
        {  // global dot/general without feeding: Attention::forward_steps / backward_steps (per
           // sentence GEMMs)
            auto c = tiny_config(DecoderKind::luong, ScoreKind::dot);
            c.decoder.hidden_size = 6;  // dot needs H = C = 3 + 3
            c.attention.scale = ScaleMode::learned;
            expect_same_grads(c, sampling, "luong dot, learned scale");
        }
        {
            auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
            c.decoder.num_layers = 2;
            c.attention.scale = ScaleMode::inv_sqrt;
            expect_same_grads(c, sampling, "luong scaled general, 2 layers");
        }
        {
            auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
            c.decoder.input_feeding = true;
            c.decoder.num_layers = 2;
            expect_same_grads(c, sampling, "luong general, input feeding, 2 layers");
        }
        {
            auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
            c.decoder.cell = CellType::lstm;
            c.decoder.input_feeding = true;
            expect_same_grads(c, sampling, "luong lstm, input feeding");
        }
        {
            auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
            c.attention.local = LocalMode::predictive;
            c.attention.window = 2;
            c.attention.position_size = 3;
            expect_same_grads(c, sampling, "luong local-p");
        }
        {
            auto c =
                tiny_config(DecoderKind::luong, ScoreKind::additive);  // W_q with the query s_t
            c.decoder.attention_timing = AttentionTiming::after;
            c.decoder.num_layers = 2;
            expect_same_grads(c, sampling, "luong additive, timing after, 2 layers");
        }
        for (const auto kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
            // layer-normalised GRU cells: the gains' and biases' gradients are summed per step
            // in both paths, the weights' batched in one
            auto c = tiny_config(
                kind, kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive);
            c.encoder.layer_norm = c.decoder.layer_norm = true;
            c.decoder.num_layers = 2;
            c.decoder.hidden_size = 16;
            c.decoder.input_feeding = kind == DecoderKind::luong;
            expect_same_grads(c, sampling, "layer norm, 2 layers");
            c.encoder.cell = c.decoder.cell = CellType::lstm;
            expect_same_grads(c, sampling, "layer norm lstm, 2 layers");
        }
    }
}

TEST(BatchedDecoderGrads, BadChunkRowsIsAnError) {
    Seq2Seq m(tiny_config(), 5);
    Rng rng(1);
    EXPECT_THROW(
        TrainPass(m).train_step(tiny_batch4(), {.grad_scale = 1.0f, .decoder_chunk_rows = 0}, rng),
        Error);
}

}  // namespace
}  // namespace test_models_batched_grads
}  // namespace nazar
