// Whole-model checks of monotonic attention (nazar/attention/monotonic.h) in a tiny Seq2Seq
// (tests/common/tiny_models.h: B = 2, one padded sentence on both sides): d loss / d every
// parameter against central differences (tolerances as tests/grad/test_grad_models.cpp), for
// the Bahdanau decoder (additive, attention before the cell) and the Luong decoder (general,
// after the cell, no input feeding: the decoder that would otherwise run split outputs), on
// both decoder backward paths. The gradient reaches earlier steps through α_{t−1}; the bias r
// is set so that the alignments are neither saturated nor uniform. Noise off: the finite
// differences read the evaluation loss, which has none. MoChA (chunks of 2-4) the same way, with
// additive and concat scores.
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nazar {
namespace test_grad_monotonic_models {
namespace {

using test::tiny_batch;
using test::tiny_config;

ModelConfig monotonic_config(DecoderKind kind, float noise = 0.0f) {
    auto c =
        tiny_config(kind, kind == DecoderKind::luong ? ScoreKind::general : ScoreKind::additive);
    c.attention.monotonic = true;
    c.attention.monotonic_bias_init = 0.3f;
    c.attention.monotonic_noise = noise;
    return c;
}

// MoChA (AttentionConfig::mocha_chunk): additive (Bahdanau) or concat (Luong) scores, chunk w
ModelConfig mocha_config(DecoderKind kind, int w) {
    auto c =
        tiny_config(kind, kind == DecoderKind::luong ? ScoreKind::concat : ScoreKind::additive);
    c.attention.monotonic = true;
    c.attention.monotonic_bias_init = 0.3f;
    c.attention.monotonic_noise = 0.0f;
    c.attention.mocha_chunk = w;
    return c;
}

void check_model(const ModelConfig& cfg, DecoderBackwardPath path) {
    Seq2Seq model(cfg, 3);
    if (cfg.attention.mocha_chunk > 0) {  // energies 4x larger: α spread over the positions and
        // steps, so that d α_{t} carried back from step t + 1 weighs in the gradient
        for (Tensor* v : {&model.attention.params.v_a, &model.attention.params.v_c})
            for (int64_t i = 0; i < v->numel(); ++i) (*v)[i] *= 4.0f;
    }
    const Batch batch = tiny_batch();
    ParamList params = model.parameters();
    zero_grads(params);
    Rng rng(11);
    const LossStats st =
        TrainPass(model).train_step(batch, {.grad_scale = 1.0f, .decoder_backward = path}, rng);
    EXPECT_NEAR(TrainPass(model).eval_loss(batch).loss, st.loss, 1e-4 * st.loss);
    EXPECT_NE(model.attention.grad.r[0], 0.0f) << "the bias got no gradient";
    if (cfg.attention.mocha_chunk > 1) {
        EXPECT_NE(model.attention.grad.v_c[0], 0.0f) << "the chunk energy got no gradient";
    }
    auto loss = [&] { return TrainPass(model).eval_loss(batch).loss; };
    EXPECT_TRUE(test::check_model_gradients(loss, params));
}

}  // namespace

TEST(GradMonotonicModels, BahdanauAdditivePerStep) {
    check_model(monotonic_config(DecoderKind::bahdanau), DecoderBackwardPath::per_step);
}
TEST(GradMonotonicModels, BahdanauAdditiveSequence) {
    check_model(monotonic_config(DecoderKind::bahdanau), DecoderBackwardPath::sequence);
}
TEST(GradMonotonicModels, LuongGeneralPerStep) {
    check_model(monotonic_config(DecoderKind::luong), DecoderBackwardPath::per_step);
}
TEST(GradMonotonicModels, LuongGeneralSequence) {
    check_model(monotonic_config(DecoderKind::luong), DecoderBackwardPath::sequence);
}

// MoChA: d loss reaches the chunk energies' v_c and, through β, α and the monotonic energies.
TEST(GradMonotonicModels, BahdanauMochaPerStep) {
    check_model(mocha_config(DecoderKind::bahdanau, 2), DecoderBackwardPath::per_step);
}
TEST(GradMonotonicModels, BahdanauMochaSequence) {
    check_model(mocha_config(DecoderKind::bahdanau, 3), DecoderBackwardPath::sequence);
}
TEST(GradMonotonicModels, LuongConcatMochaPerStep) {
    check_model(mocha_config(DecoderKind::luong, 2), DecoderBackwardPath::per_step);
}
TEST(GradMonotonicModels, LuongConcatMochaSequence) {
    check_model(mocha_config(DecoderKind::luong, 4), DecoderBackwardPath::sequence);
}

// The pre-sigmoid noise is drawn in training steps only: it moves the training loss (and is
// reproducible from the step's Rng), and leaves evaluation alone.
TEST(GradMonotonicModels, NoiseOnlyInTraining) {
    Seq2Seq noisy(monotonic_config(DecoderKind::bahdanau, 1.0f), 3);
    Seq2Seq quiet(monotonic_config(DecoderKind::bahdanau, 0.0f), 3);
    const Batch batch = tiny_batch();
    EXPECT_EQ(TrainPass(noisy).eval_loss(batch).loss, TrainPass(quiet).eval_loss(batch).loss);
    const auto train_loss = [&](Seq2Seq& m, uint64_t seed) {
        Rng rng(seed);
        return TrainPass(m).train_step(batch, {.grad_scale = 1.0f}, rng).loss;
    };
    EXPECT_EQ(train_loss(noisy, 11), train_loss(noisy, 11));
    EXPECT_GT(std::abs(train_loss(noisy, 11) - train_loss(quiet, 11)), 1e-4);
    EXPECT_GT(std::abs(train_loss(noisy, 11) - train_loss(noisy, 12)), 1e-4);
}

}  // namespace test_grad_monotonic_models
}  // namespace nazar
