// Checkpoint averaging (docs/training.md, "Averaging, EMA and ensembles").
//
// average_models(inputs, output) writes a model file whose every parameter is the element-wise
// arithmetic mean of that parameter over the input files:
//   out[i] = float( (Σ_f double(in_f[i])) / n )      summed in double, in input order
// Every input is loaded with all the model-file checks (models/model_file.h: shapes from
// nazar.config, finite values); all must have the same nazar.config and, where present, the
// same vocabularies and tokenizers (nazar.src_vocab, nazar.tgt_vocab, nazar.src_tokenizer,
// nazar.tgt_tokenizer). A mismatch is an Error naming the first file that differs from the
// first input, the first tensor whose shape differs (when one does) and the first differing
// configuration field (a JSON pointer such as /encoder/hidden_size), or the metadata key.
// Inputs may be model files or training checkpoints (their optimizer state is ignored). The
// output is a model file (no optimizer state, not resumable) with the first input's vocabularies,
// tokenizers and train.config, plus "nazar.averaged_from" (a JSON list of the input paths);
// it is written atomically (core/fileio.h), so it may replace one of its inputs.
//
// A run's periodic checkpoints (keep_checkpoints: K, train_config.h) are
// DIR/checkpoint-<step>.safetensors; last_checkpoints(DIR, K) lists the K with the highest
// steps, oldest first.
//
// A run's best validations (average_best: K, train_config.h) are DIR/best-<step>.safetensors:
// model files with the weights validated at <step> (the moving average with ema_decay) and,
// under metadata kValidCriterionKey, the selection criterion that validation gave (lower is
// better: the dev loss for valid_metric loss, else 100 − the metric's score). The trainer keeps
// the K with the lowest criterion (an equal criterion does not displace an earlier file), and
// best_checkpoints(DIR, K) lists the K best for averaging.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nazar {

inline constexpr const char* kValidCriterionKey = "train.valid_criterion";

struct AverageReport {
    int files = 0;
    int64_t parameters = 0;  // scalar parameters averaged
};

AverageReport average_models(std::span<const std::string> inputs, const std::string& output);

// "checkpoint-<step>.safetensors"
std::string periodic_checkpoint_name(int64_t step);
// The step of a periodic checkpoint's file name (no directory), or -1 when `name` is not one.
int64_t periodic_checkpoint_step(std::string_view name);
// (step, path) of every periodic checkpoint in `dir`, by increasing step. Error when `dir`
// cannot be listed.
std::vector<std::pair<int64_t, std::string>> list_periodic_checkpoints(const std::string& dir);
// The paths of the `k` latest periodic checkpoints of `dir`, oldest first. UsageError when there
// are fewer than k (naming how many there are and keep_checkpoints).
std::vector<std::string> last_checkpoints(const std::string& dir, int k);
// Deletes the periodic checkpoints of `dir` beyond the `keep` latest with a step <= `step`, and
// those with a step > `step` (left by an abandoned continuation of a run resumed from an earlier
// checkpoint). Never touches other files (model, best, last). Returns the names removed.
std::vector<std::string> prune_periodic_checkpoints(const std::string& dir, int keep, int64_t step);

// "best-<step>.safetensors"
std::string ranked_checkpoint_name(int64_t step);
// The step of a best-<step> file name (no directory), or -1 when `name` is not one.
int64_t ranked_checkpoint_step(std::string_view name);

struct RankedCheckpoint {
    int64_t step = 0;
    double criterion = 0;  // lower is better
    std::string path;
};
// Every best-<step>.safetensors of `dir`, best first (criterion ascending, the earlier step first
// on equal criteria). Error when `dir` cannot be listed, or naming a file that cannot be read or
// lacks a valid kValidCriterionKey.
std::vector<RankedCheckpoint> list_ranked_checkpoints(const std::string& dir);
// Whether a validation with `criterion` enters the `k` best of `kept` (best first).
bool enters_best(const std::vector<RankedCheckpoint>& kept, double criterion, int k);
// Deletes the best-<step> files of `dir` beyond the `k` best with a step <= `step`, and those
// with a step > `step` (left by an abandoned continuation of a resumed run); returns those kept,
// best first.
std::vector<RankedCheckpoint> prune_ranked_checkpoints(const std::string& dir, int k, int64_t step);
// The paths of the `k` best best-<step> files of `dir`, best first. UsageError when there are
// fewer than k (naming how many there are and average_best).
std::vector<std::string> best_checkpoints(const std::string& dir, int k);

}  // namespace nazar
