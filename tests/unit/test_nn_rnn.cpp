// RNN: torch parameter names, padding (a padded sentence == the sentence alone, forward and
// backward), composition (the RNN == the same recurrence run step by step with GRUCell /
// LSTMCell on each sentence alone), dropout between layers, error paths.
#include "nazar/core/params.h"
#include "nazar/core/threads.h"
#include "nazar/nn/rnn.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"

#include <string>
#include <vector>

namespace test_nn_rnn {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::close_rel;
using nazar::test::random_tensor;

TEST(RNN, TorchNamesOrderAndShapes) {
    Rng rng(1);
    RNN rnn({.cell = CellType::lstm,
             .input_size = 3,
             .hidden_size = 4,
             .num_layers = 2,
             .bidirectional = true},
            rng);
    ParamList pl;
    collect_params(rnn.params, rnn.grad, "encoder.rnn.", pl);
    const std::vector<std::string> want{
        "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
        "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
        "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
        "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
    ASSERT_EQ(pl.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(pl[i].name, "encoder.rnn." + want[i]);
    EXPECT_EQ(pl[0].value->shape(), (Shape{16, 3}));
    EXPECT_EQ(pl[8].value->shape(), (Shape{16, 8}));  // layer 1 reads [fwd; bwd] of layer 0
    EXPECT_EQ(pl[9].value->shape(), (Shape{16, 4}));
    EXPECT_EQ(rnn.output_size(), 8);
    RNN gru({.input_size = 3, .hidden_size = 4, .bias = false}, rng);
    ParamList pl2;
    collect_params(gru.params, gru.grad, "", pl2);
    ASSERT_EQ(pl2.size(), 2u);
    EXPECT_EQ(pl2[1].name, "weight_hh_l0");
    EXPECT_EQ(pl2[1].value->shape(), (Shape{12, 4}));
}

struct Result {
    Tensor out;
    RNNState final;
    Tensor d_x;
    RNNState d_init;
    RNNParams grad;
};

// Runs forward + backward on a (B, T) batch with given initial states and upstream gradients.
static Result run(RNN& rnn, ConstTensorView x, std::span<const int> lengths, const RNNState& init,
                  ConstTensorView d_out, const RNNState& d_final) {
    const int B = x.dim(0), T = x.dim(1);
    Result r;
    r.out = Tensor({B, T, rnn.output_size()});
    RNNCache cache;
    Rng rng(0);
    rnn.forward(x, lengths, init, r.out, r.final, cache, rng, Mode::train);
    for (auto& c : rnn.grad.cells) c.visit([](const std::string&, Tensor& t) { t.zero(); });
    r.d_x = Tensor(x.shape());
    r.d_init = rnn.zero_state(B);
    rnn.backward(d_out, d_final, cache, r.d_x, r.d_init);
    r.grad = rnn.grad;
    return r;
}

// (L·dirs, B, H) -> the rows of sentence b as a (L·dirs, 1, H) tensor
static Tensor state_of(ConstTensorView s, int b) {
    Tensor t({s.dim(0), 1, s.dim(2)});
    for (int i = 0; i < s.dim(0); ++i) t.select(i).select(0).copy_from(s.select(i).select(b));
    return t;
}

class RNNBoth : public ::testing::TestWithParam<CellType> {};

// docs/spec.md §2: a sentence of length L < T gives exactly the same outputs and final states as if
// it were alone in the batch; its gradients too. Dropout between layers is on (same seed both ways
// would give different masks for different shapes), so it is set to 0 here.
TEST_P(RNNBoth, PaddedBatchEqualsEachSentenceAlone) {
    const CellType cell = GetParam();
    const bool lstm = cell == CellType::lstm;
    Rng rng(2);
    const int B = 3, T = 5, I = 3, H = 4;
    RNN rnn(
        {.cell = cell, .input_size = I, .hidden_size = H, .num_layers = 2, .bidirectional = true},
        rng);
    const int LD = 4, C = 2 * H;
    const std::vector<int> lengths{5, 2, 3};
    Tensor x = random_tensor(rng, {B, T, I});
    for (int b = 0; b < B; ++b)  // garbage in the padding must not matter
        for (int t = lengths[b]; t < T; ++t) x.select(b).select(t).fill(1e3f);
    RNNState init{random_tensor(rng, {LD, B, H}),
                  lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};
    Tensor d_out = random_tensor(rng, {B, T, C});
    RNNState d_final{random_tensor(rng, {LD, B, H}),
                     lstm ? random_tensor(rng, {LD, B, H}) : Tensor({0})};
    Result all = run(rnn, x, lengths, init, d_out, d_final);

    RNNParams grad_sum = all.grad;
    for (auto& c : grad_sum.cells) c.visit([](const std::string&, Tensor& t) { t.zero(); });
    for (int b = 0; b < B; ++b) {
        const int L = lengths[b];
        Tensor xb({1, L, I}), dob({1, L, C});
        xb.copy_from(x.select(b).slice(0, L));
        dob.copy_from(d_out.select(b).slice(0, L));
        RNNState ib{state_of(init.h, b), lstm ? state_of(init.c, b) : Tensor({0})};
        RNNState db{state_of(d_final.h, b), lstm ? state_of(d_final.c, b) : Tensor({0})};
        const std::vector<int> len1{L};
        Result one = run(rnn, xb, len1, ib, dob, db);
        SCOPED_TRACE("sentence " + std::to_string(b));
        EXPECT_TRUE(close_abs(all.out.select(b).slice(0, L), one.out.select(0), 1e-6));
        for (int t = L; t < T; ++t)
            EXPECT_TRUE(close_abs(all.out.select(b).select(t), Tensor({C}), 0));
        EXPECT_TRUE(close_abs(state_of(all.final.h, b), one.final.h, 1e-6));
        if (lstm) {
            EXPECT_TRUE(close_abs(state_of(all.final.c, b), one.final.c, 1e-6));
        }
        EXPECT_TRUE(close_abs(all.d_x.select(b).slice(0, L), one.d_x.select(0), 1e-6));
        for (int t = L; t < T; ++t)
            EXPECT_TRUE(close_abs(all.d_x.select(b).select(t), Tensor({I}), 0));
        EXPECT_TRUE(close_abs(state_of(all.d_init.h, b), one.d_init.h, 1e-6));
        if (lstm) {
            EXPECT_TRUE(close_abs(state_of(all.d_init.c, b), one.d_init.c, 1e-6));
        }
        for (std::size_t i = 0; i < grad_sum.cells.size(); ++i) {
            auto add = [](Tensor& acc, const Tensor& g) {
                for (int64_t k = 0; k < acc.numel(); ++k) acc[k] += g[k];
            };
            add(grad_sum.cells[i].weight_ih, one.grad.cells[i].weight_ih);
            add(grad_sum.cells[i].weight_hh, one.grad.cells[i].weight_hh);
            add(grad_sum.cells[i].bias_ih, one.grad.cells[i].bias_ih);
            add(grad_sum.cells[i].bias_hh, one.grad.cells[i].bias_hh);
        }
    }
    // Parameter gradients of the batch = the sum over sentences (summation order differs).
    for (std::size_t i = 0; i < grad_sum.cells.size(); ++i) {
        EXPECT_TRUE(close_rel(all.grad.cells[i].weight_ih, grad_sum.cells[i].weight_ih, 1e-5));
        EXPECT_TRUE(close_rel(all.grad.cells[i].weight_hh, grad_sum.cells[i].weight_hh, 1e-5));
        EXPECT_TRUE(close_rel(all.grad.cells[i].bias_ih, grad_sum.cells[i].bias_ih, 1e-5));
        EXPECT_TRUE(close_rel(all.grad.cells[i].bias_hh, grad_sum.cells[i].bias_hh, 1e-5));
    }
}

// The RNN (all-steps projection GEMM, masks, time-major buffers, bulk weight gradients) equals
// the plain recurrence run with the cells' raw-input step on each sentence alone, in order.
TEST_P(RNNBoth, EqualsStepByStepCells) {
    const CellType cell = GetParam();
    const bool lstm = cell == CellType::lstm;
    Rng rng(3);
    const int B = 2, T = 4, I = 3, H = 5, LAYERS = 2, D = 2, C = D * H;
    RNN rnn({.cell = cell,
             .input_size = I,
             .hidden_size = H,
             .num_layers = LAYERS,
             .bidirectional = true},
            rng);
    const std::vector<int> lengths{4, 3};
    Tensor x = random_tensor(rng, {B, T, I}), d_out = random_tensor(rng, {B, T, C});
    Result all = run(rnn, x, lengths, RNNState{}, d_out, RNNState{});

    // Cells holding the RNN's weights, one per layer-direction.
    std::vector<GRUCell> grus;
    std::vector<LSTMCell> lstms;
    for (int k = 0; k < LAYERS; ++k)
        for (int d = 0; d < D; ++d) {
            const int in = k == 0 ? I : C;
            if (lstm) {
                lstms.emplace_back(LSTMCell::Config{.input_size = in, .hidden_size = H}, rng);
                lstms.back().params = rnn.params.cells[k * D + d];
            } else {
                grus.emplace_back(GRUCell::Config{.input_size = in, .hidden_size = H}, rng);
                grus.back().params = rnn.params.cells[k * D + d];
            }
        }
    for (int b = 0; b < B; ++b) {
        const int L = lengths[b];
        // forward, layer by layer; keep what backward needs
        std::vector<Tensor> layer_in(LAYERS + 1);
        layer_in[0] = Tensor({L, I});
        layer_in[0].copy_from(x.select(b).slice(0, L));
        // states[k·D+d][s] = state before processing step s (s in processing order)
        std::vector<std::vector<Tensor>> hs(LAYERS * D), cs(LAYERS * D);
        std::vector<std::vector<GRUStepCache>> gc(LAYERS * D);
        std::vector<std::vector<LSTMStepCache>> lc(LAYERS * D);
        for (int k = 0; k < LAYERS; ++k) {
            layer_in[k + 1] = Tensor({L, C});
            for (int d = 0; d < D; ++d) {
                const int idx = k * D + d;
                hs[idx].assign(L + 1, Tensor({1, H}));
                cs[idx].assign(L + 1, Tensor({1, H}));
                gc[idx].resize(L);
                lc[idx].resize(L);
                for (int s = 0; s < L; ++s) {
                    const int t = d == 0 ? s : L - 1 - s;
                    const TensorView xt = layer_in[k].slice(t, t + 1);
                    if (lstm)
                        lstms[idx].forward(xt, hs[idx][s], cs[idx][s], hs[idx][s + 1],
                                           cs[idx][s + 1], lc[idx][s]);
                    else
                        grus[idx].forward(xt, hs[idx][s], hs[idx][s + 1], gc[idx][s]);
                    layer_in[k + 1]
                        .select(t)
                        .reshape({C})
                        .slice(d * H, (d + 1) * H)
                        .copy_from(hs[idx][s + 1].reshape({H}));
                }
            }
        }
        SCOPED_TRACE("sentence " + std::to_string(b));
        EXPECT_TRUE(
            close_abs(all.out.select(b).slice(0, L).reshape({L, C}), layer_in[LAYERS], 1e-6));
        for (int k = 0; k < LAYERS; ++k)
            for (int d = 0; d < D; ++d)
                EXPECT_TRUE(close_abs(all.final.h.select(k * D + d).select(b),
                                      hs[k * D + d][L].reshape({H}), 1e-6));
        // backward
        std::vector<Tensor> d_layer(LAYERS + 1);
        d_layer[LAYERS] = Tensor({L, C});
        d_layer[LAYERS].copy_from(d_out.select(b).slice(0, L));
        for (int k = LAYERS - 1; k >= 0; --k) {
            d_layer[k] = Tensor({L, k == 0 ? I : C});
            for (int d = 0; d < D; ++d) {
                const int idx = k * D + d;
                Tensor dh({1, H}), dc({1, H});
                for (int s = L - 1; s >= 0; --s) {
                    const int t = d == 0 ? s : L - 1 - s;
                    Tensor dh_new = dh, dc_new = dc;
                    for (int j = 0; j < H; ++j) dh_new[j] += d_layer[k + 1].at(t, d * H + j);
                    dh.zero();
                    dc.zero();
                    const TensorView xt = layer_in[k].slice(t, t + 1),
                                     dxt = d_layer[k].slice(t, t + 1);
                    if (lstm)
                        lstms[idx].backward(dh_new, dc_new, xt, hs[idx][s], cs[idx][s], lc[idx][s],
                                            dxt, dh, dc);
                    else
                        grus[idx].backward(dh_new, xt, hs[idx][s], gc[idx][s], dxt, dh);
                }
            }
        }
        EXPECT_TRUE(close_rel(all.d_x.select(b).slice(0, L).reshape({L, I}), d_layer[0], 1e-5));
    }
    for (int i = 0; i < LAYERS * D; ++i) {
        const RNNCellParams& g = lstm ? lstms[i].grad : grus[i].grad;
        EXPECT_TRUE(close_rel(all.grad.cells[i].weight_ih, g.weight_ih, 1e-5)) << i;
        EXPECT_TRUE(close_rel(all.grad.cells[i].weight_hh, g.weight_hh, 1e-5)) << i;
        EXPECT_TRUE(close_rel(all.grad.cells[i].bias_ih, g.bias_ih, 1e-5)) << i;
        EXPECT_TRUE(close_rel(all.grad.cells[i].bias_hh, g.bias_hh, 1e-5)) << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Cells, RNNBoth, ::testing::Values(CellType::gru, CellType::lstm),
                         [](const auto& info) {
                             return info.param == CellType::gru ? "gru" : "lstm";
                         });

TEST(RNN, DropoutBetweenLayersOnlyInTraining) {
    Rng rng(4);
    RNN rnn({.input_size = 3, .hidden_size = 4, .num_layers = 2, .dropout = 0.5f}, rng);
    RNN plain = rnn;
    plain.cfg.dropout = 0.0f;
    Tensor x = random_tensor(rng, {2, 3, 3});
    Tensor o1({2, 3, 4}), o2({2, 3, 4}), o3({2, 3, 4}), o4({2, 3, 4});
    RNNState f;
    RNNCache cache;
    Rng r1(7), r2(7), r3(7);
    rnn.forward(x, {}, {}, o1, f, cache, r1, Mode::eval);
    plain.forward(x, {}, {}, o2, f, cache, r2, Mode::train);
    EXPECT_TRUE(close_abs(o1, o2, 0));  // eval = no dropout
    rnn.forward(x, {}, {}, o3, f, cache, r3, Mode::train);
    EXPECT_FALSE(close_abs(o1, o3, 1e-3));  // masks change layer 1's input
    Rng r4(7);
    rnn.forward(x, {}, {}, o4, f, cache, r4, Mode::train);
    EXPECT_TRUE(close_abs(o3, o4, 0));  // same seed, same masks
}

TEST(RNN, ZeroLengthSentenceKeepsInitialState) {
    Rng rng(5);
    RNN rnn({.cell = CellType::lstm, .input_size = 2, .hidden_size = 3, .bidirectional = true},
            rng);
    Tensor x = random_tensor(rng, {2, 3, 2}), out({2, 3, 6});
    RNNState init{random_tensor(rng, {2, 2, 3}), random_tensor(rng, {2, 2, 3})}, f;
    RNNCache cache;
    const std::vector<int> lengths{3, 0};
    rnn.forward(x, lengths, init, out, f, cache, rng, Mode::eval);
    EXPECT_TRUE(close_abs(out.select(1), Tensor({3, 6}), 0));
    EXPECT_TRUE(close_abs(state_of(f.h, 1), state_of(init.h, 1), 0));
    EXPECT_TRUE(close_abs(state_of(f.c, 1), state_of(init.c, 1), 0));
}

TEST(RNN, Errors) {
    Rng rng(6);
    EXPECT_THROW(RNN({.input_size = 3, .hidden_size = 4, .num_layers = 0}, rng), Error);
    EXPECT_THROW(RNN({.input_size = 3, .hidden_size = 4, .dropout = 1.5f}, rng), Error);
    RNN rnn({.input_size = 3, .hidden_size = 4, .bidirectional = true}, rng);
    Tensor x({2, 5, 3}), out({2, 5, 8}), bad_out({2, 5, 4}), bad_x({2, 5, 2});
    RNNState f;
    RNNCache cache;
    const std::vector<int> too_long{5, 6}, wrong_count{5}, ok{5, 2};
    EXPECT_THROW(rnn.forward(bad_x, ok, {}, out, f, cache, rng, Mode::eval), Error);
    EXPECT_THROW(rnn.forward(x, ok, {}, bad_out, f, cache, rng, Mode::eval), Error);
    try {
        rnn.forward(x, too_long, {}, out, f, cache, rng, Mode::eval);
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("lengths[1] = 6"), std::string::npos) << e.what();
    }
    EXPECT_THROW(rnn.forward(x, wrong_count, {}, out, f, cache, rng, Mode::eval), Error);
    RNNState with_c{Tensor({2, 2, 4}), Tensor({2, 2, 4})};
    EXPECT_THROW(rnn.forward(x, ok, with_c, out, f, cache, rng, Mode::eval),
                 Error);  // a GRU has no c
    RNNState bad_h{Tensor({1, 2, 4}), Tensor({0})};
    EXPECT_THROW(rnn.forward(x, ok, bad_h, out, f, cache, rng, Mode::eval), Error);
    rnn.forward(x, ok, {}, out, f, cache, rng, Mode::eval);
    RNNState none;
    EXPECT_THROW(rnn.backward(bad_out, {}, cache, x, none), Error);
    EXPECT_THROW(rnn.backward(out, {}, cache, bad_x, none), Error);
}

// Buffers are sized once per batch and reused: a second batch of the same or smaller size
// keeps every cache buffer where it was (resize() reuses memory; nothing allocates per step).
TEST(RNN, CacheBuffersAreReusedAcrossBatches) {
    Rng rng(7);
    RNN rnn({.cell = CellType::lstm,
             .input_size = 3,
             .hidden_size = 4,
             .num_layers = 2,
             .bidirectional = true},
            rng);
    Tensor x = random_tensor(rng, {3, 5, 3}), out({3, 5, 8}), d_x({3, 5, 3});
    RNNState f, d_init;
    RNNCache cache;
    rnn.forward(x, {}, {}, out, f, cache, rng, Mode::train);
    rnn.backward(out, {}, cache, d_x, d_init);
    std::vector<const float*> before;
    for (const auto& d : cache.dirs)
        before.insert(before.end(), {d.gates.data(), d.h.data(), d.c.data(), d.tanh_c.data()});
    Tensor x2 = random_tensor(rng, {2, 4, 3}), out2({2, 4, 8}), d_x2({2, 4, 3});
    rnn.forward(x2, {}, {}, out2, f, cache, rng, Mode::train);
    rnn.backward(out2, {}, cache, d_x2, d_init);
    std::vector<const float*> after;
    for (const auto& d : cache.dirs)
        after.insert(after.end(), {d.gates.data(), d.h.data(), d.c.data(), d.tanh_c.data()});
    EXPECT_EQ(before, after);
}

// At <= kSmallGemmRows rows a bidirectional layer runs its two directions side by side, one per
// thread, each with its products whole; at more rows one after the other, each product split
// over the pool. Every output and final state is bit-identical at 1, 2 and 3 threads either
// way: a direction writes only its own state and its half of each output row. The sizes make
// W_hh (768 x 256) large enough that the pool would split its product.
TEST(RNN, BidirectionalLayersGiveTheSameBitsAtAnyThreadCount) {
    const auto threads = test::keep_num_threads();
    for (const CellType cell : {CellType::gru, CellType::lstm})
        for (const int B : {1, 3, 8, 9}) {
            Rng rng(11);
            RNN rnn({.cell = cell,
                     .input_size = 48,
                     .hidden_size = 256,
                     .num_layers = 2,
                     .bidirectional = true},
                    rng);
            const Tensor x = random_tensor(rng, {B, 7, 48});
            std::vector<int> lengths;
            for (int b = 0; b < B; ++b) lengths.push_back(7 - (b * 3) % 7);
            std::vector<Tensor> outs, finals;
            for (const int n : {1, 2, 3}) {
                set_num_threads(n);
                Tensor out({B, 7, 512});
                RNNState f;
                RNNCache cache;
                Rng unused(1);
                rnn.forward(x, lengths, {}, out, f, cache, unused, Mode::eval);
                outs.push_back(std::move(out));
                finals.push_back(std::move(f.h));
            }
            for (std::size_t i = 1; i < outs.size(); ++i) {
                EXPECT_EQ(max_abs_diff(outs[i], outs[0]), 0.0) << B << " rows, run " << i;
                EXPECT_EQ(max_abs_diff(finals[i], finals[0]), 0.0) << B << " rows, run " << i;
            }
            EXPECT_GT(max_abs_diff(outs[0], Tensor(outs[0].shape())), 0.0);  // not all zero
        }
}

}  // namespace test_nn_rnn
