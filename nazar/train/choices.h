// The training configuration's choice keys (train_config.h: tokenizer, cell, optimizer, ...)
// parsed into enums ONCE. TrainConfig keeps the text (it is what the YAML file, the flags, the
// help and the checkpoint's "train.config" hold); everything that acts on a choice reads these
// enums, never the strings, so there is no place left to turn an unknown name into a default.
//
// parse_choices is called by validate_config (before any data is read) and by the trainer. An
// unknown value is a UsageError of one line, the same one the YAML/flag reader gives:
//   "cell: 'lstn' is not one of gru, lstm (did you mean 'lstm'?)"
// which also covers a TrainConfig filled in by code or read from a checkpoint.
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/core/precision.h"
#include "nazar/data/tokenizer.h"
#include "nazar/models/config.h"
#include "nazar/train/optim.h"
#include "nazar/train/progress.h"

namespace nazar {

struct TrainConfig;

enum class ScheduleKind { constant, warmup, inverse_sqrt, step_decay, plateau, linear, cosine };
// valid_metric: what early stopping and best.safetensors go by.
enum class ValidMetric { loss, bleu, chrf, exact };

struct TrainChoices {
    TokenizerKind tokenizer = TokenizerKind::word;
    SpmModelType spm_model_type = SpmModelType::unigram;
    CellType cell = CellType::gru;
    DecoderKind decoder = DecoderKind::bahdanau;
    ScoreKind attention = ScoreKind::additive;
    ScaleMode attention_scale = ScaleMode::none;
    LocalMode attention_local = LocalMode::global;
    AttentionTiming attention_timing = AttentionTiming::automatic;
    BridgeKind bridge = BridgeKind::automatic;
    OptimKind optimizer = OptimKind::adam;
    ScheduleKind schedule = ScheduleKind::constant;
    ProgressMode progress = ProgressMode::plain;  // "auto" resolves here (stderr a terminal?)
    ValidMetric valid_metric = ValidMetric::loss;
    GemmPrecision precision = GemmPrecision::fp32;
};

// Throws UsageError (one line, naming the key and its choices) on the first unknown value.
TrainChoices parse_choices(const TrainConfig& cfg);

// The model section of a TrainConfig as a ModelConfig for the given vocabulary sizes.
ModelConfig model_config_from(const TrainConfig& cfg, int src_vocab_size, int tgt_vocab_size);
// validate_config() plus the model's own checks (vocab sizes stand-ins); prints model warnings.
// Everything that can be checked before reading data.
void check_config(const TrainConfig& cfg);

}  // namespace nazar
