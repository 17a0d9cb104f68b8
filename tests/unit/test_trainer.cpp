// The training loop (nazar/train/trainer.h) on a tiny generated task (reverse a string of
// letters): the loss falls, runs are deterministic, non-finite updates are skipped and never
// saved, early stopping, checkpoints are model files, helper layouts and formats.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/models/model_file.h"
#include "nazar/train/progress.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>

namespace nazar {
namespace test_trainer {
namespace {

using test::fresh_temp_dir;  // tests/common/test_util.h
using test::same_weights;    // tests/common/tiny_training.h
using test::tiny_train_config;

TEST(Trainer, LossFallsOnTinyTask) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("trainer-loss");
    TrainConfig c = tiny_train_config(dir);
    c.max_steps = 120;
    c.valid_interval = 60;
    Trainer t(c);
    const double before = t.validate().loss;
    const TrainResult r = t.run();
    ASSERT_TRUE(r.validated);
    EXPECT_EQ(r.state.step, 120);
    EXPECT_EQ(r.state.skipped, 0);
    // A uniform guess over the 12 target ids costs log(12) = 2.48 per token; the reversal of a
    // handful of letters is learnt well below half of the initial loss in 120 updates.
    EXPECT_LT(r.last_valid.loss, 0.5 * before)
        << "before " << before << ", after " << r.last_valid.loss;
    EXPECT_TRUE(std::isfinite(r.last_train_loss));
    EXPECT_EQ(r.model_path, c.save_dir + "/model.safetensors");
    for (const char* f : {"model.safetensors", "last.safetensors", "best.safetensors"})
        EXPECT_TRUE(file_exists(c.save_dir + "/" + f)) << f;
    // The final model loads on its own and is the trained model.
    LoadedModel m = load_model(r.model_path);
    EXPECT_TRUE(same_weights(*m.model, t.model()));
    EXPECT_TRUE(m.metadata.count(kSrcVocabKey) && m.metadata.count(kTgtTokenizerKey));
    // A checkpoint is also a model file; a model file is not a checkpoint.
    EXPECT_NO_THROW(load_model(c.save_dir + "/best.safetensors"));
    EXPECT_NO_THROW(load_checkpoint(c.save_dir + "/last.safetensors"));
    EXPECT_THROW(load_checkpoint(r.model_path), Error);
}

TEST(Trainer, SameSeedAndThreadsGiveBitIdenticalWeights) {
    set_num_threads(2);
    const std::string dir = fresh_temp_dir("trainer-determinism");
    TrainConfig c = tiny_train_config(dir);
    c.encoder_layers = 2;  // dropout acts between layers
    c.dropout = 0.3;
    c.scheduled_sampling = 0.3;
    c.valid_interval = 1000;
    Trainer a(c), b(c);
    a.run();
    b.run();
    EXPECT_TRUE(same_weights(a.model(), b.model()));
    EXPECT_EQ(a.state(), b.state());
    c.seed = 2;
    Trainer other(c);
    other.run();
    EXPECT_FALSE(same_weights(a.model(), other.model()));
    set_num_threads(1);
}

TEST(Trainer, NonFiniteGradientSkipsTheUpdate) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("trainer-nonfinite");
    TrainConfig c = tiny_train_config(dir);
    c.max_steps = 10;
    c.valid_interval = 1000;
    TrainerHooks hooks;
    hooks.after_backward = [](int64_t batch, const ParamList& params) {
        if (batch == 3) (*params.back().grad)[0] = std::numeric_limits<float>::quiet_NaN();
        if (batch == 5) (*params.front().grad)[1] = std::numeric_limits<float>::infinity();
    };
    Trainer t(c, "", hooks);
    const TrainResult r = t.run();
    EXPECT_EQ(r.state.skipped, 2);
    EXPECT_EQ(r.state.step, 10);
    EXPECT_EQ(r.state.batches, 12);
    EXPECT_NO_THROW(check_finite(t.model().parameters(), "model"));
    EXPECT_NO_THROW(load_model(r.model_path));
}

TEST(Trainer, InterruptWritesACheckpointAtTheStepBoundary) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("trainer-interrupt");
    TrainConfig c = tiny_train_config(dir);
    c.valid_interval = 1000;
    std::atomic<bool> stop{false};
    TrainerHooks hooks;
    hooks.after_backward = [&](int64_t batch, const ParamList&) {
        stop = stop || batch == 6;
    };  // as a signal would
    hooks.interrupt = &stop;
    Trainer t(c, "", hooks);
    const TrainResult r = t.run();
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.state.step, 7);  // the update in flight completes
    EXPECT_FALSE(file_exists(c.save_dir + "/model.safetensors"));
    EXPECT_EQ(load_checkpoint(c.save_dir + "/last.safetensors").state, r.state);
}

TEST(Trainer, NonFiniteParametersAreNeverSaved) {
    Tensor w({2, 2}), g({2, 2});
    w[3] = std::numeric_limits<float>::quiet_NaN();
    const ParamList params{{"generator.bias", &w, &g}};
    try {
        check_finite(params, "x.safetensors");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "x.safetensors: parameter 'generator.bias' holds a non-finite value (nan) "
                      "at index 3; not saved"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Trainer, EarlyStoppingAfterPatienceValidations) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("trainer-early");
    TrainConfig c = tiny_train_config(dir);
    c.lr = 0;  // the dev loss never improves after the first validation
    c.max_steps = 100;
    c.valid_interval = 5;
    c.patience = 2;
    Trainer t(c);
    const TrainResult r = t.run();
    EXPECT_TRUE(r.early_stopped);
    EXPECT_EQ(r.state.step, 15);  // validations at 5 (best), 10 (bad 1), 15 (bad 2: stop)
    EXPECT_EQ(r.state.best_step, 5);
    EXPECT_EQ(r.state.bad_validations, 2);
}

TEST(Trainer, MetricsLogHasTrainAndValidLines) {
    set_num_threads(1);
    const std::string dir = fresh_temp_dir("trainer-metrics");
    TrainConfig c = tiny_train_config(dir);
    c.metrics_log = dir + "/metrics.jsonl";
    c.log_interval = 10;
    Trainer t(c);
    t.run();
    const std::string log = read_file(c.metrics_log);
    int train = 0, valid = 0;
    for (std::size_t p = 0; (p = log.find("\"type\":\"train\"", p)) != std::string::npos; ++p)
        ++train;
    for (std::size_t p = 0; (p = log.find("\"type\":\"valid\"", p)) != std::string::npos; ++p)
        ++valid;
    EXPECT_EQ(train, 4);  // steps 10, 20, 30, 40
    EXPECT_EQ(valid, 2);  // steps 20, 40
}

TEST(Trainer, TrainStateJsonRoundTrip) {
    TrainState s;
    s.step = 12;
    s.batches = 14;
    s.skipped = 2;
    s.position = {3, 7};
    s.rng = {0xFFFFFFFFFFFFFFFFull, 1, 0x8000000000000000ull, 42};
    s.best_dev_loss = 0.1 + 0.2;
    s.best_step = 10;
    s.bad_validations = 1;
    s.validations = 3;
    s.tgt_tokens = 1234;
    EXPECT_EQ(train_state_from_json(train_state_to_json(s), "x"), s);
    const TrainState fresh;  // best = +inf survives the text form
    EXPECT_EQ(train_state_from_json(train_state_to_json(fresh), "x"), fresh);
    EXPECT_THROW(train_state_from_json("{\"step\": 1}", "x"), Error);
}

TEST(Trainer, ResumeConfigAllowsOnlyRunControlChanges) {
    const TrainConfig stored = TrainConfig::defaults();
    TrainConfig req = stored;
    req.max_steps = 500;
    req.metrics_log = "m.jsonl";
    const TrainConfig out = make_resume_config(stored, req, changed_keys(stored, req));
    EXPECT_EQ(out.max_steps, 500);
    EXPECT_EQ(out.metrics_log, "m.jsonl");
    req.hidden_size = 64;
    try {
        make_resume_config(stored, req, changed_keys(stored, req));
        FAIL() << "no error";
    } catch (const UsageError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "--resume: hidden_size cannot change when resuming (checkpoint: '128', "
                  "requested: '64'); start a new run instead");
    }
}

TEST(Trainer, BatchFromIdsLayout) {
    const std::vector<std::vector<int32_t>> src{{5, 6, 7}, {8}}, tgt{{9}, {10, 11}};
    const Batch b = batch_from_ids(src, tgt);
    EXPECT_EQ(b.B, 2);
    EXPECT_EQ(b.S, 3);
    EXPECT_EQ(b.T, 3);
    EXPECT_EQ(b.src, (std::vector<int32_t>{5, 6, 7, 8, 0, 0}));
    EXPECT_EQ(b.src_lengths, (std::vector<int>{3, 1}));
    EXPECT_EQ(b.tgt_in, (std::vector<int32_t>{2, 9, 0, 2, 10, 11}));
    EXPECT_EQ(b.tgt_out, (std::vector<int32_t>{9, 3, 0, 10, 11, 3}));
    EXPECT_EQ(b.tgt_lengths, (std::vector<int>{2, 3}));
    const Batch s = batch_from_ids(src, {});
    EXPECT_EQ(s.T, 0);
    EXPECT_EQ(s.src, b.src);
    EXPECT_THROW(batch_from_ids(src, std::vector<std::vector<int32_t>>{{1}}), Error);
}

TEST(Trainer, ConfigErrorsBeforeData) {
    TrainConfig c = TrainConfig::defaults();
    c.train = "/nonexistent/train.tsv";
    EXPECT_THROW(Trainer{c}, UsageError);
    const std::string dir = fresh_temp_dir("trainer-config");
    c = tiny_train_config(dir);
    c.decoder = "luong";
    c.attention = "dot";
    c.decoder_hidden_size = 20;  // d_h = 32
    EXPECT_THROW(check_config(c), UsageError);
    c.decoder_hidden_size = 0;
    EXPECT_NO_THROW(check_config(c));
}

TEST(Progress, Formats) {
    EXPECT_EQ(format_duration(17.4), "17s");
    EXPECT_EQ(format_duration(252), "4m12s");
    EXPECT_EQ(format_duration(3 * 3600 + 180), "3h03m");
    EXPECT_EQ(format_duration(-1), "?");
    EXPECT_EQ(format_rate(950), "950");
    EXPECT_EQ(format_rate(18400), "18.4k");
    EXPECT_EQ(format_rate(2.5e6), "2.50M");
    EXPECT_EQ(format_progress({.step = 1200,
                               .total_steps = 5000,
                               .epoch = 3,
                               .loss = 2.31415,
                               .tokens_per_s = 18400,
                               .lr = 1e-3,
                               .eta_s = 252}),
              "step 1200/5000 | epoch 3 | loss 2.3142 | 18.4k tok/s | lr 1.00e-03 | ETA 4m12s");
}

TEST(Progress, PlainLinesEveryInterval) {
    char buf[4096] = {};
    FILE* f = fmemopen(buf, sizeof(buf) - 1, "w");
    {
        Progress p(ProgressMode::plain, 2, f);
        for (int s = 1; s <= 5; ++s) p.update(s, 6, 1, 4.0, 2, 0.1);
        p.message("valid step 5");
    }
    std::fclose(f);
    const std::string out(buf);
    EXPECT_NE(out.find("step 2/6 | epoch 1 | loss 2.0000"), std::string::npos) << out;
    EXPECT_NE(out.find("step 4/6"), std::string::npos) << out;
    EXPECT_EQ(out.find("step 3/6"), std::string::npos) << out;
    EXPECT_EQ(out.find('\r'), std::string::npos) << out;  // never in place when not a TTY
    EXPECT_NE(out.find("valid step 5\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace test_trainer
}  // namespace nazar
