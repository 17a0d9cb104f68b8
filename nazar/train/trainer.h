// The training loop (docs/spec.md §7, docs/design.md §4-6).
//
// One update, top to bottom:
//   batch   ← batcher.next()                       (bucketed, shuffled per epoch from the seed)
//   grads   ← 0;  stats ← pass.train_step(batch)  teacher forcing (+ scheduled sampling p), masked
//                                                  cross-entropy / tokens (+ label smoothing ε)
//   norm    ← clip_grad_norm(grads, clip_norm)     (grad_norm when clip_norm = 0)
//   if loss or norm is not finite: skip the update (one message naming the step, epoch and batch);
//                                  max_skipped_updates skips in a row stop training (an Error)
//   lr      ← schedule.lr(step + 1, completed epochs);  optimizer.step()
// Every `valid_interval` updates: dev loss and perplexity over the whole dev set, greedy decoding
// (decode/greedy.h; beam search of size valid_beam when > 1) of `valid_sample` evenly spaced dev
// pairs scored by exact match, BLEU and chrF (eval/), schedule.on_validation(dev loss), early
// stopping after `patience` validations without a better valid_metric (dev loss by default),
// best.safetensors when it improved, last.safetensors (and checkpoint-<step>.safetensors with
// keep_checkpoints, the K latest kept). With ema_decay, the update is followed by the moving
// average's (ema.h), validation uses the average, and files hold it as their model. At the end:
// last.safetensors and model.safetensors (the final weights; what translate needs). When training
// ends between validations, one more validation is reported (log and metrics) and writes
// best.safetensors when it is the best so far, without changing the early-stopping or schedule
// state, so a run stopped at step k and resumed equals an uninterrupted run (last and model
// files; best.safetensors may then be a better, earlier model than the uninterrupted run's).
//
// Gradient accumulation and data parallelism (docs/distributed.md): with `accumulate` K and N
// ranks (mpirun), the batcher draws global batches of K·N times batch_size (or batch_tokens); each
// rank trains its K contiguous row parts of it (nazar/dist/data_parallel.h) with the loss scaled by
// 1 / (target tokens of the global batch), the gradients are summed over the ranks, then one clip
// of the global norm and one optimizer step: the same update as one process with that batch, up
// to the floating-point summation order. Dropout and scheduled sampling then draw from a
// generator per part, seeded from the training Rng. Rank 0 alone validates, logs and writes files.
//
// Determinism: the model's initial weights come from Rng(seed); the batch plan from the seed
// and the epoch (data/batcher.h); dropout and scheduled sampling from a training Rng whose state
// is checkpointed. Same seed + same thread count ⇒ bit-identical weights, interrupted or not.
#pragma once

#include "nazar/data/alignment_file.h"
#include "nazar/data/pipeline.h"
#include "nazar/dist/data_parallel.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/average.h"
#include "nazar/train/checkpoint.h"
#include "nazar/train/choices.h"
#include "nazar/train/ema.h"
#include "nazar/train/optim.h"
#include "nazar/train/schedule.h"
#include "nazar/train/train_config.h"
#include "nazar/train/training_source.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nazar {

// A padded batch from explicit id sequences (no <s>/</s>; the function adds them to targets).
// tgt may be empty: then only the source side is filled (T = 0).
Batch batch_from_ids(std::span<const std::vector<int32_t>> src,
                     std::span<const std::vector<int32_t>> tgt);

struct ValidationResult {
    double loss = 0;        // mean per target token
    double perplexity = 0;  // exp(loss)
    int64_t tokens = 0;
    double accuracy = 0;  // token accuracy under teacher forcing, percent
    double exact = 0;     // exact match on the decoded sample, percent
    double exact_se = 0;  // its standard error, in points: √(p (1 − p) / sampled)
    double bleu = 0;      // corpus BLEU on the decoded sample
    double chrf = 0;      // corpus chrF2 on the decoded sample
    // What early stopping and best.safetensors go by, lower is better: the dev loss for
    // valid_metric loss, else 100 − the metric's score (train.state's best_dev_loss holds it).
    double criterion = 0;
    int64_t sampled = 0;  // distinct dev sources decoded (each scored against all its targets)
    int64_t sources = 0;  // distinct sources in the dev set
    // dev_alignment: the guided alignment loss (unweighted, λ = 1) per aligned dev position;
    // < 0 without dev alignments
    double alignment_loss = -1;
    std::vector<std::string> examples;  // first few "src ||| hyp ||| ref" lines
};

// Checkpoint metadata of a run with a budget schedule (linear, cosine): its training seconds so
// far (all invocations), which --resume continues from. Other runs' checkpoints hold no wall
// time, so that they stay byte-identical across front ends and resumes.
inline constexpr const char* kSecondsKey = "train.seconds";
// valid_sample -1 (the default, "auto"): every distinct dev source up to this many, else this
// many evenly spaced (standard error of an exact match near 50%: 0.5 points).
inline constexpr int64_t kAutoValidSample = 10000;

struct TrainResult {
    TrainState state;
    bool early_stopped = false;
    bool interrupted = false;     // TrainerHooks::interrupt stopped the run (no model.safetensors)
    double last_train_loss = 0;   // mean per token over the last progress window
    ValidationResult last_valid;  // the final validation (when there is dev data)
    // The final report: best.safetensors and the final model on every distinct dev source
    // (best_step -1: no best file).
    ValidationResult final_best, final_model;
    int64_t final_best_step = -1;
    // average_best: averaged.safetensors (the mean of the best validations' weights) on every
    // distinct dev source, and the steps it averaged, best first (empty: no averaged file).
    ValidationResult final_averaged;
    std::vector<int64_t> averaged_steps;
    bool validated = false;
    std::string model_path;  // save_dir/model.safetensors
};

// Test hooks (batch_index / batches count consumed batches, 0-based / 1-based).
struct TrainerHooks {
    // After backward, before clipping; may modify gradients (e.g. to provoke the non-finite path).
    std::function<void(int64_t batch_index, const ParamList& params)> after_backward;
    // After each batch; true = return from run() at once, saving nothing (a simulated kill).
    std::function<bool(int64_t batches)> stop_after;
    // Polled after each batch (the CLI sets it from SIGINT/SIGTERM): when true, run() writes
    // last.safetensors at that step boundary and returns with `interrupted` set; resuming from
    // it continues exactly.
    const std::atomic<bool>* interrupt = nullptr;
    // Front ends' progress callback (the Python package): each record the metrics log gets
    // ({"type": "train", ...} every progress window, {"type": "valid", ...} after each
    // validation), whether or not a log file is set. Called on the training thread.
    std::function<void(const nlohmann::json& record)> on_record;
    // The clock of max_minutes and of the budget schedules, in seconds from any origin (a fake
    // clock in tests, the demo's training time without validation); unset =
    // std::chrono::steady_clock.
    std::function<double()> clock;
    // Polled before each update (the demo sets it from on_record when the dev score is good
    // enough): when true, run() ends as at max_steps (the final validation when the last one
    // was not at this step, the last and model files).
    const std::atomic<bool>* finish = nullptr;
    // No progress line, no messages, no metrics log (a front end that reports on its own from
    // on_record). Warnings and errors still appear.
    bool quiet = false;
};

class Trainer {
public:
    // Prepares data (tokenizers, vocabularies, corpus; or the checkpoint's tokenizers and
    // vocabularies on resume), the model, optimizer and schedule. `resume` is a checkpoint
    // file or directory ("" = fresh start); then `cfg` must come from the checkpoint's stored
    // config with only resumable keys changed (see make_resume_config).
    explicit Trainer(TrainConfig cfg, const std::string& resume = "", TrainerHooks hooks = {});
    // The data in memory (training_source.h) instead of the files of cfg: train, dev and their
    // variants must be empty, and so must train_alignment and dev_alignment; no copy_attention.
    // A fresh start (no resume); the files of the run are written to save_dir as usual.
    Trainer(TrainConfig cfg, TrainingSource data, TrainerHooks hooks = {});
    ~Trainer();
    Trainer(const Trainer&) = delete;  // the batcher refers to data_.corpus
    Trainer& operator=(const Trainer&) = delete;

    TrainResult run();
    ValidationResult validate();  // on the dev set (Error when there is none)
    // The model file at `path` (e.g. best.safetensors) on every dev source, whatever
    // valid_sample: the final report of a run. `step` (optional): the step of its train.state.
    ValidationResult validate_file(const std::string& path, int64_t* step = nullptr);

    Seq2Seq& model() { return *model_; }
    const TrainState& state() const { return state_; }
    const TrainConfig& config() const { return cfg_; }
    const TrainingData& data() const { return data_; }
    std::map<std::string, std::string> metadata() const;  // vocabularies, tokenizers, train.config

private:
    Trainer(TrainConfig cfg, const std::string& resume, std::unique_ptr<TrainingSource> data,
            TrainerHooks hooks);
    // The parts of the constructor (trainer.cpp; training_source.cpp: the data in memory).
    std::unique_ptr<Checkpoint> take_data(TrainingSource&& data);  // data_, dev_; null
    std::unique_ptr<Checkpoint> prepare_data(const std::string& resume,
                                             const TrainChoices& choices);  // data_, dev_
    void restore(const Checkpoint& ck);  // optimizer, schedule, state, RNG, batch position
    bool train_one(Batch& batch);        // one update; false when skipped
    // accumulate · ranks > 1: this rank's parts of the global batch, gradients summed over ranks.
    LossStats train_parts(const Batch& batch, TrainOptions opt);
    void check_ranks_agree(const std::string& when) const;        // weight hashes (dist)
    void save(const std::string& name, bool check_ranks = true);  // rank 0 writes
    bool stop_now() const;
    double criterion(const ValidationResult& v) const;
    // Dev loss, perplexity and accuracy of `model`, and the decoding of K evenly spaced
    // distinct dev sources (validation.cpp).
    ValidationResult validate_weights(Seq2Seq& model, int64_t K);
    // The outputs for the sources of dev pairs `pairs` (greedy, or beam valid_beam), in order.
    std::vector<std::string> decode_dev(Seq2Seq& model, const std::vector<int64_t>& pairs);
    void validate_loss(Seq2Seq& model, ValidationResult& r);
    void group_dev_sources();       // dev_groups_
    int64_t valid_sources() const;  // K: valid_sample (-1 = auto) over the distinct sources
    const char* metric_name() const;
    int64_t completed_epochs() const;
    int64_t total_steps() const;
    // The parts of run() (training_loop.cpp).
    struct RunLog;                     // progress, metrics log, result so far
    void save_periodic(RunLog& log);   // last.safetensors and checkpoint-<step>.safetensors
    void announce(RunLog& log) const;  // model and data sizes; the resume point
    void report(RunLog& log, const ValidationResult& v, bool improved);  // log + metrics record
    TrainResult stop_interrupted(RunLog& log);    // last.safetensors after TrainerHooks::interrupt
    void note_skipped(RunLog& log);               // Error after max_skipped_updates in a row
    void log_update(RunLog& log, int64_t total);  // progress line, "train" metrics record
    void validate_on_interval(RunLog& log);       // early stopping, schedule, best/last files
    TrainResult finish_run(RunLog& log);          // final validation, last and model files
    void final_report(RunLog& log);               // best and final model on every dev source
    // average_best: this validation's weights as best-<step>.safetensors when criterion `c`
    // ranks among the K best (rank 0; ranked_ is updated), and, at the end, their average.
    void keep_ranked(double c);
    void write_averaged(RunLog& log);

    TrainConfig cfg_;
    TrainerHooks hooks_;
    dist::Communicator* comm_;  // dist::world(): one process unless started by mpirun
    int parts_ = 1;             // accumulate · ranks: row parts of a global batch
    std::unique_ptr<dist::GradientSum> grad_sum_;
    bool interrupt_agreed_ = false;  // some rank saw TrainerHooks::interrupt (parallel runs)
    // max_minutes: the budget counts from run(); rank 0's clock decides (parallel runs).
    double clock() const;        // seconds: TrainerHooks::clock, else the steady clock
    double started_ = 0;         // clock() when run() began
    double seconds_before_ = 0;  // training seconds of the invocations before a --resume
    double agreed_seconds_ = 0;  // rank 0's run_seconds() at this update (parallel runs)
    bool time_up_ = false;
    // Seconds of training that count for max_minutes: this invocation's, plus the earlier
    // invocations' under a budget schedule (linear, cosine).
    double run_seconds() const;
    bool out_of_time() const;
    void restore_seconds(const SafeTensors& file);  // seconds_before_ from kSecondsKey
    // The share of the budget used by update `step` (1-based) at `seconds` of training: the
    // largest of step / max_steps, epochs / max_epochs, seconds / max_minutes over the budgets
    // that are set, clamped to [0, 1] (schedule.h BudgetLr).
    double budget_progress(int64_t step, double seconds) const;
    // Guided alignment (guided_training.cpp): alignments_ from train_alignment for the kept pairs
    // (their lines), and λ at the current update (guided_alignment_decay).
    void load_alignments(std::span<const int64_t> kept_lines, const std::string& training,
                         int64_t lines_read);
    float guided_weight() const;
    TrainingData data_;
    Corpus dev_;
    CorpusAlignments alignments_;
    CorpusAlignments dev_alignments_;  // dev_alignment (empty: none)        // train_alignment: the
                                       // training pairs' links (guided)
    std::vector<std::string> dev_text_;  // dev target lines as read: the references of BLEU etc.
    std::vector<std::string> dev_src_text_;  // dev source lines as read
    // The dev pairs grouped by source line, in order of first appearance: the pairs of a group
    // give one source and all its accepted targets (several pronunciations of a word).
    std::vector<std::vector<int64_t>> dev_groups_;
    ValidationResult best_valid_;           // the validation that wrote best.safetensors (this run)
    std::vector<RankedCheckpoint> ranked_;  // average_best: best-<step> files kept, best first
    int64_t best_valid_step_ = -1;          // its step; -1 = none in this invocation
    bool has_dev_ = false;
    std::unique_ptr<Seq2Seq> model_;
    std::unique_ptr<TrainPass> pass_;  // the training step's buffers over model_
    ParamList params_;
    std::unique_ptr<Optimizer> optim_;
    std::unique_ptr<LrSchedule> schedule_;
    std::unique_ptr<Batcher> batcher_;
    std::unique_ptr<Ema> ema_;                       // ema_decay > 0
    ValidMetric metric_ = ValidMetric::loss;         // valid_metric (bleu on char targets: chrf)
    GemmPrecision precision_ = GemmPrecision::fp32;  // the products' (training_gemm_precision)
    Rng rng_;
    TrainState state_;
    // The last update, for progress and metrics.
    double last_loss_ = 0;
    int64_t last_tokens_ = 0;
    double last_coverage_loss_ = 0;   // the last batch's weighted coverage loss (summed)
    double last_alignment_loss_ = 0;  // the last batch's weighted guided alignment loss (summed)
    int64_t last_aligned_ = 0;        // ... and its aligned target positions
    float last_norm_ = 0;
    std::string last_skip_;
    // Dev loss of best.safetensors: state_.best_dev_loss, or lower after a final validation off
    // the interval (which counts for the best file but not for early stopping).
    double best_loss_ = std::numeric_limits<double>::infinity();
};

// validate_config for a Trainer given its data in memory: the same checks, and none of the data
// files set (UsageError naming the first), no copy attention.
void check_in_memory_config(const TrainConfig& cfg);

// The configuration of a resumed run (run_setup.cpp): the checkpoint's stored config, with
// `overrides` (key -> value, from flags or YAML) applied. Changing a key that is not resumable
// (ConfigKey::resumable) is a UsageError naming it and both values.
TrainConfig make_resume_config(const TrainConfig& stored, const TrainConfig& requested,
                               const std::vector<std::string>& set_keys);

}  // namespace nazar
