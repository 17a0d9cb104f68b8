// SequenceBackward (nazar/models/sequence_backward.h), the decoder's whole-sequence backward, as
// an object: it refuses steps out of the order it relies on (T−1 … 0, each once; split outputs:
// outputs_backward first), a refused call changes nothing, and an exception that unwinds a pass
// leaves nothing behind in the decoder: the next pass, train_step (either backward path) and
// the step API give bit-identical results to a model that never saw the failed pass. (The
// gradients of the batched pass against the per-step reference: test_models_batched_grads.cpp.)
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/sequence_backward.h"
#include "nazar/models/train_pass.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace nazar {
namespace test_models_sequence_backward {
namespace {

using test::tiny_batch4;  // B = 4, T = 6, padded on both sides
using test::tiny_config;

// f() throws nazar::Error whose message contains `part`.
template <class F>
void expect_error(F&& f, const std::string& part) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one containing '" << part << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

// A teacher-forced train-mode forward of a batch through the decoder's public steps (what
// TrainPass::train_step does), kept for a SequenceBackward.
struct Forward {
    int T = 0, N = 0;
    bool split = false;  // cells_forward + outputs_forward
    EncodedSource src;
    std::vector<DecoderStepCache> steps;  // [T]
    Tensor emb, h_all, c_all, out;        // (T, N, E), (T+1, L, N, H) x2, (T, N, d_out)
    DecoderOutputsCache outputs;
    Tensor d_out;  // (T, N, d_out) the loss gradient the backward starts from
};

void run_forward(Seq2Seq& m, const Batch& b, Forward& f) {
    Decoder& d = m.decoder;
    const int T = b.T, N = b.B, L = d.L, H = d.H;
    f.T = T;
    f.N = N;
    f.split = d.can_split_outputs();
    DecodeSession(m).encode(b.src, b.src_lengths, b.S, f.src);
    f.emb = Tensor(Shape{T, N, d.E});
    std::vector<int32_t> in(N);
    for (int t = 0; t < T; ++t) {
        for (int n = 0; n < N; ++n) in[n] = b.tgt_in_at(n, t);
        d.embedding.forward(in, f.emb.select(t));
    }
    f.h_all = Tensor(Shape{T + 1, L, N, H});
    f.h_all.select(0).copy_from(f.src.init_h);
    const bool lstm = d.cell == CellType::lstm;
    f.c_all = lstm ? Tensor(Shape{T + 1, L, N, H}) : Tensor(Shape{0});
    const auto c_at = [&](int t) { return lstm ? f.c_all.select(t) : TensorView(); };
    f.out = Tensor(Shape{T, N, d.output_size()});
    const Tensor feed0(Shape{N, H});
    const bool feeding = d.kind == DecoderKind::luong && d.feed_size() > 0;
    f.steps.resize(T);
    Rng rng(3);
    for (int t = 0; t < T; ++t) {
        if (f.split) {
            d.cells_forward(f.emb.select(t), f.h_all.select(t), c_at(t), f.src,
                            f.h_all.select(t + 1), c_at(t + 1), f.steps[t], rng, Mode::train);
            continue;
        }
        const ConstTensorView feed =
            feeding ? (t == 0 ? feed0.view() : f.out.select(t - 1)) : ConstTensorView();
        d.step_forward(t, f.emb.select(t), f.h_all.select(t), c_at(t), feed, f.src, m.attention,
                       f.h_all.select(t + 1), c_at(t + 1), f.out.select(t), f.steps[t], rng,
                       Mode::train);
    }
    if (f.split) d.outputs_forward(f.h_all, f.src, m.attention, f.steps, f.outputs, f.out);
    Rng g(11);
    f.d_out = test::random_tensor(g, f.out.shape());
}

// The carries and data-gradient sinks of one backward, as Seq2Seq keeps them.
struct Grads {
    Tensor d_out, d_emb, d_enc_out, d_keys, d_h[2], d_c[2], d_feed0;
    int cur = 0;  // d_h[cur]: the carry into the next step back (at the end: d s_0)
};

Grads make_grads(const Seq2Seq& m, const Forward& f) {
    const Decoder& d = m.decoder;
    Grads g;
    g.d_out = Tensor::clone(f.d_out);  // input feeding adds into it
    g.d_emb = Tensor(Shape{f.T, f.N, d.E});
    g.d_enc_out = Tensor(f.src.enc_out.shape());
    g.d_keys = Tensor(f.src.keys.keys.shape());
    for (Tensor& t : g.d_h) t = Tensor(Shape{d.L, f.N, d.H});
    for (Tensor& t : g.d_c) t = d.cell == CellType::lstm ? Tensor(Shape{d.L, f.N, d.H}) : Tensor();
    g.d_feed0 = Tensor(Shape{f.N, d.H});
    return g;
}

SequenceBackward make_pass(Seq2Seq& m, Forward& f, Grads& g, int chunk_rows = 8) {
    return SequenceBackward(m.decoder, m.attention, f.src,
                            {.steps = f.steps,
                             .emb = f.emb,
                             .h_all = f.h_all,
                             .c_all = f.c_all,
                             .out = f.out,
                             .outputs = f.split ? &f.outputs : nullptr},
                            {.d_emb = g.d_emb, .d_enc_out = g.d_enc_out, .d_keys = g.d_keys},
                            chunk_rows);
}

// Step t back through the pass (cells_step on split outputs), carries as in Seq2Seq.
void step_back(const Seq2Seq& m, const Forward& f, Grads& g, SequenceBackward& pass, int t) {
    const bool lstm = m.decoder.cell == CellType::lstm;
    const bool feeding = m.decoder.kind == DecoderKind::luong && m.decoder.feed_size() > 0;
    const int cur = g.cur, nxt = 1 - cur;
    g.d_h[nxt].zero();
    const TensorView d_c_cur = lstm ? g.d_c[cur].view() : TensorView();
    const TensorView d_c_nxt = lstm ? g.d_c[nxt].view() : TensorView();
    if (lstm) g.d_c[nxt].zero();
    if (f.split) {
        pass.cells_step(t, g.d_h[cur], d_c_cur, g.d_h[nxt], d_c_nxt);
    } else {
        const TensorView d_feed =
            feeding ? (t > 0 ? g.d_out.select(t - 1) : g.d_feed0.view()) : TensorView();
        pass.step(t, g.d_out.select(t), g.d_h[cur], d_c_cur, g.d_h[nxt], d_c_nxt, d_feed);
    }
    g.cur = nxt;
}

// A whole pass; returns every gradient it produced: data gradients, then the parameters'.
std::vector<float> full_pass(Seq2Seq& m, Forward& f) {
    zero_grads(m.parameters());
    Grads g = make_grads(m, f);
    SequenceBackward pass = make_pass(m, f, g);
    if (f.split) pass.outputs_backward(g.d_out);
    for (int t = f.T - 1; t >= 0; --t) step_back(m, f, g, pass, t);
    pass.finish();
    std::vector<float> all;
    for (TensorView v : {g.d_emb.view(), g.d_enc_out.view(), g.d_keys.view(), g.d_h[g.cur].view()})
        all.insert(all.end(), v.data(), v.data() + v.numel());
    for (const ParamRef& p : m.parameters())
        all.insert(all.end(), p.grad->data(), p.grad->data() + p.grad->numel());
    return all;
}

// Every parameter's gradient after one train_step from zero, and the loss.
std::vector<float> train_grads(Seq2Seq& m, const Batch& b, const TrainOptions& opt) {
    ParamList ps = m.parameters();
    zero_grads(ps);
    Rng rng(21);
    const LossStats st = TrainPass(m).train_step(b, opt, rng);
    std::vector<float> all{static_cast<float>(st.loss)};
    for (const ParamRef& p : ps)
        all.insert(all.end(), p.grad->data(), p.grad->data() + p.grad->numel());
    return all;
}

// The step API's log-probs of two steps from <s>.
std::vector<float> step_log_probs(Seq2Seq& m, const Batch& b) {
    DecodeSession ms(m);
    EncodedSource src;
    ms.encode(b.src, b.src_lengths, b.S, src);
    DecoderState state;
    ms.init_state(src, state);
    Tensor lp(Shape{b.B, m.config().tgt_vocab_size});
    std::vector<float> all;
    for (int32_t tok : {2, 5}) {
        const std::vector<int32_t> prev(b.B, tok);
        ms.step(prev, src, state, lp, TensorView());
        all.insert(all.end(), lp.data(), lp.data() + lp.numel());
    }
    return all;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<std::pair<std::string, ModelConfig>> configs() {
    std::vector<std::pair<std::string, ModelConfig>> cs;
    cs.emplace_back("bahdanau gru", tiny_config());
    cs.emplace_back("luong general (split outputs)",
                    tiny_config(DecoderKind::luong, ScoreKind::general));
    auto feed = tiny_config(DecoderKind::luong, ScoreKind::general);
    feed.decoder.cell = CellType::lstm;
    feed.decoder.num_layers = 2;
    feed.decoder.input_feeding = true;
    cs.emplace_back("luong lstm, 2 layers, input feeding", feed);
    auto add = tiny_config(DecoderKind::luong, ScoreKind::additive);
    add.decoder.attention_timing = AttentionTiming::after;
    add.decoder.cell = CellType::lstm;
    cs.emplace_back("luong additive lstm (split outputs, query weights)", add);
    return cs;
}

TEST(SequenceBackward, StepsOutOfOrderAreRefusedAndChangeNothing) {
    for (const auto& [name, cfg] : configs()) {
        SCOPED_TRACE(name);
        Seq2Seq m(cfg, 5), fresh(cfg, 5);
        Forward f, ff;
        run_forward(m, tiny_batch4(), f);
        run_forward(fresh, tiny_batch4(), ff);
        ASSERT_EQ(f.T, 6);
        zero_grads(m.parameters());
        Grads g = make_grads(m, f);
        SequenceBackward pass = make_pass(m, f, g);
        EXPECT_EQ(pass.next_step(), 5);
        if (f.split) {
            expect_error([&] { step_back(m, f, g, pass, 5); }, "needs outputs_backward first");
            expect_error(
                [&] {
                    pass.step(5, g.d_out.select(5), g.d_h[0], g.d_c[0], g.d_h[1], g.d_c[1],
                              TensorView());
                },
                "split outputs");
            pass.outputs_backward(g.d_out);
            expect_error([&] { pass.outputs_backward(g.d_out); }, "once");
        } else {
            expect_error([&] { pass.outputs_backward(g.d_out); }, "did not split the outputs");
            expect_error([&] { pass.cells_step(5, g.d_h[0], g.d_c[0], g.d_h[1], g.d_c[1]); },
                         "needs outputs_backward first");
        }
        expect_error([&] { step_back(m, f, g, pass, 4); }, "out of order: expected step 5");
        expect_error([&] { pass.finish(); }, "before steps 5");
        step_back(m, f, g, pass, 5);
        expect_error([&] { step_back(m, f, g, pass, 5); }, "out of order: expected step 4");
        expect_error([&] { step_back(m, f, g, pass, 0); }, "out of order: expected step 4");
        for (int t = 4; t >= 0; --t) step_back(m, f, g, pass, t);
        EXPECT_EQ(pass.next_step(), -1);
        pass.finish();
        expect_error([&] { pass.finish(); }, "twice");
        expect_error([&] { step_back(m, f, g, pass, 0); }, "after finish");
        // the refused calls changed nothing: the same gradients as an undisturbed pass
        const std::vector<float> ref = full_pass(fresh, ff);
        std::vector<float> got;
        for (TensorView v :
             {g.d_emb.view(), g.d_enc_out.view(), g.d_keys.view(), g.d_h[g.cur].view()})
            got.insert(got.end(), v.data(), v.data() + v.numel());
        for (const ParamRef& p : m.parameters())
            got.insert(got.end(), p.grad->data(), p.grad->data() + p.grad->numel());
        EXPECT_TRUE(same_bits(got, ref));
    }
}

// Aborts a pass of `m` twice: by an exception between steps, and by a step that throws inside.
void abort_passes(Seq2Seq& m, Forward& f) {
    {
        Grads g = make_grads(m, f);
        EXPECT_THROW(
            {
                SequenceBackward pass = make_pass(m, f, g, 4);  // chunks of one step: some flush
                if (f.split) pass.outputs_backward(g.d_out);
                for (int t = f.T - 1; t >= 3; --t) step_back(m, f, g, pass, t);
                throw std::runtime_error("interrupted");
            },
            std::runtime_error);
    }
    Grads g = make_grads(m, f);
    SequenceBackward pass = make_pass(m, f, g);
    if (f.split) pass.outputs_backward(g.d_out);
    step_back(m, f, g, pass, f.T - 1);
    Tensor bad(Shape{f.N + 1, m.decoder.L, m.decoder.H});  // a carry of the wrong shape
    if (f.split)
        EXPECT_THROW(pass.cells_step(f.T - 2, bad, g.d_c[0], g.d_h[1], g.d_c[1]), Error);
    else
        EXPECT_THROW(pass.step(f.T - 2, g.d_out.select(f.T - 2), bad, g.d_c[0], g.d_h[1], g.d_c[1],
                               TensorView()),
                     Error);
    expect_error([&] { step_back(m, f, g, pass, f.T - 2); }, "after a call that threw");
    expect_error([&] { pass.finish(); }, "after a call that threw");
}  // the broken pass is destroyed here

TEST(SequenceBackward, AnExceptionMidBackwardLeavesTheDecoderUsable) {
    const Batch b = tiny_batch4();
    for (const auto& [name, cfg] : configs()) {
        SCOPED_TRACE(name);
        Seq2Seq m(cfg, 5), fresh(cfg, 5);
        Forward f, ff;
        run_forward(m, b, f);
        abort_passes(m, f);
        // the next pass over the same forward, and over a new one
        run_forward(fresh, b, ff);
        EXPECT_TRUE(same_bits(full_pass(m, f), full_pass(fresh, ff)));
        Forward f2, ff2;
        run_forward(m, b, f2);
        run_forward(fresh, b, ff2);
        EXPECT_TRUE(same_bits(full_pass(m, f2), full_pass(fresh, ff2)));
        // a training step on either backward path, and the step API
        for (DecoderBackwardPath path :
             {DecoderBackwardPath::sequence, DecoderBackwardPath::per_step}) {
            const TrainOptions opt{.grad_scale = 1.0f, .decoder_backward = path};
            EXPECT_TRUE(same_bits(train_grads(m, b, opt), train_grads(fresh, b, opt)));
        }
        EXPECT_TRUE(same_bits(step_log_probs(m, b), step_log_probs(fresh, b)));
    }
}

// A train_step that throws after its forward (here: the pass refuses chunk_rows 0 after a split
// outputs forward) leaves no mode behind: the step API and the next train_step are unchanged.
TEST(SequenceBackward, AFailedTrainStepLeavesNoModeBehind) {
    const Batch b = tiny_batch4();
    for (const auto& [name, cfg] : configs()) {
        SCOPED_TRACE(name);
        Seq2Seq m(cfg, 5), fresh(cfg, 5);
        Rng rng(1);
        expect_error(
            [&] { TrainPass(m).train_step(b, {.grad_scale = 1.0f, .decoder_chunk_rows = 0}, rng); },
            "chunk_rows must be >= 1");
        EXPECT_TRUE(same_bits(step_log_probs(m, b), step_log_probs(fresh, b)));
        const TrainOptions opt{.grad_scale = 1.0f};
        EXPECT_TRUE(same_bits(train_grads(m, b, opt), train_grads(fresh, b, opt)));
    }
}

}  // namespace
}  // namespace test_models_sequence_backward
}  // namespace nazar
