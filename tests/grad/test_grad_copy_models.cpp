// Whole-model gradient checks of copy attention (models/copy.h): d loss / d every parameter of a
// tiny copy Seq2Seq, the gate's included, against central differences of the evaluation loss,
// for both decoders, global and local attention, dropout, and both decoder backward paths.
// The batch (tiny_batch) gets extended ids: sentence 0's source holds an out-of-vocabulary word
// twice (extended id V = 10 at positions 1 and 3) which its target needs (a copy-only target),
// and its vocabulary word 5 also sits in the source (generated or copied). Tolerances as
// test_grad_models.cpp (the same loss scale, float32 forward).
#include "nazar/data/extended_vocab.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

namespace nazar {
namespace test_grad_copy_models {
namespace {

using test::tiny_config;

Batch copy_batch() {
    // sources {5, w, 7, w} and {9, 5}; targets {5, w, 7} and {8}; w: out of vocabulary (<unk>)
    Batch b = test::make_batch({{5, 1, 7, 1}, {9, 5}}, {{5, 1, 7}, {8}});
    set_copy_ids(b, std::vector<std::vector<int32_t>>{{5, 10, 7, 10}, {9, 5}},
                 std::vector<std::vector<int32_t>>{{5, 10, 7}, {8}});
    return b;
}

void check_copy_model(ModelConfig cfg, const TrainOptions& opt = {.grad_scale = 1.0f},
                      bool random_w_c = false) {
    cfg.copy_attention = true;
    Seq2Seq model(cfg, 3);
    if (random_w_c) {  // coverage: a fresh model's w_c is 0
        Rng draw(5);
        draw.fill_uniform(model.attention.params.w_c, -1.5f, 1.5f);
    }
    const Batch batch = copy_batch();
    ParamList params = model.parameters();
    EXPECT_EQ(params.back().name, "copy.gate.bias");
    zero_grads(params);
    Rng rng(11);
    const LossStats st = TrainPass(model).train_step(batch, opt, rng);
    EXPECT_EQ(st.tokens, 6);
    // the objective by eval_loss, or by train_step (the same masks) with dropout
    const bool dropout =
        opt.dropout.attention > 0 || opt.dropout.embedding > 0 || opt.coverage_loss_weight > 0;
    if (!dropout) {
        EXPECT_NEAR(TrainPass(model).eval_loss(batch, opt.label_smoothing).loss, st.loss,
                    1e-4 * st.loss);
    }
    auto loss = [&] {
        if (!dropout) return TrainPass(model).eval_loss(batch, opt.label_smoothing).loss;
        Rng same(11);
        return TrainPass(model).train_step(batch, opt, same).loss;
    };
    EXPECT_TRUE(test::check_model_gradients(loss, params));
}

TEST(GradCopyModels, BahdanauGru) {
    check_copy_model(tiny_config());
}

TEST(GradCopyModels, BahdanauDeepOutputTiedPerStep) {
    auto c = tiny_config();
    c.decoder.deep_output = true;
    c.decoder.deep_output_size = 4;
    c.tie_target_embeddings = true;
    check_copy_model(c, {.grad_scale = 1.0f, .decoder_backward = DecoderBackwardPath::per_step});
}

TEST(GradCopyModels, LuongGeneralInputFeedingTwoLayersLstm) {
    auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.decoder.input_feeding = true;
    c.decoder.num_layers = 2;
    c.decoder.cell = CellType::lstm;
    check_copy_model(c);
}

TEST(GradCopyModels, LuongDotWithoutFeeding) {  // would split outputs without copy
    auto c = tiny_config(DecoderKind::luong, ScoreKind::dot);
    c.decoder.hidden_size = 6;  // dot: H == C
    check_copy_model(c);
}

TEST(GradCopyModels, LocalAttention) {  // α over the window
    for (const auto local : {LocalMode::monotonic, LocalMode::predictive}) {
        auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
        c.attention.local = local;
        c.attention.window = local == LocalMode::monotonic ? 1 : 4;  // local-m: windows of 3 < S
        check_copy_model(c);
    }
}

TEST(GradCopyModels, DropoutSites) {
    const TrainOptions opt{
        .grad_scale = 1.0f,
        .dropout = {
            .embedding = 0.3f, .encoder_output = 0.3f, .decoder_output = 0.3f, .attention = 0.3f}};
    check_copy_model(tiny_config(), opt);
    check_copy_model(tiny_config(DecoderKind::luong, ScoreKind::general), opt);
}

// Label smoothing over the fixed vocabulary (docs/spec.md §7a), both decoders.
TEST(GradCopyModels, LabelSmoothing) {
    check_copy_model(tiny_config(), {.label_smoothing = 0.2f, .grad_scale = 1.0f});
    check_copy_model(tiny_config(DecoderKind::luong, ScoreKind::general),
                     {.label_smoothing = 0.2f, .grad_scale = 1.0f});
}

// Copy with coverage (w_c drawn at random: a fresh model's is 0): d cov_t carried into the
// earlier steps' weights, both backward paths. The coverage loss (its kinks are checked in
// test_grad_coverage.cpp) is reported, changes the gradient, and both paths agree with it.
TEST(GradCopyModels, Coverage) {
    for (const auto kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
        auto c =
            tiny_config(kind, kind == DecoderKind::luong ? ScoreKind::concat : ScoreKind::additive);
        c.attention.coverage = true;
        c.copy_attention = true;
        for (const auto path : {DecoderBackwardPath::sequence, DecoderBackwardPath::per_step})
            check_copy_model(c, {.grad_scale = 1.0f, .decoder_backward = path}, true);
        Seq2Seq model(c, 3);
        Rng draw(5);
        draw.fill_uniform(model.attention.params.w_c, -1.5f, 1.5f);
        ParamList params = model.parameters();
        const auto grads = [&](DecoderBackwardPath path, float weight, double* cov_loss) {
            zero_grads(params);
            Rng rng(11);
            *cov_loss = TrainPass(model)
                            .train_step(copy_batch(),
                                        {.grad_scale = 1.0f,
                                         .decoder_backward = path,
                                         .coverage_loss_weight = weight},
                                        rng)
                            .coverage_loss;
            std::vector<Tensor> g;
            for (const auto& p : params) g.push_back(*p.grad);
            return g;
        };
        double l0 = 0, l1 = 0, l2 = 0;
        const auto plain = grads(DecoderBackwardPath::sequence, 0.0f, &l0);
        const auto seq = grads(DecoderBackwardPath::sequence, 0.5f, &l1);
        const auto step = grads(DecoderBackwardPath::per_step, 0.5f, &l2);
        EXPECT_EQ(l0, 0.0);
        EXPECT_GT(l1, 0.0);
        EXPECT_NEAR(l1, l2, 1e-6 * l1);
        double changed = 0;
        for (std::size_t i = 0; i < params.size(); ++i)
            for (int64_t k = 0; k < seq[i].numel(); ++k) {
                EXPECT_NEAR(seq[i][k], step[i][k], 1e-4) << params[i].name << "[" << k << "]";
                changed = std::max(changed, static_cast<double>(std::abs(seq[i][k] - plain[i][k])));
            }
        EXPECT_GT(changed, 1e-3);
    }
}

// score() is the mixture's log P(y) summed per sentence, and equals −eval_loss in total.
TEST(GradCopyModels, ScoreMatchesLoss) {
    auto c = tiny_config();
    c.copy_attention = true;
    Seq2Seq model(c, 5);
    const Batch batch = copy_batch();
    std::vector<double> s(2);
    TrainPass(model).score(batch, s);
    EXPECT_NEAR(s[0] + s[1], -TrainPass(model).eval_loss(batch).loss, 1e-4);
}

}  // namespace
}  // namespace test_grad_copy_models
}  // namespace nazar
