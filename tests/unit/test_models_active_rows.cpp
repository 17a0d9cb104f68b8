// Training skips padded decoder rows (TrainPass::train_step: rows sorted by target length inside
// the model, each step on its active prefix; seq2seq.h plan_active_rows). What a user sees must
// not depend on it: for a batch of very different target lengths, the loss and every gradient
// are the same (float rounding) whatever the order of the caller's rows, and the same as the
// sum of the sentences trained one at a time (B = 1: nothing to skip). Dropout masks given in
// the caller's order follow their sentence.
// Tolerance: grad_scale = 1, so each gradient entry is a float32 sum of at most T·B = 60
// per-row terms, regrouped (another row order, other GEMM blockings); as in
// test_models_batched_grads.cpp we require max |a − b| ≤ 1e-5 · max(1, max |b|) per tensor and
// the losses to 1e-5 relative (observed: ≤ 1e-6).
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace nazar {
namespace test_models_active_rows {
namespace {

using test::make_batch;
using test::tiny_config;

// Target lengths 1 … 9 (T = 10), source lengths 1 … 6, in no particular order.
const std::vector<std::vector<int32_t>> kSrc = {{5, 6},    {9},          {4, 5, 6, 7, 8},
                                                {7, 7, 8}, {6, 5, 4, 9}, {8, 4, 6, 5, 9, 7}};
const std::vector<std::vector<int32_t>> kTgt = {
    {6, 7}, {5, 9, 9, 4, 8, 6, 7, 5, 4}, {8}, {4, 4, 5, 6, 9, 8}, {9, 5, 6, 7}, {7, 6, 5}};

template <class T>
std::vector<T> permuted(const std::vector<T>& v, const std::vector<int>& order) {
    std::vector<T> out;
    for (const int i : order) out.push_back(v[static_cast<std::size_t>(i)]);
    return out;
}

struct Result {
    double loss = 0;
    int64_t tokens = 0;
    std::vector<std::string> names;
    std::vector<std::vector<float>> grads;
};

// Accumulates train_step of each batch (grad_scale 1) into one set of gradients.
Result train(const ModelConfig& cfg, const std::vector<Batch>& batches, TrainOptions opt,
             const std::vector<const DropoutMasks*>& masks = {}) {
    Seq2Seq m(cfg, 5);
    const ParamList params = m.parameters();
    zero_grads(params);
    Result r;
    opt.grad_scale = 1.0f;
    for (std::size_t i = 0; i < batches.size(); ++i) {
        opt.masks = masks.empty() ? nullptr : masks[i];
        Rng rng(11);
        const LossStats st = TrainPass(m).train_step(batches[i], opt, rng);
        r.loss += st.loss;
        r.tokens += st.tokens;
    }
    for (const ParamRef& p : params) {
        r.names.push_back(p.name);
        r.grads.emplace_back(p.grad->data(), p.grad->data() + p.grad->numel());
    }
    return r;
}

void expect_same(const Result& a, const Result& b, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(b.loss));
    ASSERT_EQ(a.names, b.names);
    for (std::size_t i = 0; i < a.grads.size(); ++i) {
        float scale = 1.0f, diff = 0.0f;
        for (std::size_t j = 0; j < b.grads[i].size(); ++j) {
            scale = std::max(scale, std::fabs(b.grads[i][j]));
            diff = std::max(diff, std::fabs(a.grads[i][j] - b.grads[i][j]));
        }
        EXPECT_LE(diff, 1e-5f * scale) << a.names[i];
    }
}

std::vector<std::pair<std::string, ModelConfig>> variants() {
    std::vector<std::pair<std::string, ModelConfig>> v;
    v.emplace_back("bahdanau gru", tiny_config());
    auto c = tiny_config();
    c.decoder.cell = CellType::lstm;
    c.decoder.deep_output = true;
    v.emplace_back("bahdanau lstm, deep output", c);
    v.emplace_back("luong general (split outputs)",
                   tiny_config(DecoderKind::luong, ScoreKind::general));
    c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.decoder.input_feeding = true;
    v.emplace_back("luong general, input feeding", c);
    c.decoder.cell = CellType::lstm;
    v.emplace_back("luong lstm general, input feeding", c);
    c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.attention.local = LocalMode::predictive;
    c.attention.window = 2;
    c.attention.position_size = 3;
    v.emplace_back("luong local-p", c);
    c.attention.local = LocalMode::monotonic;
    c.decoder.input_feeding = true;
    v.emplace_back("luong local-m, input feeding", c);
    c = tiny_config(DecoderKind::luong, ScoreKind::dot);
    c.decoder.hidden_size = 6;  // dot needs H = C
    c.attention.scale = ScaleMode::learned;
    v.emplace_back("luong dot, learned scale", c);
    c = tiny_config(DecoderKind::luong, ScoreKind::additive);
    c.decoder.attention_timing = AttentionTiming::after;
    v.emplace_back("luong additive, timing after", c);
    // the encoder runs packed (nn/rnn.h): other encoders, each on its own row order
    c = tiny_config();
    c.encoder.cell = CellType::lstm;
    c.encoder.num_layers = 2;
    v.emplace_back("bahdanau, 2-layer bidirectional lstm encoder", c);
    c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.encoder.bidirectional = false;
    c.encoder.hidden_size = 6;
    c.encoder.num_layers = 2;
    v.emplace_back("luong general, 2-layer unidirectional gru encoder", c);
    // not skipped (seq2seq.h can_skip_rows), checked all the same
    c = tiny_config();
    c.decoder.num_layers = 2;
    v.emplace_back("bahdanau 2 layers", c);
    c = tiny_config();
    c.attention.coverage = true;
    v.emplace_back("bahdanau coverage", c);
    return v;
}

TEST(ActiveRows, LossAndGradientsDoNotDependOnRowOrderOrPadding) {
    const std::vector<int> shuffled = {0, 1, 2, 3, 4, 5}, reversed = {5, 2, 4, 0, 3, 1};
    for (const auto& [name, cfg] : variants()) {
        for (const DecoderBackwardPath path :
             {DecoderBackwardPath::sequence, DecoderBackwardPath::per_step}) {
            const TrainOptions opt{.decoder_backward = path, .decoder_chunk_rows = 8};
            const std::string what =
                name + (path == DecoderBackwardPath::per_step ? ", per-step backward" : "");
            const Result a = train(cfg, {make_batch(kSrc, kTgt)}, opt);
            const Result b =
                train(cfg, {make_batch(permuted(kSrc, reversed), permuted(kTgt, reversed))}, opt);
            std::vector<Batch> alone;
            for (std::size_t i = 0; i < kSrc.size(); ++i)
                alone.push_back(make_batch({kSrc[i]}, {kTgt[i]}));
            const Result c = train(cfg, alone, opt);
            expect_same(b, a, what + ": another row order");
            expect_same(c, a, what + ": one sentence at a time");
        }
    }
}

TEST(ActiveRows, StepsRunOnTheRowsThatStillHaveTargets) {
    // targets of lengths 2, 9, 1, 6, 4, 3 (+ </s>): sorted, step t has the rows with > t targets
    Seq2Seq m(tiny_config(), 5);
    TrainPass pass(m);
    Rng rng(3);
    pass.train_step(make_batch(kSrc, kTgt), {.grad_scale = 1.0f}, rng);
    const std::vector<int> want = {6, 6, 5, 4, 3, 2, 2, 1, 1, 1};
    EXPECT_EQ(std::vector<int>(pass.active_rows().begin(), pass.active_rows().end()), want);
    // eval and 2 layers run every row
    pass.eval_loss(make_batch(kSrc, kTgt));
    EXPECT_EQ(std::count(pass.active_rows().begin(), pass.active_rows().end(), 6), 10);
    auto two = tiny_config();
    two.decoder.num_layers = 2;
    Seq2Seq m2(two, 5);
    TrainPass pass2(m2);
    pass2.train_step(make_batch(kSrc, kTgt), {.grad_scale = 1.0f}, rng);
    EXPECT_EQ(std::count(pass2.active_rows().begin(), pass2.active_rows().end(), 6), 10);
}

// Masks of (B, ·) or (T, B, ·) rows, drawn once, given in the caller's order: each sentence
// keeps its masks whichever order it comes in.
TEST(ActiveRows, GivenDropoutMasksFollowTheirSentence) {
    const std::vector<int> order = {3, 5, 0, 2, 1, 4};
    const Batch a = make_batch(kSrc, kTgt);
    const Batch b = make_batch(permuted(kSrc, order), permuted(kTgt, order));
    auto cfg = tiny_config(DecoderKind::luong, ScoreKind::general);
    cfg.decoder.input_feeding = true;
    const int B = a.B, S = a.S, T = a.T, E = cfg.embedding_size, C = 6, D = 5;
    DropoutMasks ma, mb;
    Rng rng(21);
    const auto draw = [&](Tensor& x, Tensor& y, Shape shape, int axis) {
        x.resize(shape, false);
        draw_dropout_mask(x, 0.3f, rng, -1);
        y.resize(shape, false);
        const int outer = axis == 0 ? 1 : T;
        for (int o = 0; o < outer; ++o)
            for (int i = 0; i < B; ++i) {
                const int src = order[static_cast<std::size_t>(i)];
                if (axis == 0)
                    y.select(i).copy_from(x.select(src));
                else
                    y.select(o).select(i).copy_from(x.select(o).select(src));
            }
    };
    draw(ma.src_emb, mb.src_emb, {B, S, E}, 0);
    draw(ma.enc_out, mb.enc_out, {B, S, C}, 0);
    draw(ma.tgt_emb, mb.tgt_emb, {T, B, E}, 1);
    draw(ma.dec_out, mb.dec_out, {T, B, D}, 1);
    draw(ma.attention, mb.attention, {T, B, S}, 1);
    expect_same(train(cfg, {b}, {}, {&mb}), train(cfg, {a}, {}, {&ma}),
                "input feeding, every dropout site");
}

}  // namespace
}  // namespace test_models_active_rows
}  // namespace nazar
