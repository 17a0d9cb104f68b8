// Whole-model gradient checks of guided alignment (models/guided_alignment.h): d (CE + L_ga) /
// d every parameter of a tiny Seq2Seq (tests/common/tiny_models.h) against central differences
// of the loss train_step reports (st.loss + st.alignment_loss; no dropout, so the forward is
// deterministic), for the Bahdanau decoder (additive), Luong with dot, general + input feeding,
// concat, local-m and local-p, both decoder backward paths, and composed with coverage (its
// loss and recurrence) and copy attention. Tolerances as test_grad_models.cpp. The alignments
// are CorpusAlignments of the batch's two pairs (Batch::index 0 and 1): sentence 0 has a
// many-to-one and a one-to-many link and an unaligned target; sentence 1 one link.
#include "nazar/data/extended_vocab.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/gradcheck.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace nazar {
namespace test_grad_guided_models {
namespace {

using test::tiny_batch;
using test::tiny_config;

CorpusAlignments tiny_alignments() {
    CorpusAlignments a;
    a.add({{0, 0}, {1, 0}, {3, 1}, {2, 1}});  // src 4, tgt 3 (target 2 unaligned)
    a.add({{1, 0}});                          // src 2, tgt 1
    return a;
}

struct StepRun {
    double ce = 0, align = 0, coverage = 0;
    int64_t aligned = 0;
    std::vector<Tensor> grads;
};

StepRun run(Seq2Seq& model, const Batch& batch, const TrainOptions& opt) {
    ParamList params = model.parameters();
    zero_grads(params);
    Rng rng(11);
    const LossStats st = TrainPass(model).train_step(batch, opt, rng);
    StepRun r{st.loss, st.alignment_loss, st.coverage_loss, st.aligned, {}};
    for (const auto& p : params) r.grads.push_back(*p.grad);
    return r;
}

void check_model(const ModelConfig& cfg, DecoderBackwardPath path, const Batch& batch,
                 float coverage_weight = 0.0f) {
    Seq2Seq model(cfg, 3);
    if (cfg.attention.coverage) {
        Rng r(5);
        r.fill_uniform(model.attention.params.w_c, -1.5f, 1.5f);
    }
    const CorpusAlignments al = tiny_alignments();
    const TrainOptions opt{.grad_scale = 1.0f,
                           .decoder_backward = path,
                           .coverage_loss_weight = coverage_weight,
                           .guided_alignment_weight = 0.9f,
                           .alignments = &al};
    StepRun r = run(model, batch, opt);
    EXPECT_EQ(r.aligned, 3);  // (0, 0), (0, 1), (1, 0)
    EXPECT_GT(r.align, 0.5);
    ParamList params = model.parameters();
    std::vector<test::GradTarget> targets;
    for (std::size_t i = 0; i < params.size(); ++i)
        targets.push_back({params[i].name, *params[i].value, r.grads[i]});
    auto loss = [&] {
        Rng same(11);
        const LossStats st = TrainPass(model).train_step(batch, opt, same);
        return st.loss + st.alignment_loss + st.coverage_loss;
    };
    EXPECT_TRUE(test::check_gradients(
        loss, targets, {.eps = 1e-2, .rtol = 3e-2, .atol = 3e-3, .max_entries = 10}));
}

void both_paths(const ModelConfig& cfg) {
    check_model(cfg, DecoderBackwardPath::per_step, tiny_batch());
    check_model(cfg, DecoderBackwardPath::sequence, tiny_batch());
}

}  // namespace

TEST(GradGuidedModels, BahdanauAdditive) {
    both_paths(tiny_config());
}
TEST(GradGuidedModels, LuongDot) {  // would split outputs without guided alignment
    auto c = tiny_config(DecoderKind::luong, ScoreKind::dot);
    c.decoder.hidden_size = 6;  // dot: d_s = d_h
    both_paths(c);
}
TEST(GradGuidedModels, LuongGeneralInputFeeding) {
    auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
    c.decoder.input_feeding = true;
    both_paths(c);
}
TEST(GradGuidedModels, LuongConcat) {
    both_paths(tiny_config(DecoderKind::luong, ScoreKind::concat));
}
TEST(GradGuidedModels, LocalMAndLocalP) {
    for (const auto local : {LocalMode::monotonic, LocalMode::predictive}) {
        auto c = tiny_config(DecoderKind::luong, ScoreKind::general);
        c.attention.local = local;
        c.attention.window = 1;  // windows of 3 < S: link (3, 1) is outside at some steps
        both_paths(c);
    }
}
TEST(GradGuidedModels, WithCoverage) {
    auto c = tiny_config();
    c.attention.coverage = true;
    // the coverage recurrence's carry and guided alignment's d α share the hook (the coverage
    // loss's min() has kinks where a tiny model's weights sit: test_grad_coverage.cpp)
    check_model(c, DecoderBackwardPath::per_step, tiny_batch(), 0.0f);
    check_model(c, DecoderBackwardPath::sequence, tiny_batch(), 0.0f);
}
TEST(GradGuidedModels, WithCopyAndCoverage) {
    auto c = tiny_config();
    c.copy_attention = true;
    c.attention.coverage = true;
    Batch b = test::make_batch({{5, 1, 7, 1}, {9, 5}}, {{5, 1, 7}, {8}});
    set_copy_ids(b, std::vector<std::vector<int32_t>>{{5, 10, 7, 10}, {9, 5}},
                 std::vector<std::vector<int32_t>>{{5, 10, 7}, {8}});
    check_model(c, DecoderBackwardPath::per_step, b);
    check_model(c, DecoderBackwardPath::sequence, b);
}

// The loss changes the gradient, both paths agree, weight 0 is exactly the plain step, and a
// weight without alignments is refused.
TEST(GradGuidedModels, PathsAgreeAndWeightZeroIsPlain) {
    for (const auto kind : {DecoderKind::bahdanau, DecoderKind::luong}) {
        Seq2Seq model(tiny_config(kind, kind == DecoderKind::luong ? ScoreKind::general
                                                                   : ScoreKind::additive),
                      3);
        const CorpusAlignments al = tiny_alignments();
        const TrainOptions seq{
            .grad_scale = 1.0f, .guided_alignment_weight = 0.9f, .alignments = &al};
        TrainOptions per = seq;
        per.decoder_backward = DecoderBackwardPath::per_step;
        TrainOptions zero = seq;
        zero.guided_alignment_weight = 0.0f;
        const TrainOptions plain{.grad_scale = 1.0f};
        const StepRun a = run(model, tiny_batch(), seq), b = run(model, tiny_batch(), per);
        const StepRun z = run(model, tiny_batch(), zero), p = run(model, tiny_batch(), plain);
        EXPECT_NEAR(a.align, b.align, 1e-6 * a.align);
        EXPECT_EQ(z.align, 0.0);
        double diff_paths = 0, diff_loss = 0, diff_zero = 0;
        for (std::size_t i = 0; i < a.grads.size(); ++i)
            for (int64_t k = 0; k < a.grads[i].numel(); ++k) {
                diff_paths = std::max<double>(diff_paths, std::abs(a.grads[i][k] - b.grads[i][k]));
                diff_loss = std::max<double>(diff_loss, std::abs(a.grads[i][k] - z.grads[i][k]));
                diff_zero = std::max<double>(diff_zero, std::abs(z.grads[i][k] - p.grads[i][k]));
            }
        EXPECT_LT(diff_paths, 1e-4);
        EXPECT_GT(diff_loss, 1e-3);
        EXPECT_EQ(diff_zero, 0.0);
    }
    Seq2Seq model(tiny_config(), 3);
    Rng rng(1);
    EXPECT_THROW(TrainPass(model).train_step(tiny_batch(), {.guided_alignment_weight = 1.0f}, rng),
                 UsageError);
}

}  // namespace test_grad_guided_models
}  // namespace nazar
