// Checkpoint averaging (nazar/train/average.h), a run's periodic checkpoints (keep_checkpoints),
// the exponential moving average of the weights (nazar/train/ema.h) and the validation metric
// that early stopping and best.safetensors go by (valid_metric, valid_beam).
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/models/model_file.h"
#include "nazar/train/average.h"
#include "nazar/train/ema.h"
#include "nazar/train/run_dir.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

namespace nazar {
namespace test_train_average {
namespace {

namespace fs = std::filesystem;

std::string save_tiny(const std::string& path, const ModelConfig& cfg, uint64_t seed,
                      const std::map<std::string, std::string>& meta = {}) {
    Seq2Seq m(cfg, seed);
    save_model(path, m, meta);
    return path;
}

TEST(Average, OfThreeFilesIsTheMeanOfTheirTensors) {
    const std::string dir = test::fresh_temp_dir("average");
    ModelConfig cfg = test::tiny_config();
    cfg.tie_target_embeddings = true;  // the generator.weight copy follows the averaged embedding
    cfg.decoder.deep_output = true;
    cfg.embedding_size = cfg.decoder.hidden_size;
    const std::vector<std::string> in = {save_tiny(dir + "/a.safetensors", cfg, 1),
                                         save_tiny(dir + "/b.safetensors", cfg, 2),
                                         save_tiny(dir + "/c.safetensors", cfg, 3)};
    const AverageReport r = average_models(in, dir + "/avg.safetensors");
    EXPECT_EQ(r.files, 3);
    const LoadedModel a = load_model(in[0]), b = load_model(in[1]), c = load_model(in[2]);
    const LoadedModel m = load_model(dir + "/avg.safetensors");
    const ParamList pa = a.model->parameters(), pb = b.model->parameters(),
                    pc = c.model->parameters(), pm = m.model->parameters();
    ASSERT_EQ(pm.size(), pa.size());
    int64_t total = 0, differs_from_a = 0;
    for (std::size_t i = 0; i < pm.size(); ++i) {
        const float *x = pa[i].value->data(), *y = pb[i].value->data(), *z = pc[i].value->data(),
                    *got = pm[i].value->data();
        for (int64_t j = 0; j < pm[i].value->numel(); ++j) {
            // The documented formula exactly, and the float mean within rounding.
            const double want = (double{x[j]} + double{y[j]} + double{z[j]}) / 3.0;
            ASSERT_EQ(got[j], static_cast<float>(want)) << pm[i].name << "[" << j << "]";
            ASSERT_NEAR(got[j], (x[j] + y[j] + z[j]) / 3.0f, 1e-6) << pm[i].name;
            differs_from_a += got[j] != x[j];
        }
        total += pm[i].value->numel();
    }
    EXPECT_EQ(r.parameters, total);
    EXPECT_GT(differs_from_a, total / 2);  // the inputs really differ
    EXPECT_NE(m.metadata.at("nazar.averaged_from").find("c.safetensors"), std::string::npos);
}

TEST(Average, MismatchNamesTheFileTheTensorAndTheField) {
    const std::string dir = test::fresh_temp_dir("average-mismatch");
    const ModelConfig cfg = test::tiny_config();
    ModelConfig bigger = cfg;
    bigger.decoder.hidden_size = 7;
    const std::string a = save_tiny(dir + "/a.safetensors", cfg, 1);
    const std::string b = save_tiny(dir + "/b.safetensors", cfg, 2);
    const std::string c = save_tiny(dir + "/c.safetensors", bigger, 3);
    try {
        const std::vector<std::string> in = {a, b, c};
        average_models(in, dir + "/out.safetensors");
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("c.safetensors"), std::string::npos) << msg;
        EXPECT_NE(msg.find("tensor 'bridge.weight'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("/decoder/hidden_size (5 vs 7)"), std::string::npos) << msg;
    }
    EXPECT_FALSE(fs::exists(dir + "/out.safetensors"));
    // Same shapes, different target vocabularies.
    const Vocab v1 = test::vocab_of_size(10);
    const std::vector<std::string> other = {"q4", "q5", "q6", "q7", "q8", "q9"};
    const Vocab v2 = Vocab::from_pieces(other);
    save_tiny(dir + "/v1.safetensors", cfg, 1, {{kTgtVocabKey, v1.to_json()}});
    save_tiny(dir + "/v2.safetensors", cfg, 1, {{kTgtVocabKey, v2.to_json()}});
    const std::vector<std::string> in = {dir + "/v1.safetensors", dir + "/v2.safetensors"};
    try {
        average_models(in, dir + "/out.safetensors");
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("v2.safetensors"), std::string::npos) << msg;
        EXPECT_NE(msg.find("nazar.tgt_vocab"), std::string::npos) << msg;
    }
    EXPECT_THROW(average_models({}, dir + "/out.safetensors"), UsageError);
}

TEST(PeriodicCheckpoints, NamesListAndPrune) {
    EXPECT_EQ(periodic_checkpoint_name(1200), "checkpoint-1200.safetensors");
    EXPECT_EQ(periodic_checkpoint_step("checkpoint-1200.safetensors"), 1200);
    for (const char* bad : {"checkpoint-.safetensors", "checkpoint-012.safetensors",
                            "checkpoint-12.safetensors.tmp.abcdef", "checkpoint-1x.safetensors",
                            "last.safetensors", "checkpoint-12.bin"})
        EXPECT_EQ(periodic_checkpoint_step(bad), -1) << bad;
    EXPECT_TRUE(is_stale_temporary("checkpoint-12.safetensors.tmp.aB3dE9"));
    EXPECT_FALSE(is_stale_temporary("checkpoint-12.safetensors.tmp.aB3dE"));

    const std::string dir = test::fresh_temp_dir("prune");
    for (int s : {10, 20, 30, 40, 50})
        atomic_write_file(dir + "/" + periodic_checkpoint_name(s), "x");
    for (const char* f : {"best.safetensors", "last.safetensors", "model.safetensors"})
        atomic_write_file(dir + "/" + f, "x");
    // Resumed from step 30: 40 and 50 belong to an abandoned future; keep 20 and 30.
    const auto removed = prune_periodic_checkpoints(dir, 2, 30);
    EXPECT_EQ(removed,
              (std::vector<std::string>{"checkpoint-10.safetensors", "checkpoint-40.safetensors",
                                        "checkpoint-50.safetensors"}));
    EXPECT_EQ(last_checkpoints(dir, 2),
              (std::vector<std::string>{dir + "/checkpoint-20.safetensors",
                                        dir + "/checkpoint-30.safetensors"}));
    EXPECT_THROW(last_checkpoints(dir, 3), UsageError);
    for (const char* f : {"best.safetensors", "last.safetensors", "model.safetensors"})
        EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
    // --overwrite removes a run's periodic checkpoints too.
    prepare_run_dir(dir, {.overwrite = true});
    EXPECT_TRUE(list_periodic_checkpoints(dir).empty());
}

TEST(RankedCheckpoints, NamesListEnterAndPrune) {
    EXPECT_EQ(ranked_checkpoint_name(1200), "best-1200.safetensors");
    EXPECT_EQ(ranked_checkpoint_step("best-1200.safetensors"), 1200);
    for (const char* bad : {"best-.safetensors", "best-012.safetensors", "best.safetensors",
                            "best-12.safetensors.tmp.abcdef", "checkpoint-12.safetensors"})
        EXPECT_EQ(ranked_checkpoint_step(bad), -1) << bad;
    EXPECT_TRUE(is_stale_temporary("best-12.safetensors.tmp.aB3dE9"));
    EXPECT_TRUE(is_stale_temporary("averaged.safetensors.tmp.aB3dE9"));

    const std::string dir = test::fresh_temp_dir("ranked");
    const ModelConfig cfg = test::tiny_config();
    // step -> criterion; 40 ties with 20 (the earlier stays ahead), 60 is an abandoned future
    const std::pair<int, const char*> files[] = {{10, "5.5"},  {20, "2.25"}, {30, "3"},
                                                 {40, "2.25"}, {50, "1"},    {60, "0.5"}};
    for (const auto& [step, c] : files)
        save_tiny(dir + "/" + ranked_checkpoint_name(step), cfg, static_cast<uint64_t>(step),
                  {{kValidCriterionKey, c}});
    std::vector<int64_t> order;
    for (const auto& r : list_ranked_checkpoints(dir)) order.push_back(r.step);
    EXPECT_EQ(order, (std::vector<int64_t>{60, 50, 20, 40, 30, 10}));
    const auto kept = prune_ranked_checkpoints(dir, 3, 50);  // resumed at step 50
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_EQ(kept[0].step, 50);
    EXPECT_EQ(kept[1].step, 20);
    EXPECT_EQ(kept[2].step, 40);
    EXPECT_DOUBLE_EQ(kept[1].criterion, 2.25);
    for (int gone : {10, 30, 60})
        EXPECT_FALSE(fs::exists(dir + "/" + ranked_checkpoint_name(gone))) << gone;
    EXPECT_TRUE(enters_best(kept, 2.0, 3));
    EXPECT_FALSE(enters_best(kept, 2.25, 3));  // a tie does not displace an earlier file
    EXPECT_TRUE(enters_best(kept, 2.25, 4));   // room left
    EXPECT_FALSE(enters_best(kept, 0.0, 0));
    EXPECT_EQ(best_checkpoints(dir, 2), (std::vector<std::string>{dir + "/best-50.safetensors",
                                                                  dir + "/best-20.safetensors"}));
    EXPECT_THROW(best_checkpoints(dir, 4), UsageError);
    EXPECT_THROW(best_checkpoints(dir + "/none", 1), UsageError);
    // A file without its criterion is named, not skipped.
    save_tiny(dir + "/" + ranked_checkpoint_name(70), cfg, 7);
    try {
        list_ranked_checkpoints(dir);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("best-70.safetensors"), std::string::npos);
    }
    save_tiny(dir + "/" + ranked_checkpoint_name(70), cfg, 7, {{kValidCriterionKey, "nan"}});
    EXPECT_THROW(list_ranked_checkpoints(dir), Error);
    // --overwrite removes them and the averaged file.
    atomic_write_file(dir + "/averaged.safetensors", "x");
    prepare_run_dir(dir, {.overwrite = true});
    EXPECT_TRUE(list_ranked_checkpoints(dir).empty());
    EXPECT_FALSE(fs::exists(dir + "/averaged.safetensors"));
}

TEST(Ema, UpdateEqualsItsFormula) {
    EXPECT_DOUBLE_EQ(Ema::decay_at(0.999, 1), 2.0 / 11.0);
    EXPECT_DOUBLE_EQ(Ema::decay_at(0.999, 100), 101.0 / 110.0);
    EXPECT_DOUBLE_EQ(Ema::decay_at(0.999, 8991), 0.999);
    EXPECT_DOUBLE_EQ(Ema::decay_at(0.5, 3), 4.0 / 13.0);
    EXPECT_DOUBLE_EQ(Ema::decay_at(0.5, 20), 0.5);
    Rng rng(5);
    Tensor w = test::random_tensor(rng, {3, 4}), g({3, 4}), b = test::random_tensor(rng, {5});
    Tensor gb({5});
    const ParamList params = {{"w", &w, &g}, {"b", &b, &gb}};
    const std::vector<float> w0(w.data(), w.data() + w.numel());
    Ema ema(params, 0.9);
    std::vector<double> want(w0.begin(), w0.end());  // the formula in double
    std::vector<float> exact(w0);                    // the formula as documented, in float
    for (int64_t n = 1; n <= 30; ++n) {
        Tensor step = test::random_tensor(rng, {3, 4});
        for (int64_t j = 0; j < w.numel(); ++j) w.data()[j] += 0.1f * step.data()[j];
        ema.update(n);
        const double d = std::min(0.9, (1.0 + n) / (10.0 + n));
        const float fa = static_cast<float>(d), fb = static_cast<float>(1.0 - d);
        for (int64_t j = 0; j < w.numel(); ++j) {
            want[j] = d * want[j] + (1 - d) * w.data()[j];
            exact[j] = fa * exact[j] + fb * w.data()[j];
            ASSERT_EQ(ema.shadow()[0].data()[j], exact[j]) << "n " << n << " j " << j;
            ASSERT_NEAR(ema.shadow()[0].data()[j], want[j], 1e-5) << "n " << n << " j " << j;
        }
    }
    // The bias never moved: its average is itself, within float rounding (d·x + (1−d)·x is not
    // exactly x in float, and whether it is contracted into an FMA depends on the build).
    for (int64_t j = 0; j < b.numel(); ++j) EXPECT_FLOAT_EQ(ema.shadow()[1].data()[j], b.data()[j]);
    // swap() exchanges exactly; twice restores.
    const std::vector<float> raw(w.data(), w.data() + w.numel());
    ema.swap();
    EXPECT_TRUE(ema.swapped());
    for (int64_t j = 0; j < w.numel(); ++j) EXPECT_EQ(w.data()[j], exact[j]);
    ema.swap();
    for (int64_t j = 0; j < w.numel(); ++j) EXPECT_EQ(w.data()[j], raw[j]);
}

// The tiny run of tests/common/tiny_training.h with a validation every 10 steps.
TrainConfig tiny_run(const std::string& dir) {
    TrainConfig c = test::tiny_train_config(dir);
    c.valid_interval = 10;
    return c;
}

TEST(KeepCheckpoints, KeepsTheLatestKAndAverageLastK) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("keep");
    TrainConfig c = tiny_run(dir);
    c.keep_checkpoints = 2;
    c.max_steps = 45;  // validations at 10..40, the end at 45
    Trainer(c).run();
    std::vector<int64_t> steps;
    for (const auto& [s, path] : list_periodic_checkpoints(c.save_dir)) steps.push_back(s);
    EXPECT_EQ(steps, (std::vector<int64_t>{40, 45}));
    for (const char* f : {"best.safetensors", "last.safetensors", "model.safetensors"})
        EXPECT_TRUE(fs::exists(c.save_dir + "/" + f)) << f;
    // Each is a resumable checkpoint of its step.
    EXPECT_EQ(load_checkpoint(c.save_dir + "/checkpoint-40.safetensors").state.step, 40);
    const auto last2 = last_checkpoints(c.save_dir, 2);
    average_models(last2, dir + "/avg.safetensors");
    EXPECT_NO_THROW(load_model(dir + "/avg.safetensors"));
    // A fresh run refuses the directory, naming a checkpoint among its files.
    EXPECT_THROW(prepare_run_dir(c.save_dir, {}), UsageError);
}

// average_best: the files are the K validations with the lowest criterion (ties: the earlier),
// each holding the weights it validated, and averaged.safetensors is their mean, scored.
TEST(AverageBest, KeepsTheKBestValidationsAndAveragesThem) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("avg-best");
    TrainConfig c = tiny_run(dir);
    c.valid_metric = "loss";
    c.valid_interval = 5;
    c.max_steps = 42;  // validations at 5..40 and at the end, 42
    c.average_best = 3;
    std::vector<std::pair<double, int64_t>> seen;  // (criterion, step) of every validation
    TrainerHooks hooks;
    hooks.on_record = [&](const nlohmann::json& r) {
        if (r.at("type") == "valid")
            seen.emplace_back(r.at("loss").get<double>(), r.at("step").get<int64_t>());
    };
    const TrainResult r = Trainer(c, "", hooks).run();
    ASSERT_EQ(seen.size(), 9u);
    std::stable_sort(seen.begin(), seen.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<int64_t> want;
    for (int i = 0; i < 3; ++i) want.push_back(seen[static_cast<std::size_t>(i)].second);
    EXPECT_EQ(r.averaged_steps, want);
    std::vector<int64_t> kept;
    std::vector<std::string> paths;
    for (const auto& f : list_ranked_checkpoints(c.save_dir)) {
        kept.push_back(f.step);
        paths.push_back(f.path);
    }
    EXPECT_EQ(kept, want);
    // The best of them holds best.safetensors' weights (the same validation).
    const LoadedModel top = load_model(paths[0]);
    const LoadedModel best = load_model(c.save_dir + "/best.safetensors");
    EXPECT_TRUE(test::same_weights(*top.model, *best.model));
    // averaged.safetensors is average_models of the three, and validates as reported.
    average_models(paths, dir + "/again.safetensors");
    const LoadedModel again = load_model(dir + "/again.safetensors");
    const LoadedModel avg = load_model(c.save_dir + "/averaged.safetensors");
    EXPECT_TRUE(test::same_weights(*again.model, *avg.model));
    EXPECT_FALSE(test::same_weights(*top.model, *avg.model));
    Trainer check(c);
    EXPECT_DOUBLE_EQ(check.validate_file(c.save_dir + "/averaged.safetensors").loss,
                     r.final_averaged.loss);
    // It needs dev data.
    TrainConfig no_dev = c;
    no_dev.dev.clear();
    EXPECT_THROW(validate_config(no_dev), UsageError);
}

TEST(EmaTraining, FilesHoldTheAverageAndTheRawWeights) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("ema-run");
    TrainConfig c = tiny_run(dir);
    c.ema_decay = 0.95;
    Trainer t(c);
    const TrainResult r = t.run();
    // At the end the model holds the raw weights; model.safetensors holds the average.
    const SafeTensors last = load_safetensors(c.save_dir + "/last.safetensors");
    const LoadedModel final_model = load_model(c.save_dir + "/model.safetensors");
    int64_t differ = 0;
    for (const auto& p : t.model().parameters()) {
        const Tensor& raw = last.get(std::string(kRawWeightPrefix) + p.name);
        const Tensor& avg = last.get(p.name);
        EXPECT_EQ(std::memcmp(raw.data(), p.value->data(), sizeof(float) * raw.numel()), 0);
        for (const auto& q : final_model.model->parameters())
            if (q.name == p.name) {
                EXPECT_EQ(std::memcmp(q.value->data(), avg.data(), sizeof(float) * avg.numel()), 0);
            }
        for (int64_t j = 0; j < raw.numel(); ++j) differ += raw.data()[j] != avg.data()[j];
    }
    EXPECT_GT(differ, 0);
    // validate() measures the average: equal to a model loaded from model.safetensors.
    const double ema_loss = t.validate().loss;
    EXPECT_DOUBLE_EQ(ema_loss, r.last_valid.loss);
    TrainConfig off = c;
    off.ema_decay = 0;
    off.save_dir = dir + "/off";
    // The raw weights after the same updates give another loss.
    Trainer raw_run(off);
    raw_run.run();
    EXPECT_NE(raw_run.validate().loss, ema_loss);
}

TEST(ValidMetric, SelectsByTheChosenScore) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("metric");
    TrainConfig c = tiny_run(dir);
    c.valid_metric = "exact";
    c.valid_beam = 3;
    const TrainResult r = Trainer(c).run();
    ASSERT_TRUE(r.validated);
    EXPECT_DOUBLE_EQ(r.last_valid.criterion, 100.0 - r.last_valid.exact);
    const Checkpoint best = load_checkpoint(c.save_dir + "/best.safetensors");
    EXPECT_LE(best.best_loss, r.last_valid.criterion);
    EXPECT_GE(best.best_loss, 0.0);
    EXPECT_LE(best.best_loss, 100.0);

    c.valid_sample = 0;
    EXPECT_THROW(validate_config(c), UsageError);
}

// valid_max_length is the output limit whatever the source length (outputs may be far longer
// than their sources); 0 keeps 2 · S + 10.
TEST(ValidMetric, ValidMaxLengthIsTheOutputLimit) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("metric-length");
    for (const int limit : {0, 30}) {
        TrainConfig c = tiny_run(dir);
        c.valid_max_length = limit;
        Trainer t(c);
        for (const ParamRef& p : t.model().parameters())  // never </s>: outputs run to the limit
            if (p.name == "generator.bias") p.value->at(Vocab::eos) = -100.0f;
        const ValidationResult v = t.validate();
        ASSERT_FALSE(v.examples.empty());
        const std::string& ex = v.examples[0];  // "src ||| hyp ||| ref", source of 2..6 words
        const std::string src = ex.substr(0, ex.find(" ||| "));
        const std::string hyp =
            ex.substr(ex.find(" ||| ") + 5, ex.rfind(" ||| ") - ex.find(" ||| ") - 5);
        const auto words = [](const std::string& x) {
            return 1 + static_cast<int>(std::count(x.begin(), x.end(), ' '));
        };
        EXPECT_EQ(words(hyp), limit ? limit : 2 * words(src) + 10) << ex;
    }
}

TEST(ValidMetric, BleuOnCharacterTargetsUsesChrf) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("metric-char");
    TrainConfig c = tiny_run(dir);
    c.tokenizer = "char";
    c.valid_metric = "bleu";
    c.max_steps = 20;
    testing::internal::CaptureStderr();
    const TrainResult r = Trainer(c).run();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("early stopping and best.safetensors go by chrF instead"), std::string::npos)
        << err;
    EXPECT_DOUBLE_EQ(r.last_valid.criterion, 100.0 - r.last_valid.chrf);
}

}  // namespace
}  // namespace test_train_average
}  // namespace nazar
