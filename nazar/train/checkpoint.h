// Training checkpoints (docs/design.md §5): ONE safetensors file that is a complete model file
// (models/model_file.h: parameters, nazar.config, vocabularies, tokenizers; `translate` and
// `score` accept it as a model) plus everything `train --resume` needs to continue exactly:
//
//   tensors   optim.<buffer>.<param>        optimizer moments (train/optim.h)
//   metadata  optim.kind/step/lr            optimizer counters (train/optim.h)
//             schedule.*                    learning-rate schedule state (train/schedule.h)
//             train.config                  the TrainConfig as JSON (train_config.h)
//             train.state                   TrainState as JSON: updates, batches consumed,
//                                           skipped updates, the batcher position, the
//                                           training RNG state (dropout, scheduled sampling),
//                                           early-stopping state, tokens trained on,
//                                           the current run of skipped updates
//             train.threads                 thread count of the run (bit-identity needs the same)
//   tensors   train.raw.<param>             ema_decay > 0 only: the raw weights, while the model
//                                           part holds their moving average (train/ema.h)
// Doubles are written as shortest round-trip text and RNG words as decimal integers, so a
// resumed run's state equals the uninterrupted run's state bit for bit.
// The file is written atomically (save_safetensors: temp file, fsync, rename); a parameter that
// is not finite is refused (nazar::Error naming it), so NaN/inf never reaches a saved file.
#pragma once

#include "nazar/core/rng.h"
#include "nazar/core/safetensors.h"
#include "nazar/data/batcher.h"
#include "nazar/models/seq2seq.h"
#include "nazar/train/ema.h"
#include "nazar/train/optim.h"
#include "nazar/train/schedule.h"
#include "nazar/train/train_config.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace nazar {

struct TrainState {
    int64_t step = 0;          // updates made (= optimizer steps)
    int64_t batches = 0;       // batches consumed, skipped updates included
    int64_t skipped = 0;       // updates skipped for a non-finite loss or gradient
    BatchPosition position{};  // the batcher's next batch
    Rng::State rng{};          // training RNG (dropout, scheduled sampling)
    double best_dev_loss = std::numeric_limits<double>::infinity();
    int64_t best_step = 0;
    int64_t bad_validations = 0;  // validations since the best (early stopping)
    int64_t validations = 0;
    int64_t tgt_tokens = 0;        // target tokens trained on
    int64_t skipped_in_a_row = 0;  // consecutive skipped updates ending at this point

    bool operator==(const TrainState&) const = default;
};

// Counters beyond this are refused (no real run reaches it; the checks cannot overflow).
inline constexpr int64_t kMaxTrainCount = int64_t{1} << 53;

// Metadata "train.best_loss": the dev loss of the run's best.safetensors (final validations
// included; train.state's best_dev_loss counts interval validations only). Absent in older
// checkpoints: then best_dev_loss.
inline constexpr const char* kBestLossKey = "train.best_loss";
std::string loss_text(double loss);  // shortest round-trip text; "inf" for none

std::string train_state_to_json(const TrainState& s);
// Parses and checks (check_train_state); errors name `source`.
TrainState train_state_from_json(const std::string& json, const std::string& source);
// A hostile or corrupt train.state is one line naming the field: counters in [0, 2^53],
// step + skipped == batches, epoch and batch at most batches, best_step <= step, validations
// <= step, bad_validations <= validations, best_dev_loss >= 0 (+inf: none yet; NaN refused).
void check_train_state(const TrainState& s, const std::string& source);

// Throws nazar::Error naming the first parameter holding NaN or inf.
void check_finite(const ParamList& params, const std::string& what);

// `metadata` carries the vocabularies/tokenizers (model_file.h keys) and train.config.
// With `ema` (swapped: the model holds the average), its raw weights go in as train.raw.*.
void save_checkpoint(const std::string& path, Seq2Seq& model,
                     const std::map<std::string, std::string>& metadata, const Optimizer& optimizer,
                     const LrSchedule& schedule, const TrainState& state, const Ema* ema = nullptr);

// A directory means DIR/last.safetensors. Throws UsageError when there is no such file.
std::string resolve_checkpoint(const std::string& dir_or_file);

struct Checkpoint {
    SafeTensors file;    // the whole file (model tensors, optimizer state, metadata)
    TrainConfig config;  // train.config
    TrainState state;    // train.state
    int threads = 0;     // train.threads
    double best_loss = std::numeric_limits<double>::infinity();  // train.best_loss
};
// Reads the file and its train.* metadata (errors name the file and the missing key), and
// refuses non-finite values in any tensor, parameters and optimizer moments alike
// (check_finite_tensors, models/model_file.h).
Checkpoint load_checkpoint(const std::string& path);

}  // namespace nazar
