// parse_choices (choices.h).
#include "nazar/train/choices.h"

#include "nazar/core/check.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/text_limits.h"
#include "nazar/train/train_config.h"

#include <fmt/format.h>

namespace nazar {
namespace {

// The table's own check first (set_config_value on a scratch config): the one message for an
// unknown choice, with its "did you mean", whether the value came from YAML, a flag or code.
const std::string& checked(const TrainConfig& cfg, std::string TrainConfig::*field,
                           std::string_view key) {
    TrainConfig scratch;
    set_config_value(scratch, key, cfg.*field, "");
    return cfg.*field;
}

ScheduleKind parse_schedule_kind(std::string_view s) {
    if (s == "constant") return ScheduleKind::constant;
    if (s == "warmup") return ScheduleKind::warmup;
    if (s == "inverse_sqrt") return ScheduleKind::inverse_sqrt;
    if (s == "step_decay") return ScheduleKind::step_decay;
    if (s == "plateau") return ScheduleKind::plateau;
    if (s == "linear") return ScheduleKind::linear;
    if (s == "cosine") return ScheduleKind::cosine;
    throw UsageError(
        fmt::format("schedule: '{}' is not one of constant, warmup, inverse_sqrt, "
                    "step_decay, plateau, linear, cosine",
                    excerpt(s)));
}

SpmModelType parse_spm_model_type(std::string_view s) {
    if (s == "unigram") return SpmModelType::unigram;
    if (s == "bpe") return SpmModelType::bpe;
    throw UsageError(fmt::format("spm_model_type: '{}' is not one of unigram, bpe", excerpt(s)));
}

ValidMetric parse_valid_metric(std::string_view s) {
    if (s == "loss") return ValidMetric::loss;
    if (s == "bleu") return ValidMetric::bleu;
    if (s == "chrf") return ValidMetric::chrf;
    if (s == "exact") return ValidMetric::exact;
    throw UsageError(
        fmt::format("valid_metric: '{}' is not one of loss, bleu, chrf, exact", excerpt(s)));
}

}  // namespace

TrainChoices parse_choices(const TrainConfig& c) {
    using C = TrainConfig;
    TrainChoices t;
    t.tokenizer = parse_tokenizer_kind(checked(c, &C::tokenizer, "tokenizer"));
    t.spm_model_type = parse_spm_model_type(checked(c, &C::spm_model_type, "spm_model_type"));
    t.cell = parse_cell_type(checked(c, &C::cell, "cell"));
    t.decoder = parse_decoder_kind(checked(c, &C::decoder, "decoder"));
    t.attention = parse_score_kind(checked(c, &C::attention, "attention"));
    t.attention_scale = parse_scale_mode(checked(c, &C::attention_scale, "attention_scale"));
    t.attention_local = parse_local_mode(checked(c, &C::attention_local, "attention_local"));
    t.attention_timing =
        parse_attention_timing(checked(c, &C::attention_timing, "attention_timing"));
    t.bridge = parse_bridge_kind(checked(c, &C::bridge, "bridge"));
    t.optimizer = parse_optim_kind(checked(c, &C::optimizer, "optimizer"));
    t.schedule = parse_schedule_kind(checked(c, &C::schedule, "schedule"));
    t.progress = parse_progress_mode(checked(c, &C::progress, "progress"));
    t.valid_metric = parse_valid_metric(checked(c, &C::valid_metric, "valid_metric"));
    t.precision = training_gemm_precision(checked(c, &C::precision, "precision"));
    return t;
}

ModelConfig model_config_from(const TrainConfig& c, int src_vocab_size, int tgt_vocab_size) {
    const TrainChoices ch = parse_choices(c);
    ModelConfig m;
    m.src_vocab_size = src_vocab_size;
    m.tgt_vocab_size = tgt_vocab_size;
    m.embedding_size = c.embedding_size;
    m.encoder = {.cell = ch.cell,
                 .hidden_size = c.hidden_size,
                 .num_layers = c.encoder_layers,
                 .bidirectional = c.bidirectional,
                 .dropout = static_cast<float>(c.dropout),
                 .layer_norm = c.layer_norm,
                 .residual = c.encoder_residual,
                 .transition_depth = c.encoder_transition_depth};
    const int C = c.hidden_size * (c.bidirectional ? 2 : 1);
    m.decoder = {.kind = ch.decoder,
                 .cell = ch.cell,
                 .hidden_size = c.decoder_hidden_size ? c.decoder_hidden_size : C,
                 .num_layers = c.decoder_layers,
                 .dropout = static_cast<float>(c.dropout),
                 .bridge = ch.bridge,
                 .attention_timing = ch.attention_timing,
                 .input_feeding = c.input_feeding,
                 .deep_output = c.deep_output,
                 .deep_output_size = c.deep_output_size,
                 .layer_norm = c.layer_norm};
    m.attention.score = ch.attention;
    m.attention.scale = ch.attention_scale;
    m.attention.local = ch.attention_local;
    m.attention.window = c.attention_window;
    m.attention.attention_size = c.attention_size;
    m.attention.position_size = c.position_size;
    m.attention.coverage = c.coverage;
    m.attention.monotonic = c.monotonic;
    m.attention.monotonic_bias_init = static_cast<float>(c.monotonic_bias_init);
    m.attention.monotonic_noise = static_cast<float>(c.monotonic_noise);
    m.attention.mocha_chunk = c.mocha_chunk;
    m.tie_target_embeddings = c.tie_embeddings;
    m.copy_attention = c.copy_attention;
    return m;
}

void check_config(const TrainConfig& cfg) {
    validate_config(cfg);
    validate_and_warn(
        model_config_from(cfg, 5, 5));  // vocab sizes are unknown until the data is read
}

}  // namespace nazar
