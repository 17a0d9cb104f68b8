// The RNN's packed layout (nn/rnn.h): rows sorted by length, each step on the rows still
// running. What a caller sees must not depend on it: the same outputs, final states and
// gradients whatever the order of the rows (lengths 0 and ties included), and the dropout
// between layers drawn exactly as over the unpacked (T, B, dirs·H) time-major outputs.
#include "nazar/core/kernels.h"
#include "nazar/nn/rnn.h"
#include "tests/common/test_util.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace test_nn_packed_rows {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::close_rel;
using nazar::test::random_tensor;

namespace {

struct Outcome {
    Tensor out, d_x;
    RNNState final, d_init;
    RNNParams grad;
    RNNCache cache;
};

Outcome run(RNN& rnn, ConstTensorView x, const std::vector<int>& lengths, const RNNState& init,
            ConstTensorView d_out, const RNNState& d_final, uint64_t seed, Mode mode) {
    const int B = x.dim(0), T = x.dim(1);
    Outcome r;
    r.out = Tensor({B, T, rnn.output_size()});
    Rng rng(seed);
    rnn.forward(x, lengths, init, r.out, r.final, r.cache, rng, mode);
    for (auto& c : rnn.grad.cells) c.visit([](const std::string&, Tensor& t) { t.zero(); });
    r.d_x = Tensor(x.shape());
    r.d_init = rnn.zero_state(B);
    rnn.backward(d_out, d_final, r.cache, r.d_x, r.d_init);
    r.grad = rnn.grad;
    return r;
}

// rows of axis `axis` of t in the given order
Tensor rows_in(ConstTensorView t, const std::vector<int>& order, int axis) {
    Tensor out(t.shape());
    for (int o = 0; o < (axis == 0 ? 1 : t.dim(0)); ++o)
        for (std::size_t i = 0; i < order.size(); ++i) {
            const ConstTensorView src = axis == 0 ? t : t.select(o);
            const TensorView dst = axis == 0 ? out.view() : out.select(o);
            dst.select(static_cast<int64_t>(i)).copy_from(src.select(order[i]));
        }
    return out;
}

RNN make_rnn(CellType cell, bool bidirectional, float dropout, Rng& rng, bool layer_norm = false,
             bool residual = false, int depth = 1) {
    return RNN({.cell = cell,
                .input_size = 3,
                .hidden_size = 4,
                .num_layers = 2,
                .bidirectional = bidirectional,
                .dropout = dropout,
                .layer_norm = layer_norm,
                .residual = residual,
                .transition_depth = depth},
               rng);
}

struct Case {
    CellType cell;
    bool bidirectional;
};

class RNNPacked : public ::testing::TestWithParam<Case> {};

TEST_P(RNNPacked, RowOrderDoesNotChangeAnything) {
    const auto [cell, bidi] = GetParam();
    const bool lstm = cell == CellType::lstm;
    Rng rng(31);
    RNN rnn = make_rnn(cell, bidi, 0.0f, rng);
    const int B = 6, T = 5, I = 3, H = 4, LD = 2 * (bidi ? 2 : 1), C = (bidi ? 2 : 1) * H;
    const std::vector<int> lengths{2, 5, 0, 3, 5, 1}, order{5, 2, 0, 4, 3, 1};
    const Tensor x = random_tensor(rng, {B, T, I}), d_out = random_tensor(rng, {B, T, C});
    const RNNState init{random_tensor(rng, {LD, B, H}),
                        lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};
    const RNNState d_final{random_tensor(rng, {LD, B, H}),
                           lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};
    const Outcome a = run(rnn, x, lengths, init, d_out, d_final, 1, Mode::train);
    std::vector<int> len_b;
    for (const int i : order) len_b.push_back(lengths[static_cast<std::size_t>(i)]);
    const RNNState init_b{rows_in(init.h, order, 1),
                          lstm ? rows_in(init.c, order, 1) : Tensor({0})};
    const RNNState d_final_b{rows_in(d_final.h, order, 1),
                             lstm ? rows_in(d_final.c, order, 1) : Tensor({0})};
    const Outcome b = run(rnn, rows_in(x, order, 0), len_b, init_b, rows_in(d_out, order, 0),
                          d_final_b, 1, Mode::train);
    EXPECT_TRUE(close_abs(b.out, rows_in(a.out, order, 0), 1e-6));
    EXPECT_TRUE(close_abs(b.final.h, rows_in(a.final.h, order, 1), 1e-6));
    EXPECT_TRUE(close_abs(b.d_x, rows_in(a.d_x, order, 0), 1e-6));
    EXPECT_TRUE(close_abs(b.d_init.h, rows_in(a.d_init.h, order, 1), 1e-6));
    if (lstm) {
        EXPECT_TRUE(close_abs(b.final.c, rows_in(a.final.c, order, 1), 1e-6));
        EXPECT_TRUE(close_abs(b.d_init.c, rows_in(a.d_init.c, order, 1), 1e-6));
    }
    for (std::size_t i = 0; i < a.grad.cells.size(); ++i) {
        EXPECT_TRUE(close_rel(b.grad.cells[i].weight_ih, a.grad.cells[i].weight_ih, 1e-5));
        EXPECT_TRUE(close_rel(b.grad.cells[i].weight_hh, a.grad.cells[i].weight_hh, 1e-5));
        EXPECT_TRUE(close_rel(b.grad.cells[i].bias_ih, a.grad.cells[i].bias_ih, 1e-5));
        EXPECT_TRUE(close_rel(b.grad.cells[i].bias_hh, a.grad.cells[i].bias_hh, 1e-5));
    }
    // the padding: outputs 0, no input gradient; a sentence of length 0 keeps its initial state
    for (int r = 0; r < B; ++r)
        for (int t = lengths[static_cast<std::size_t>(r)]; t < T; ++t) {
            EXPECT_TRUE(close_abs(a.out.select(r).select(t), Tensor({C}), 0));
            EXPECT_TRUE(close_abs(a.d_x.select(r).select(t), Tensor({I}), 0));
        }
    for (int k = 0; k < LD; ++k)
        EXPECT_TRUE(close_abs(a.final.h.select(k).select(2), init.h.select(k).select(2), 0));
}

// Mode::inference keeps one step's states instead of every step's gates (decoding's encoder):
// the same outputs and final states as eval, bit for bit, with the directions one after the
// other (B > kSmallGemmRows) or side by side (fewer rows), a cache reused across batches, and
// no backward from it.
TEST_P(RNNPacked, InferenceEqualsEvalBitForBit) {
    const auto [cell, bidi] = GetParam();
    const bool lstm = cell == CellType::lstm;
    Rng rng(34);
    const int T = 6, I = 3, H = 4, LD = 2 * (bidi ? 2 : 1), C = (bidi ? 2 : 1) * H;
    for (const auto& [ln, res, depth] : {std::tuple{false, false, 1},
                                         {true, false, 1},
                                         {false, true, 1},
                                         {false, false, 3},
                                         {true, true, 2}}) {
        if (lstm && depth > 1) continue;  // deep transition: GRU only
        RNN rnn = make_rnn(cell, bidi, 0.3f, rng, ln, res, depth);
        if (ln) {  // gains away from 1, so that a path skipping them would show
            for (auto& p : rnn.params.cells) rng.fill_uniform(p.ln_weight_hh, 0.5f, 1.5f);
            for (auto& chain : rnn.params.transitions)
                for (auto& p : chain) rng.fill_uniform(p.ln_weight_hh, 0.5f, 1.5f);
        }
        RNNCache reused;
        for (const int B : {12, 5, 12}) {
            std::vector<int> lengths;
            for (int b = 0; b < B; ++b) lengths.push_back((b * 5) % (T + 1));  // 0 and T included
            const Tensor x = random_tensor(rng, {B, T, I});
            const RNNState init{random_tensor(rng, {LD, B, H}),
                                lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};
            Tensor out_e({B, T, C}), out_i({B, T, C});
            RNNState fe, fi;
            RNNCache ce;
            Rng r1(9), r2(9);
            rnn.forward(x, lengths, init, out_e, fe, ce, r1, Mode::eval);
            rnn.forward(x, lengths, init, out_i, fi, reused, r2, Mode::inference);
            EXPECT_TRUE(close_abs(out_i, out_e, 0))
                << B << " rows, layer_norm " << ln << ", residual " << res << ", depth " << depth;
            EXPECT_TRUE(close_abs(fi.h, fe.h, 0)) << B << " rows";
            if (lstm) {
                EXPECT_TRUE(close_abs(fi.c, fe.c, 0)) << B << " rows";
            }
            EXPECT_TRUE(reused.dirs.empty());
            EXPECT_EQ(reused.infer.front().h.dim(0), B);  // one step's rows, not Σ lengths
            Tensor d_x(x.shape());
            RNNState d_init;
            EXPECT_THROW(rnn.backward(out_e, {}, reused, d_x, d_init), Error);
        }
    }
}

// Layer 1 reads dropout(layer 0's outputs) with the mask drawn over the time-major (T, B, C)
// outputs in the caller's row order (what the RNN drew before it was packed): the two-layer
// RNN equals its two layers run one after the other with that mask applied in between; with
// residual connections layer 1 outputs its states plus that input it read.
TEST_P(RNNPacked, DropoutBetweenLayersIsDrawnOverTheUnpackedOutputs) {
    const auto [cell, bidi] = GetParam();
    for (const bool residual : {false, true}) {
        Rng rng(32);
        RNN rnn = make_rnn(cell, bidi, 0.4f, rng, false, residual);
        const int B = 4, T = 5, I = 3, D = bidi ? 2 : 1, C = D * 4;
        const std::vector<int> lengths{3, 5, 1, 4};
        const Tensor x = random_tensor(rng, {B, T, I}), d_out = random_tensor(rng, {B, T, C});
        const Outcome all = run(rnn, x, lengths, {}, d_out, {}, 77, Mode::train);

        RNN first = rnn, second = rnn;
        first.cfg.num_layers = second.cfg.num_layers = 1;
        first.params.cells.resize(D);
        second.cfg.input_size = C;
        second.params.cells.erase(second.params.cells.begin(), second.params.cells.begin() + D);
        for (RNN* r : {&first, &second}) r->grad.cells.resize(D);
        Tensor h0({B, T, C}), mid({B, T, C}), out({B, T, C}), mask({T, B, C});
        RNNState f;
        RNNCache cache;
        Rng none(1), draws(77);
        first.forward(x, lengths, {}, h0, f, cache, none, Mode::train);
        draw_dropout_mask(mask, 0.4f, draws);
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t)
                for (int j = 0; j < C; ++j)
                    mid.select(b).select(t)[j] =
                        h0.select(b).select(t)[j] * mask.select(t).select(b)[j];
        second.forward(mid, lengths, {}, out, f, cache, none, Mode::train);
        if (residual) kernels::axpy(out.numel(), 1.0f, mid.data(), out.data());
        EXPECT_TRUE(close_abs(all.out, out, 0)) << "residual " << residual;
    }
}

// Step t runs the first n_t sorted rows, n_t = |{b : lengths[b] > t}|, stored one step after
// another: Σ lengths rows in all.
TEST(RNNPackedLayout, StepsHoldOnlyTheRunningRows) {
    Rng rng(33);
    RNN rnn = make_rnn(CellType::gru, true, 0.0f, rng);
    const std::vector<int> lengths{2, 5, 0, 3, 5, 1};
    Tensor x = random_tensor(rng, {6, 5, 3}), out({6, 5, 8});
    RNNState f;
    RNNCache cache;
    rnn.forward(x, lengths, {}, out, f, cache, rng, Mode::eval);
    EXPECT_EQ(cache.order, (std::vector<int>{1, 4, 3, 0, 5, 2}));  // stable, longest first
    EXPECT_EQ(cache.rows, (std::vector<int>{5, 4, 3, 2, 2}));
    EXPECT_EQ(cache.offset, (std::vector<int64_t>{0, 5, 9, 12, 14, 16}));
    EXPECT_EQ(cache.layer_out[1].dim(0), 16);
    EXPECT_EQ(cache.dirs[0].gates.dim(0), 16);
}

INSTANTIATE_TEST_SUITE_P(Cells, RNNPacked,
                         ::testing::Values(Case{CellType::gru, true}, Case{CellType::lstm, true},
                                           Case{CellType::gru, false}, Case{CellType::lstm, false}),
                         [](const auto& info) {
                             return std::string(info.param.cell == CellType::gru ? "gru" : "lstm") +
                                    (info.param.bidirectional ? "_bidirectional" : "_forward");
                         });

}  // namespace

}  // namespace test_nn_packed_rows
