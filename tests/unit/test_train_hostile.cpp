// Hostile checkpoints, model files, run directories and configurations for training
// (docs/reliability.md "Adversarial audit", items 4, 5, 9, 11, 12, 16):
//   - NaN, +inf and -inf in every kind of tensor a checkpoint holds (every parameter of two
//     models that together have every parameter kind, and every optimizer moment of Adam and
//     SGD with momentum) are refused by the checkpoint loader, and the model's tensors by the
//     model loader, with one line naming the tensor, the index and the value;
//   - non-finite or impossible scalars: optim.lr, schedule.best, train.state (negative step,
//     epoch 1e9, counters that do not add up), train.best_loss;
//   - a run whose updates are all skipped stops after max_skipped_updates, keeping the last
//     checkpoint;
//   - special ids equal to each other, or disagreeing with the stored vocabulary;
//   - the run directory: non-empty refused, --resume and --overwrite, stale temporaries;
//   - the final validation counts for best.safetensors;
//   - YAML with a repeated key or a second document.
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/threads.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"
#include "nazar/train/run_dir.h"
#include "nazar/train/trainer.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"
#include "tests/common/tiny_training.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace nazar {
namespace test_train_hostile {
namespace {

namespace fs = std::filesystem;

// The tiny run of tests/common/tiny_training.h, smaller still: 3 steps, validation only at the
// end (or where a test asks), 5 decoded dev sentences.
TrainConfig short_run_config(const std::string& dir) {
    TrainConfig c = test::tiny_train_config(dir);
    c.hidden_size = 8;
    c.max_steps = 3;
    c.valid_interval = 1000;
    c.valid_sample = 5;
    return c;
}

// Bahdanau, additive attention, deep output, tied embeddings, GRU; Adam (exp_avg, exp_avg_sq).
void bahdanau_deep_tied_adam(TrainConfig& c) {
    c.deep_output = true;
    c.deep_output_size = c.embedding_size;
    c.tie_embeddings = true;
}
// Luong, general score with a learned scale, local-p (position predictor), input feeding,
// LSTM, two layers; SGD with momentum (momentum_buffer), plateau schedule (schedule.best).
void luong_localp_lstm_sgd(TrainConfig& c) {
    c.decoder = "luong";
    c.attention = "general";
    c.attention_scale = "learned";
    c.attention_local = "local-p";
    c.attention_window = 2;
    c.input_feeding = true;
    c.cell = "lstm";
    c.encoder_layers = 2;
    c.optimizer = "sgd";
    c.momentum = 0.9;
    c.schedule = "plateau";
    c.valid_interval = 2;  // a validation, so the plateau schedule has a best
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << path;
}

using test::error_of;  // tests/common/test_util.h

#define EXPECT_HAS(haystack, needle)                                 \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
        << haystack << "\n  expected: " << needle

struct Variant {
    const char* name;
    void (*tweak)(TrainConfig&);
    std::vector<std::string> must_hold;  // tensor names that prove the variant covers a kind
};

// ---- item 4: non-finite values in every loaded tensor kind ----------------------------------

TEST(TrainHostile, NonFiniteValuesInEveryTensorKindAreRefused) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    const Variant variants[] = {
        {"bahdanau-deep-tied-adam",
         bahdanau_deep_tied_adam,
         {"encoder.embedding.weight", "encoder.rnn.weight_ih_l0_reverse", "bridge.weight",
          "decoder.rnn.bias_hh_l0", "decoder.deep_output.context.weight", "attention.v.weight",
          "generator.weight", "generator.bias", "optim.exp_avg.generator.bias",
          "optim.exp_avg_sq.attention.query.weight"}},
        {"luong-localp-lstm-sgd",
         luong_localp_lstm_sgd,
         {"encoder.rnn.weight_hh_l1", "decoder.combine.weight", "attention.scale",
          "attention.position.weight", "attention.position_v.weight", "attention.key.weight",
          "optim.momentum_buffer.attention.scale"}},
    };
    const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
    int cases = 0;
    for (const Variant& v : variants) {
        SCOPED_TRACE(v.name);
        TrainConfig c = short_run_config(dir);
        c.save_dir = dir + "/" + v.name;
        v.tweak(c);
        Trainer(c).run();
        const std::string clean = c.save_dir + "/last.safetensors";
        SafeTensors st = load_safetensors(clean);
        for (const auto& name : v.must_hold) ASSERT_TRUE(st.contains(name)) << name;
        ASSERT_NO_THROW(load_checkpoint(clean));
        const std::string bad = c.save_dir + "/bad.safetensors";
        for (const std::string& name : st.names()) {
            const bool model_tensor = name.rfind("optim.", 0) != 0;
            Tensor& t = st.get(name);
            const int64_t n = t.numel();
            const int64_t at[] = {0, n - 1, n / 2};
            for (int k = 0; k < 3; ++k) {
                const int64_t i = at[k];
                const float saved = t.data()[i];
                t.data()[i] = values[k];
                const std::string expected = fmt::format(
                    "tensor '{}' holds a non-finite value ({}) at index {} (", name, values[k], i);
                write_bytes(bad, serialize_safetensors(st));
                const std::string ck = error_of([&] { load_checkpoint(bad); });
                EXPECT_HAS(ck, "'" + bad + "': " + expected);
                EXPECT_EQ(ck.find('\n'), std::string::npos);
                st.source = "m.safetensors";
                const std::string model = error_of([&] { (void)model_from_safetensors(st); });
                if (model_tensor) {
                    EXPECT_HAS(model, "'m.safetensors': " + expected);
                } else {  // moments are the checkpoint loader's; the model itself is fine
                    EXPECT_EQ(model, "") << name;
                }
                t.data()[i] = saved;
                ++cases;
            }
        }
        // End to end: --resume refuses a NaN moment before training (the old behaviour was an
        // endless run of skipped updates).
        Tensor& m = st.get(c.optimizer == "sgd" ? "optim.momentum_buffer.generator.bias"
                                                : "optim.exp_avg_sq.generator.bias");
        m.data()[0] = std::numeric_limits<float>::quiet_NaN();
        write_bytes(bad, serialize_safetensors(st));
        c.max_steps = 6;
        EXPECT_HAS(error_of([&] { Trainer t(c, bad); }), "holds a non-finite value (nan)");
        EXPECT_NO_THROW({ Trainer t(c, clean); });
    }
    EXPECT_EQ(cases, 3 * 132);  // every tensor of both checkpoints (70 + 62), three values each
}

// The checkpoint's scalars: learning rate, plateau best, train.state, train.best_loss.
TEST(TrainHostile, NonFiniteOrImpossibleCheckpointScalarsAreRefused) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    TrainConfig c = short_run_config(dir);
    luong_localp_lstm_sgd(c);
    Trainer(c).run();
    const std::string clean = c.save_dir + "/last.safetensors", bad = dir + "/bad.safetensors";
    c.max_steps = 6;
    struct Case {
        const char* key;
        std::string value;
        const char* expected;
        bool at_load;  // load_checkpoint refuses it (else the trainer does, when restoring)
    };
    const Case cases[] = {
        {"optim.lr", "nan", "optim.lr = nan is not a learning rate", false},
        {"optim.lr", "inf", "optim.lr = inf is not a learning rate", false},
        {"optim.lr", "-1", "optim.lr = -1 is not a learning rate", false},
        {"optim.step", "1e300", "optim.step = 1e+300 is not a step count", false},
        {"schedule.best", "nan", "schedule.best = nan", false},
        {"train.best_loss", "nan", "train.best_loss = 'nan' is not a loss", true},
        {"train.best_loss", "-2", "train.best_loss = '-2' is not a loss", true},
    };
    for (const Case& k : cases) {
        SafeTensors st = load_safetensors(clean);
        ASSERT_TRUE(st.has_meta(k.key)) << k.key;
        st.metadata[k.key] = k.value;
        write_bytes(bad, serialize_safetensors(st));
        const std::string at_load = error_of([&] { load_checkpoint(bad); });
        if (k.at_load) {
            EXPECT_HAS(at_load, k.expected);
        } else {
            EXPECT_EQ(at_load, "") << k.key;
            EXPECT_HAS(error_of([&] { Trainer t(c, bad); }), k.expected);
        }
    }
}

TEST(TrainHostile, ImpossibleTrainStateIsRefused) {
    TrainState s;
    s.step = 40;
    s.batches = 42;
    s.skipped = 2;
    s.position = {1, 15};
    s.best_dev_loss = 1.5;
    s.best_step = 40;
    s.validations = 2;
    s.bad_validations = 1;
    s.tgt_tokens = 3000;
    const std::string good = train_state_to_json(s);
    EXPECT_EQ(train_state_from_json(good, "x"), s);
    struct Case {
        const char* key;
        nlohmann::json value;
        const char* expected;
    };
    const Case cases[] = {
        {"step", -1, "step = -1 is outside [0, 2^53]"},
        {"epoch", 1000000000, "epoch 1000000000, batch 15 is impossible after 42 batches"},
        {"batch", 43, "epoch 1, batch 43 is impossible after 42 batches"},
        {"batches", -5, "batches = -5 is outside"},
        {"batches", int64_t{1} << 60, "batches = 1152921504606846976 is outside"},
        {"skipped", 3, "step 40 + skipped 3 != batches 42"},
        {"best_step", 41, "best_step 41 > step 40"},
        {"validations", 41, "41 validations (1 without improvement) after 40 updates"},
        {"bad_validations", 3, "2 validations (3 without improvement)"},
        {"best_dev_loss", "nan", "best_dev_loss = nan is not a loss"},
        {"best_dev_loss", "-1", "best_dev_loss = -1 is not a loss"},
        {"tgt_tokens", -1, "tgt_tokens = -1 is outside"},
        {"skipped_in_a_row", 3, "skipped_in_a_row 3 > skipped 2"},
    };
    for (const Case& k : cases) {
        nlohmann::json j = nlohmann::json::parse(good);
        j[k.key] = k.value;
        const std::string msg = error_of([&] { train_state_from_json(j.dump(), "ck"); });
        EXPECT_HAS(msg, std::string("ck: invalid train.state: ") + k.expected);
    }
    // Older checkpoints have no skipped_in_a_row: 0.
    nlohmann::json old = nlohmann::json::parse(good);
    old.erase("skipped_in_a_row");
    EXPECT_EQ(train_state_from_json(old.dump(), "x").skipped_in_a_row, 0);
}

TEST(TrainHostile, CheckpointWithAbsurdEpochIsRefusedOnResume) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    TrainConfig c = short_run_config(dir);
    Trainer(c).run();
    SafeTensors st = load_safetensors(c.save_dir + "/last.safetensors");
    nlohmann::json j = nlohmann::json::parse(st.meta("train.state"));
    j["epoch"] = 1000000000;
    st.metadata["train.state"] = j.dump();
    write_bytes(dir + "/bad.safetensors", serialize_safetensors(st));
    c.max_steps = 0;  // as in the report: max_epochs alone
    EXPECT_HAS(error_of([&] { Trainer t(c, dir + "/bad.safetensors"); }),
               "invalid train.state: epoch 1000000000");
}

// ---- item 4: a bounded number of skipped updates -----------------------------------------------

TEST(TrainHostile, EndlessSkippedUpdatesStopTrainingAndKeepTheLastCheckpoint) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    TrainConfig c = short_run_config(dir);
    c.max_steps = 40;
    c.max_epochs = 3;  // without the bound: 3 epochs (39 batches) of skips, then a "success"
    c.checkpoint_interval = 2;
    c.max_skipped_updates = 5;
    TrainerHooks hooks;
    hooks.after_backward = [](int64_t batch, const ParamList& params) {
        if (batch >= 4) (*params.back().grad)[0] = std::numeric_limits<float>::quiet_NaN();
    };
    Trainer t(c, "", hooks);
    const std::string msg = error_of([&] { t.run(); });
    EXPECT_HAS(msg,
               "training stopped: 5 updates in a row were skipped for a non-finite loss or "
               "gradient (max_skipped_updates 5; the last: step 5 (epoch 1, batch 8 of the "
               "epoch, ");
    EXPECT_HAS(msg, "non-finite gradient norm");
    EXPECT_HAS(msg,
               "update skipped); nothing was saved after step 4 (the last checkpoint is "
               "left as it was)");
    EXPECT_EQ(t.state().step, 4);
    EXPECT_EQ(t.state().skipped, 5);
    EXPECT_EQ(t.state().skipped_in_a_row, 5);
    EXPECT_FALSE(file_exists(c.save_dir + "/model.safetensors"));
    const Checkpoint last = load_checkpoint(c.save_dir + "/last.safetensors");
    EXPECT_EQ(last.state.step, 4);  // the checkpoint of step 4 is left as it was
    EXPECT_EQ(last.state.skipped, 0);
}

TEST(TrainHostile, SkippedUpdatesInARowSurviveAResume) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    TrainConfig c = short_run_config(dir);
    c.max_steps = 40;
    c.max_skipped_updates = 4;
    std::atomic<bool> stop{false};
    TrainerHooks hooks;
    hooks.after_backward = [&](int64_t batch, const ParamList& params) {
        if (batch >= 2) (*params.back().grad)[0] = std::numeric_limits<float>::quiet_NaN();
        stop = stop || batch == 4;  // interrupted after three skips in a row
    };
    hooks.interrupt = &stop;
    const TrainResult r = Trainer(c, "", hooks).run();
    ASSERT_TRUE(r.interrupted);
    EXPECT_EQ(r.state.skipped_in_a_row, 3);
    // Resumed, the streak continues: one more skip reaches the bound.
    TrainerHooks again;
    again.after_backward = hooks.after_backward;
    stop = false;
    Trainer resumed(c, c.save_dir, again);
    EXPECT_HAS(error_of([&] { resumed.run(); }), "training stopped: 4 updates in a row");
    EXPECT_EQ(resumed.state().batches, 6);
}

// ---- item 5: special ids -------------------------------------------------------------------

TEST(TrainHostile, SpecialIdsMustBeDistinctAndMatchTheVocabulary) {
    ModelConfig cfg = test::tiny_config();
    cfg.special_ids.pad = cfg.special_ids.eos;
    try {
        validate(cfg);
        ADD_FAILURE() << "pad == eos accepted";
    } catch (const UsageError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "special ids must be distinct, got pad 3, unk 1, bos 2, eos 3");
    }
    cfg = test::tiny_config();
    cfg.special_ids.bos = 12;
    EXPECT_HAS(error_of([&] { validate(cfg); }),
               "special id bos = 12 is outside the vocabularies (src 10, tgt 10)");

    // In a model file: the same checks through nazar.config, and a vocabulary's fixed ids.
    auto saved = [](const ModelConfig& config, bool with_vocab) {
        Seq2Seq m(config, 5);
        std::map<std::string, std::string> meta;
        if (with_vocab) {
            std::vector<std::string> pieces;
            for (int i = Vocab::kNumSpecials; i < 10; ++i) pieces.push_back(fmt::format("p{}", i));
            meta[kSrcVocabKey] = Vocab::from_pieces(pieces).to_json();
            meta[kTgtVocabKey] = meta[kSrcVocabKey];
        }
        SafeTensors st;
        model_to_safetensors(m, meta, st);
        return parse_safetensors(serialize_safetensors(st), "m.safetensors");
    };
    ModelConfig permuted = test::tiny_config();
    permuted.special_ids = {.pad = 1, .unk = 0, .bos = 3, .eos = 2};
    EXPECT_NO_THROW((void)model_from_safetensors(saved(permuted, false)));  // no vocabulary
    EXPECT_HAS(error_of([&] { (void)model_from_safetensors(saved(permuted, true)); }),
               "'m.safetensors': nazar.config special_ids (pad 1, unk 0, bos 3, eos 2) disagree "
               "with the source vocabulary's (pad 0, unk 1, bos 2, eos 3)");
    SafeTensors st = saved(test::tiny_config(), true);
    nlohmann::json j = nlohmann::json::parse(st.meta(kModelConfigKey));
    j["special_ids"]["pad"] = 3;  // == eos: runaway translations before
    st.metadata[kModelConfigKey] = j.dump();
    EXPECT_HAS(error_of([&] { (void)model_from_safetensors(st); }),
               "'m.safetensors': nazar.config: special ids must be distinct, got pad 3, unk 1, "
               "bos 2, eos 3");
}

// ---- items 9 and 12: the run directory ------------------------------------------------------

TEST(TrainHostile, RunDirectoryIsRefusedReplacedOrResumed) {
    const std::string dir = test::fresh_temp_dir("train-hostile") + "/run";
    // A new directory is created (and probed); an empty one is fine.
    EXPECT_TRUE(prepare_run_dir(dir, {}).removed.empty());
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_NO_THROW(prepare_run_dir(dir, {}));
    EXPECT_TRUE(fs::is_empty(dir));  // the probe leaves nothing
    // An old run: refused without --resume / --overwrite.
    for (const char* f : {"model.safetensors", "best.safetensors", "last.safetensors", "notes.txt"})
        atomic_write_file(dir + "/" + f, "x");
    try {
        prepare_run_dir(dir, {});
        ADD_FAILURE() << "non-empty directory accepted";
    } catch (const UsageError& e) {
        EXPECT_EQ(std::string(e.what()),
                  fmt::format("save_dir '{}' is not empty (best.safetensors, last.safetensors, "
                              "model.safetensors and 1 more): continue that run with --resume {}, "
                              "replace it with --overwrite, or choose another --save-dir",
                              dir, dir));
    }
    EXPECT_TRUE(file_exists(dir + "/best.safetensors"));  // nothing removed by a refusal
    // Resuming keeps everything.
    EXPECT_TRUE(prepare_run_dir(dir, {.resume = true}).removed.empty());
    EXPECT_TRUE(file_exists(dir + "/best.safetensors"));
    // Stale temporaries (exactly ours) go, whatever the mode; look-alikes stay.
    const std::vector<std::string> stale = {
        "last.safetensors.tmp.AbC123", "best.safetensors.tmp.000000",
        "model.safetensors.tmp.zzzzzz", ".nazar-write-check.Q1w2E3"};
    const std::vector<std::string> kept = {
        "last.safetensors.tmp.AbC12",    "last.safetensors.tmp.AbC1234",
        "other.safetensors.tmp.AbC123",  "last.safetensors.tmp.AbC-23",
        "last.safetensors.tmp.AbC123.x", "xlast.safetensors.tmp.AbC123"};
    for (const auto& f : stale) atomic_write_file(dir + "/" + f, "x");
    for (const auto& f : kept) atomic_write_file(dir + "/" + f, "x");
    for (const auto& f : stale) EXPECT_TRUE(is_stale_temporary(f)) << f;
    for (const auto& f : kept) EXPECT_FALSE(is_stale_temporary(f)) << f;
    std::vector<std::string> sorted = stale;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(prepare_run_dir(dir, {.resume = true}).removed, sorted);
    for (const auto& f : stale) EXPECT_FALSE(file_exists(dir + "/" + f)) << f;
    for (const auto& f : kept) EXPECT_TRUE(file_exists(dir + "/" + f)) << f;
    // --overwrite removes the old run's model, best and last, nothing else.
    const RunDirReport r = prepare_run_dir(dir, {.overwrite = true});
    EXPECT_EQ(r.removed, (std::vector<std::string>{"best.safetensors", "last.safetensors",
                                                   "model.safetensors"}));
    EXPECT_TRUE(file_exists(dir + "/notes.txt"));
    for (const auto& f : kept) EXPECT_TRUE(file_exists(dir + "/" + f)) << f;
    // A directory holding only stale temporaries counts as empty.
    const std::string only_tmp = dir + "/only-tmp";
    fs::create_directories(only_tmp);
    atomic_write_file(only_tmp + "/last.safetensors.tmp.a1b2c3", "x");
    EXPECT_EQ(prepare_run_dir(only_tmp, {}).removed,
              std::vector<std::string>{"last.safetensors.tmp.a1b2c3"});
    // A file is not a directory.
    EXPECT_THROW(prepare_run_dir(dir + "/notes.txt", {}), UsageError);
}

TEST(TrainHostile, UnwritableRunDirectoryFailsBeforeTraining) {
    const std::string base = test::fresh_temp_dir("train-hostile");
    // Below a regular file nothing can be created, whoever runs the test.
    atomic_write_file(base + "/file", "x");
    EXPECT_HAS(error_of([&] { prepare_run_dir(base + "/file/run", {}); }),
               "cannot create save_dir '" + base + "/file/run'");
    if (::geteuid() == 0) return;  // root writes into a mode-0555 directory anyway
    const std::string ro = base + "/read-only";
    fs::create_directories(ro);
    ::chmod(ro.c_str(), 0555);
    EXPECT_HAS(error_of([&] { prepare_run_dir(ro, {}); }),
               "save_dir '" + ro +
                   "' is not writable: cannot create a file there: Permission "
                   "denied");
    ::chmod(ro.c_str(), 0755);
}

// ---- item 16: the final validation counts for best.safetensors
// -----------------------------------

// The dev loss of the model in `file`, measured by `t` (whose weights it replaces).
double dev_loss_of(Trainer& t, const std::string& file) {
    const LoadedModel m = load_model(file);
    const ParamList from = m.model->parameters(), to = t.model().parameters();
    for (std::size_t i = 0; i < to.size(); ++i) to[i].value->copy_from(*from[i].value);
    return t.validate().loss;
}

TEST(TrainHostile, FinalValidationCountsForBest) {
    set_num_threads(1);
    const std::string dir = test::fresh_temp_dir("train-hostile");
    TrainConfig c = short_run_config(dir);
    c.max_steps = 30;
    c.valid_interval = 20;  // validations at 20 and, as training ends, 30
    c.metrics_log = dir + "/metrics.jsonl";
    Trainer t(c);
    const TrainResult r = t.run();
    ASSERT_TRUE(r.validated);
    const double final_loss = r.last_valid.loss;
    const double best = dev_loss_of(t, c.save_dir + "/best.safetensors");
    // The loss still falls at step 30, so the final model is the best one.
    EXPECT_LE(best, final_loss);
    EXPECT_DOUBLE_EQ(load_checkpoint(c.save_dir + "/best.safetensors").best_loss, final_loss);
    // last.safetensors is the state of an uninterrupted run (the final validation does not count
    // for early stopping), and records the best file's loss.
    const Checkpoint last = load_checkpoint(c.save_dir + "/last.safetensors");
    EXPECT_EQ(last.state.validations, 1);
    EXPECT_DOUBLE_EQ(last.best_loss, final_loss);

    // Resumed to 50 (validations at 40 and 50): best.safetensors is the best of every
    // validation of both runs, 20, 30 (final), 40, 50.
    c.max_steps = 50;
    Trainer resumed(c, c.save_dir);
    resumed.run();
    double lowest = std::numeric_limits<double>::infinity();
    std::ifstream log(c.metrics_log);
    int valid_lines = 0;
    for (std::string line; std::getline(log, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j["type"] != "valid") continue;
        ++valid_lines;
        lowest = std::min(lowest, j["loss"].get<double>());
    }
    EXPECT_EQ(valid_lines, 4);
    EXPECT_DOUBLE_EQ(load_checkpoint(c.save_dir + "/best.safetensors").best_loss, lowest);
    EXPECT_NEAR(dev_loss_of(resumed, c.save_dir + "/best.safetensors"), lowest, 1e-12);
}

// ---- item 11: YAML ---------------------------------------------------------------------------

TEST(TrainHostile, YamlRepeatedKeysAndSecondDocumentsAreRefused) {
    const std::pair<const char*, const char*> bad[] = {
        {"hidden_size: 8\nhidden_size: 16\n",
         "run.yaml: key 'hidden_size' is set twice (lines 1 and 2)"},
        {"hidden_size: 8\nmodel:\n  hidden_size: 16\n",
         "run.yaml: key 'hidden_size' is set twice (lines 1 and 3)"},
        {"hidden-size: 8\nhidden_size: 9\n",
         "run.yaml: key 'hidden_size' is set twice (lines 1 and 2)"},
        {"model:\n  cell: gru\nmodel:\n  hidden_size: 9\n",
         "run.yaml: key 'model' is set twice (lines 1 and 3)"},
        {"hidden_size: 8\n---\nhidden_size: 16\n",
         "run.yaml: holds 2 YAML documents (separated by '---'); put every key in one document"},
        {"lr: 0.1\n---\n",
         "run.yaml: holds 2 YAML documents (separated by '---'); put every key in one document"},
    };
    for (const auto& [text, expected] : bad) {
        TrainConfig c = TrainConfig::defaults();
        try {
            apply_yaml_config(c, text, "run.yaml");
            ADD_FAILURE() << "accepted:\n" << text;
        } catch (const UsageError& e) {
            EXPECT_EQ(std::string(e.what()), expected);
        }
    }
    // One document, with or without markers, is fine.
    TrainConfig c = TrainConfig::defaults();
    EXPECT_NO_THROW(apply_yaml_config(c, "---\nhidden_size: 8\n...\n", "run.yaml"));
    EXPECT_EQ(c.hidden_size, 8);
    EXPECT_NO_THROW(apply_yaml_config(c, "", "run.yaml"));
}

}  // namespace
}  // namespace test_train_hostile
}  // namespace nazar
