// Whole-model checks of coverage attention (nazar/attention/coverage.h) in a tiny Seq2Seq
// (tests/common/tiny_models.h: B = 2, one padded sentence on both sides): d loss / d every
// parameter against central differences (tolerances as tests/grad/test_grad_models.cpp), for
// the Bahdanau decoder (additive) and the Luong decoder (concat, timing after, no input feeding:
// the decoder that would otherwise run split outputs), on both decoder backward paths. w_c is
// drawn at random: a fresh model's w_c is 0.
// The coverage loss's own finite-difference checks are in test_grad_coverage.cpp (its min()
// has kinks where α = cov, and a tiny model's near-uniform weights sit on them); here it is
// checked that both backward paths give the same gradient with it, and that it changes it.
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nazar {
namespace test_grad_coverage_models {
namespace {

using test::tiny_batch;
using test::tiny_config;

ModelConfig coverage_config(DecoderKind kind) {
    auto c =
        tiny_config(kind, kind == DecoderKind::luong ? ScoreKind::concat : ScoreKind::additive);
    c.attention.coverage = true;
    return c;
}

void randomise_w_c(Seq2Seq& model) {
    Rng rng(5);
    rng.fill_uniform(model.attention.params.w_c, -1.5f, 1.5f);
}

std::vector<Tensor> gradients(Seq2Seq& model, const TrainOptions& opt, double* loss = nullptr) {
    ParamList params = model.parameters();
    zero_grads(params);
    Rng rng(11);
    const LossStats st = TrainPass(model).train_step(tiny_batch(), opt, rng);
    if (loss) *loss = st.loss + st.coverage_loss;
    std::vector<Tensor> g;
    for (const auto& p : params) g.push_back(*p.grad);
    return g;
}

void check_model(DecoderKind kind, DecoderBackwardPath path) {
    Seq2Seq model(coverage_config(kind), 3);
    randomise_w_c(model);
    const Batch batch = tiny_batch();
    ParamList params = model.parameters();
    zero_grads(params);
    Rng rng(11);
    const LossStats st =
        TrainPass(model).train_step(batch, {.grad_scale = 1.0f, .decoder_backward = path}, rng);
    // eval_loss runs the same coverage recurrence
    EXPECT_NEAR(TrainPass(model).eval_loss(batch).loss, st.loss, 1e-4 * st.loss);
    auto loss = [&] { return TrainPass(model).eval_loss(batch).loss; };
    EXPECT_TRUE(test::check_model_gradients(loss, params));
}

}  // namespace

TEST(GradCoverageModels, BahdanauAdditivePerStep) {
    check_model(DecoderKind::bahdanau, DecoderBackwardPath::per_step);
}
TEST(GradCoverageModels, BahdanauAdditiveSequence) {
    check_model(DecoderKind::bahdanau, DecoderBackwardPath::sequence);
}
TEST(GradCoverageModels, LuongConcatPerStep) {
    check_model(DecoderKind::luong, DecoderBackwardPath::per_step);
}
TEST(GradCoverageModels, LuongConcatSequence) {
    check_model(DecoderKind::luong, DecoderBackwardPath::sequence);
}

// The coverage loss: both decoder backward paths agree with it, and it changes the gradient.
TEST(GradCoverageModels, CoverageLossPathsAgree) {
    for (DecoderKind kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
        Seq2Seq model(coverage_config(kind), 3);
        randomise_w_c(model);
        const TrainOptions seq{.grad_scale = 1.0f, .coverage_loss_weight = 0.8f};
        TrainOptions per = seq;
        per.decoder_backward = DecoderBackwardPath::per_step;
        TrainOptions none = seq;
        none.coverage_loss_weight = 0.0f;
        double l_seq = 0, l_per = 0, l_none = 0;
        const auto g_seq = gradients(model, seq, &l_seq);
        const auto g_per = gradients(model, per, &l_per);
        const auto g_none = gradients(model, none, &l_none);
        EXPECT_NEAR(l_seq, l_per, 1e-5 * l_seq);
        EXPECT_GT(l_seq - l_none, 0.05) << "the coverage loss added nothing";
        double diff_paths = 0, diff_loss = 0;
        for (std::size_t i = 0; i < g_seq.size(); ++i)
            for (int64_t k = 0; k < g_seq[i].numel(); ++k) {
                diff_paths = std::max<double>(diff_paths, std::abs(g_seq[i][k] - g_per[i][k]));
                diff_loss = std::max<double>(diff_loss, std::abs(g_seq[i][k] - g_none[i][k]));
            }
        EXPECT_LT(diff_paths, 1e-4);
        EXPECT_GT(diff_loss, 1e-3);
    }
}

// A model whose loss weight asks for coverage it does not have is refused.
TEST(GradCoverageModels, LossWeightNeedsCoverage) {
    Seq2Seq model(tiny_config(), 3);
    Rng rng(11);
    EXPECT_THROW(TrainPass(model).train_step(tiny_batch(), {.coverage_loss_weight = 0.5f}, rng),
                 UsageError);
}

}  // namespace test_grad_coverage_models
}  // namespace nazar
