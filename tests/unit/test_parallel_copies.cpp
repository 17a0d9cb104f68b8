// The copies, fills and sums between a step's products that run over the pool once they are
// large (threads.h, kParallelCopyFloats; docs/performance.md, "Serial stretches between a step's
// products"): each gives the same bits at 1, 2 and 3 threads as the serial loop it replaced, at
// sizes above the threshold (the tiny models of the other tests stay below it).
//   Tensor::zero, kernels::add_bias_rows / sum_rows_into, the RNN's packed-layout copies
//   (packed_rows.h, through RNN::forward / backward), and the decoder's sequence backward, whose
//   chunk of step inputs is gathered over the pool (checked against the per-step backward).
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/decode/beam_search.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "nazar/nn/rnn.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace nazar {
namespace test_parallel_copies {
namespace {

// Large enough for the pool: [e; c] is 64 + 256 = 320 floats a row.
ModelConfig medium_config() {
    ModelConfig cfg = test::tiny_config();
    cfg.src_vocab_size = cfg.tgt_vocab_size = 40;
    cfg.embedding_size = 64;
    cfg.encoder.hidden_size = 128;
    cfg.decoder.hidden_size = 96;
    cfg.attention.attention_size = 32;
    return cfg;
}

bool same_bits(ConstTensorView a, ConstTensorView b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.numel())) ==
               0;
}

TEST(ParallelCopies, ZeroClearsEveryFloatAtAnyThreadCount) {
    const auto threads = test::keep_num_threads();
    Rng rng(3);
    // below the split, at it, and an odd size above it (a short last piece)
    for (const int64_t n : {int64_t{1000}, int64_t{1} << 18, (int64_t{1} << 20) + 12345}) {
        for (const int t : {1, 2, 3}) {
            set_num_threads(t);
            Tensor x = test::random_tensor(rng, {n});
            x.zero();
            EXPECT_EQ(std::count(x.data(), x.data() + n, 0.0f), n) << n << " floats, " << t;
            // a view into the middle zeroes only its own floats
            Tensor y = test::random_tensor(rng, {3, n});
            y.view().select(1).zero();
            EXPECT_EQ(std::count(y.data() + n, y.data() + 2 * n, 0.0f), n);
            EXPECT_NE(y.data()[n - 1], 0.0f);
            EXPECT_NE(y.data()[2 * n], 0.0f);
        }
    }
}

TEST(ParallelCopies, BiasRowsAndRowSumsAreTheSerialSums) {
    const auto threads = test::keep_num_threads();
    Rng rng(5);
    // 2240 x 1536 (a batch's gate rows), a width that is not a multiple of the 64-column unit,
    // and a narrow one that is never split
    for (const auto& [R, N] : {std::pair{2240, 1536}, std::pair{700, 333}, std::pair{70000, 3}}) {
        const Tensor m = test::random_tensor(rng, {R, N});
        const Tensor bias = test::random_tensor(rng, {N});
        // the serial loops, in their order: each column summed over the rows in row order
        Tensor want_sum = test::random_tensor(rng, {N}), want_rows = m;
        const Tensor start_sum = want_sum;
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < N; ++j) {
                want_sum.data()[j] += m.data()[int64_t{r} * N + j];
                want_rows.data()[int64_t{r} * N + j] += bias.data()[j];
            }
        for (const int t : {1, 2, 3}) {
            set_num_threads(t);
            Tensor sum = start_sum, rows = m;
            kernels::sum_rows_into(m, sum);
            kernels::add_bias_rows(rows, bias);
            EXPECT_TRUE(same_bits(sum, want_sum)) << R << " x " << N << ", " << t << " threads";
            EXPECT_TRUE(same_bits(rows, want_rows)) << R << " x " << N << ", " << t << " threads";
        }
    }
}

// A batch as large as the standard model's (64 sentences, 512 outputs per position): the
// packed-layout copies (inputs in, outputs out, dropout between layers, d_x back) run over the
// pool. Outputs, final states, d_x and the weight gradients are bit-identical at 1, 2, 3 threads,
// and the outputs past each sentence's length are 0.
TEST(ParallelCopies, RnnOfAFullBatchGivesTheSameBitsAtAnyThreadCount) {
    const auto threads = test::keep_num_threads();
    // inputs 64 x 24 x 128 (packed: 784 rows x 128 = 100,352 floats), outputs 64 x 24 x 512:
    // every copy is above kParallelCopyFloats (65,536)
    const int B = 64, T = 24, I = 128;
    std::vector<int> lengths;
    for (int b = 0; b < B; ++b) lengths.push_back(1 + (b * 7) % T);
    Rng init(9);
    const Tensor x = test::random_tensor(init, {B, T, I});
    const Tensor d_out = test::random_tensor(init, {B, T, 512});
    struct Run {
        Tensor out, h, d_x, d_w;
    };
    std::vector<Run> runs;
    for (const int t : {1, 2, 3}) {
        set_num_threads(t);
        Rng rng(11);
        RNN rnn({.cell = CellType::gru,
                 .input_size = I,
                 .hidden_size = 256,
                 .num_layers = 2,
                 .bidirectional = true,
                 .dropout = 0.25f},
                rng);
        Tensor out({B, T, 512});
        out.fill(std::nanf(""));  // every float must be written, the padding included
        RNNState final;
        RNNCache cache;
        Rng drop(13);
        rnn.forward(x, lengths, {}, out, final, cache, drop, Mode::train);
        Tensor d_x({B, T, I});
        RNNState no_initial;
        rnn.backward(d_out, {}, cache, d_x, no_initial);
        runs.push_back({std::move(out), std::move(final.h), std::move(d_x),
                        Tensor(rnn.grad.cells[2].weight_ih)});
    }
    for (int b = 0; b < B; ++b)
        for (int t = lengths[b]; t < T; ++t)
            for (int j = 0; j < 512; ++j)
                ASSERT_EQ(runs[0].out.data()[(int64_t{b} * T + t) * 512 + j], 0.0f)
                    << "sentence " << b << " position " << t;
    EXPECT_GT(max_abs_diff(runs[0].d_x, Tensor(runs[0].d_x.shape())), 0.0);
    for (std::size_t i = 1; i < runs.size(); ++i) {
        EXPECT_TRUE(same_bits(runs[i].out, runs[0].out)) << "run " << i;
        EXPECT_TRUE(same_bits(runs[i].h, runs[0].h)) << "run " << i;
        EXPECT_TRUE(same_bits(runs[i].d_x, runs[0].d_x)) << "run " << i;
        EXPECT_TRUE(same_bits(runs[i].d_w, runs[0].d_w)) << "run " << i;
    }
}

// The decoder's sequence backward gathers a chunk of step inputs over the pool when it holds
// 64 Ki floats or more (here 32 sentences x 8 steps x [e; c] of 320 floats: 81,920 in the first
// chunk; the last, 5 steps, stays on one thread), and the decoder's gi0 bias rows (416 x 288) are
// written over the pool too: its weight gradients
// match the per-step backward's (the same sums grouped differently; the bound of
// test_models_batched_grads).
TEST(ParallelCopies, SequenceBackwardOfALargeChunkMatchesThePerStepOne) {
    const auto threads = test::keep_num_threads();
    set_num_threads(2);
    const ModelConfig cfg = medium_config();
    std::vector<std::vector<int32_t>> srcs, tgts;
    Rng data(21);
    for (int b = 0; b < 32; ++b) {
        std::vector<int32_t> s, t;
        for (int j = 0; j < 6 + b % 5; ++j) s.push_back(4 + static_cast<int32_t>(data.below(36)));
        for (int j = 0; j < 9 + b % 4; ++j) t.push_back(4 + static_cast<int32_t>(data.below(36)));
        srcs.push_back(s);
        tgts.push_back(t);
    }
    const Batch batch = test::make_batch(srcs, tgts);
    Seq2Seq seq(cfg, 5), per_step(cfg, 5);
    ParamList ps = seq.parameters(), pr = per_step.parameters();
    zero_grads(ps);
    zero_grads(pr);
    Rng ra(17), rb(17);
    const TrainOptions opt{.grad_scale = 1.0f, .decoder_chunk_rows = 256};
    const TrainOptions ref{.grad_scale = 1.0f, .decoder_backward = DecoderBackwardPath::per_step};
    const LossStats a = TrainPass(seq).train_step(batch, opt, ra);
    const LossStats b = TrainPass(per_step).train_step(batch, ref, rb);
    EXPECT_NEAR(a.loss, b.loss, 1e-6 * b.loss);
    for (std::size_t i = 0; i < ps.size(); ++i) {
        ASSERT_EQ(ps[i].name, pr[i].name);
        const TensorView g = *ps[i].grad, r = *pr[i].grad;
        float scale = 1.0f;
        for (int64_t j = 0; j < r.numel(); ++j) scale = std::max(scale, std::fabs(r[j]));
        EXPECT_LE(max_abs_diff(g, r), 1e-5 * scale) << ps[i].name;
    }
}

// Beam 5 over 64 sentences: 320 rows a step, so the decoder assembles [e; c] (320 x 320 floats)
// and writes gi's and gh's bias rows over the pool. Every hypothesis, log-probability and
// attention row is the same at 1 and 3 threads.
TEST(ParallelCopies, BeamSearchOfThreeHundredRowsGivesTheSameBitsAtAnyThreadCount) {
    const auto threads = test::keep_num_threads();
    Seq2Seq m(medium_config(), 23);
    std::vector<std::vector<int32_t>> sents;
    Rng data(29);
    for (int i = 0; i < 64; ++i) {
        std::vector<int32_t> s;
        for (int j = 0; j < 4 + i % 6; ++j) s.push_back(4 + static_cast<int32_t>(data.below(36)));
        sents.push_back(s);
    }
    const test::Sources src = test::pad(sents);
    const BeamOptions o{.beam_size = 5, .n_best = 2, .max_length = 8};
    std::vector<std::vector<std::vector<Hypothesis>>> runs;
    for (const int t : {1, 3}) {
        set_num_threads(t);
        runs.push_back(beam_search(m, src.ids, src.lengths, src.S, o));
    }
    for (std::size_t i = 0; i < sents.size(); ++i) {
        ASSERT_EQ(runs[1][i].size(), runs[0][i].size()) << i;
        for (std::size_t k = 0; k < runs[0][i].size(); ++k) {
            const Hypothesis &a = runs[0][i][k], &b = runs[1][i][k];
            EXPECT_EQ(b.tokens, a.tokens) << i << " " << k;
            EXPECT_EQ(b.log_prob, a.log_prob) << i << " " << k;
            EXPECT_EQ(max_abs_diff(b.attention, a.attention), 0.0f) << i << " " << k;
        }
    }
}

}  // namespace
}  // namespace test_parallel_copies
}  // namespace nazar
