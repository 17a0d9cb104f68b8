// nn layers vs PyTorch (tests/parity/parity.h): Linear, Embedding, GRUCell, LSTMCell, RNN,
// SoftmaxXent (output layer + cross-entropy, torch's CrossEntropyLoss(reduction='sum')).
// Each test loads a fixture of tests/parity/gen/make_fixtures.py, sets nazar's parameters by
// state_dict name, runs forward and backward with the fixture's R (loss Σ out ⊙ R) and compares
// every output and every gradient by name.
//
// Tolerance 1e-5 (norm-wise relative, max|a-b| / max|b|) throughout: the reference is float64,
// nazar computes in float32 (unit roundoff 6e-8); these layers are a handful of dot products
// of length <= 20 and a few recurrent steps, so the expected error is ~1e-7..1e-6 and 1e-5
// leaves a 10x margin while catching any wrong term (those show up at 1e-2 or worse).
#include "parity.h"

#include "nazar/core/rng.h"
#include "nazar/nn/embedding.h"
#include "nazar/nn/gru_cell.h"
#include "nazar/nn/linear.h"
#include "nazar/nn/lstm_cell.h"
#include "nazar/nn/rnn.h"
#include "nazar/nn/softmax_xent.h"

#include <gtest/gtest.h>

namespace nazar {
namespace test_parity_nn {
namespace {

using test::Fixture;
constexpr double kTol = 1e-5;

void check_linear(const std::string& name) {
    Fixture f(name);
    Rng rng(1);
    Linear lin({.in_features = f.config["in_features"].get<int>(),
                .out_features = f.config["out_features"].get<int>(),
                .bias = f.config.value("bias", true)},
               rng);
    ParamList params;
    collect_params(lin.params, lin.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const Tensor& x = f["x"];
    Tensor y(f["y"].shape());
    lin.forward(x, y);
    Tensor d_x = Tensor::like(x);
    lin.backward(f["R.y"], x, d_x);

    f.expect_output("y", y, kTol);
    f.expect_grad("x", d_x, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityNn, Linear) {
    check_linear("linear");
}  // x (2, 3, 5): leading dims collapse
TEST(ParityNn, LinearNoBias) {
    check_linear("linear_nobias");
}

TEST(ParityNn, Embedding) {  // repeated ids accumulate; padding_idx 0 gets no gradient
    Fixture f("embedding");
    Rng rng(1);
    Embedding emb({.num_embeddings = f.config["num_embeddings"].get<int>(),
                   .embedding_dim = f.config["embedding_dim"].get<int>(),
                   .padding_idx = f.config["padding_idx"].get<int>()},
                  rng);
    ParamList params;
    collect_params(emb.params, emb.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const std::vector<int> ids_int = f.ints("ids");
    const std::vector<int32_t> ids(ids_int.begin(), ids_int.end());
    Tensor out(f["out"].shape());
    emb.forward(ids, out);
    emb.backward(f["R.out"], ids);

    f.expect_output("out", out, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

void check_gru_cell(const std::string& name) {
    Fixture f(name);
    Rng rng(1);
    GRUCell cell({.input_size = f.config["input_size"].get<int>(),
                  .hidden_size = f.config["hidden_size"].get<int>(),
                  .layer_norm = f.config.value("layer_norm", false)},
                 rng);
    ParamList params;
    collect_params(cell.params, cell.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const Tensor &x = f["x"], &h = f["h"];
    Tensor h_new = Tensor::like(h);
    GRUStepCache cache;
    cell.forward(x, h, h_new, cache);
    Tensor d_x = Tensor::like(x), d_h = Tensor::like(h);
    cell.backward(f["R.h_new"], x, h, cache, d_x, d_h);

    f.expect_output("h_new", h_new, kTol);
    f.expect_grad("x", d_x, kTol);
    f.expect_grad("h", d_h, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityNn, GRUCell) {
    check_gru_cell("gru_cell");
}
// layer-normalised (explicit ops in nazar.torch; every gate block normalised alone), H = 16
TEST(ParityNn, GRUCellLayerNorm) {
    check_gru_cell("gru_cell_layer_norm");
}

void check_lstm_cell(const std::string& name) {
    Fixture f(name);
    Rng rng(1);
    LSTMCell cell({.input_size = f.config["input_size"].get<int>(),
                   .hidden_size = f.config["hidden_size"].get<int>(),
                   .layer_norm = f.config.value("layer_norm", false)},
                  rng);
    ParamList params;
    collect_params(cell.params, cell.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const Tensor &x = f["x"], &h = f["h"], &c = f["c"];
    Tensor h_new = Tensor::like(h), c_new = Tensor::like(c);
    LSTMStepCache cache;
    cell.forward(x, h, c, h_new, c_new, cache);
    Tensor d_x = Tensor::like(x), d_h = Tensor::like(h), d_c = Tensor::like(c);
    cell.backward(f["R.h_new"], f["R.c_new"], x, h, c, cache, d_x, d_h, d_c);

    f.expect_output("h_new", h_new, kTol);
    f.expect_output("c_new", c_new, kTol);
    f.expect_grad("x", d_x, kTol);
    f.expect_grad("h", d_h, kTol);
    f.expect_grad("c", d_c, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityNn, LSTMCell) {
    check_lstm_cell("lstm_cell");
}
TEST(ParityNn, LSTMCellLayerNorm) {  // c' is not normalised; H = 16
    check_lstm_cell("lstm_cell_layer_norm");
}

// The loss is a scalar, so R is one number: passed as grad_scale, the gradients are R·dL.
// Targets hold padding (ignore_index); chunk_rows 3 < 5 counted rows exercises the chunking.
void check_xent(const std::string& name) {
    Fixture f(name);
    const auto& cfg = f.config;
    Rng rng(1);
    Linear gen({.in_features = cfg["in_features"].get<int>(),
                .out_features = cfg["out_features"].get<int>(),
                .bias = cfg["bias"].get<bool>()},
               rng);
    ParamList params;
    collect_params(gen.params, gen.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    SoftmaxXent xent({.ignore_index = cfg["ignore_index"].get<int>(),
                      .label_smoothing = cfg["label_smoothing"].get<float>(),
                      .chunk_rows = cfg["chunk_rows"].get<int>()});
    const Tensor& x = f["x"];
    const std::vector<int> targets = f.ints("targets");
    Tensor d_x = Tensor::like(x);
    const XentStats st = xent.forward_backward(x, gen.params.weight, gen.params.bias, targets,
                                               f["R.loss"][0], d_x, gen.grad.weight, gen.grad.bias);
    const XentStats st_fwd = xent.forward(x, gen.params.weight, gen.params.bias, targets);
    EXPECT_EQ(st_fwd.loss, st.loss);  // the same chunks in the same order

    const Tensor loss = Tensor::from({1}, std::vector<float>{static_cast<float>(st.loss)});
    const Tensor tokens = Tensor::from({1}, std::vector<float>{static_cast<float>(st.tokens)});
    const Tensor correct = Tensor::from({1}, std::vector<float>{static_cast<float>(st.correct)});
    f.expect_output("loss", loss, kTol);
    f.expect_output("tokens", tokens, 0.0);
    f.expect_output("correct", correct, 0.0);
    f.expect_grad("x", d_x, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityNn, SoftmaxXent) {
    check_xent("softmax_xent");
}
TEST(ParityNn, SoftmaxXentLabelSmoothingNoBias) {
    check_xent("softmax_xent_smoothing_nobias");
}

// Padded batch (garbage at padding in x), optional initial state, torch's packed semantics.
void check_rnn(const std::string& name) {
    Fixture f(name);
    const auto& cfg = f.config;
    const bool lstm = cfg["cell"].get<std::string>() == "lstm";
    Rng rng(1);
    RNN rnn({.cell = lstm ? CellType::lstm : CellType::gru,
             .input_size = cfg["input_size"].get<int>(),
             .hidden_size = cfg["hidden_size"].get<int>(),
             .num_layers = cfg["num_layers"].get<int>(),
             .bidirectional = cfg["bidirectional"].get<bool>(),
             .layer_norm = cfg.value("layer_norm", false),
             .residual = cfg.value("residual", false),
             .transition_depth = cfg.value("transition_depth", 1)},
            rng);
    ParamList params;
    collect_params(rnn.params, rnn.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const Tensor& x = f["x"];
    const std::vector<int> lengths = f.ints("lengths");
    const bool with_initial = f.has("h0");
    RNNState initial;
    if (with_initial) {
        initial.h = f["h0"];
        if (lstm) initial.c = f["c0"];
    }
    Tensor out(f["out"].shape());
    RNNState final_state;
    RNNCache cache;
    rnn.forward(x, lengths, initial, out, final_state, cache, rng, Mode::eval);

    RNNState d_final;
    d_final.h = f["R.h_n"];
    if (lstm) d_final.c = f["R.c_n"];
    Tensor d_x = Tensor::like(x);
    RNNState d_initial;
    if (with_initial) {
        d_initial.h = Tensor::like(initial.h);
        if (lstm) d_initial.c = Tensor::like(initial.c);
    }
    rnn.backward(f["R.out"], d_final, cache, d_x, d_initial);

    f.expect_output("out", out, kTol);
    f.expect_output("h_n", final_state.h, kTol);
    if (lstm) f.expect_output("c_n", final_state.c, kTol);
    f.expect_grad("x", d_x, kTol);
    if (with_initial) {
        f.expect_grad("h0", d_initial.h, kTol);
        if (lstm) f.expect_grad("c0", d_initial.c, kTol);
    }
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityNn, RNNGru1LayerInitialState) {
    check_rnn("rnn_gru_1layer_init");
}
TEST(ParityNn, RNNGru2LayerBidirectional) {
    check_rnn("rnn_gru_2layer_bidir");
}
TEST(ParityNn, RNNGruLayerNorm2LayerBidirectionalInitialState) {
    check_rnn("rnn_gru_layer_norm_2layer_bidir_init");
}
TEST(ParityNn, RNNGruResidual3LayerBidirectionalInitialState) {
    check_rnn("rnn_gru_residual_3layer_bidir_init");
}
TEST(ParityNn, RNNLstmLayerNormResidual2Layer) {
    check_rnn("rnn_lstm_layer_norm_residual_2layer");
}
TEST(ParityNn, RNNGruTransitionDepth3TwoLayerBidirectionalInitialState) {  // 2 transitions a step
    check_rnn("rnn_gru_transition3_2layer_bidir_init");
}
TEST(ParityNn, RNNGruLayerNormTransitionDepth2TwoLayerBidirInitialState) {
    check_rnn("rnn_gru_layer_norm_transition2_2layer_bidir_init");
}
TEST(ParityNn, RNNLstmLayerNorm1LayerBidirectionalInitialState) {
    check_rnn("rnn_lstm_layer_norm_1layer_bidir_init");
}
TEST(ParityNn, RNNLstm1LayerBidirectionalInitialState) {
    check_rnn("rnn_lstm_1layer_bidir_init");
}
TEST(ParityNn, RNNLstm2Layer) {
    check_rnn("rnn_lstm_2layer");
}

}  // namespace
}  // namespace test_parity_nn
}  // namespace nazar
