// The training configuration: ONE table of options (key, type, default, help, range) from which
// the YAML reader, the `nazar train` flags and `nazar train --help` are all generated, so every
// YAML key is also a flag (`--key value`) and the help lists every key (docs/design.md §6).
//
// Precedence: table defaults < YAML file (`--config run.yaml`) < flags. On `--resume`, the
// checkpoint's stored configuration replaces the defaults; a key that shapes the model or the
// data (its ConfigKey::resumable is false) may not change then.
//
// Every user mistake is a nazar::UsageError of one line, raised before any data is read:
//   unknown key   "run.yaml: unknown key 'hiden_size' (did you mean 'hidden_size'?)"
//   wrong type    "--hidden-size: expected an integer, got '12x'"
//   range         "--dropout: 1.5 is out of range [0, 1)"
//   choice        "run.yaml: cell: 'lstn' is not one of gru, lstm (did you mean 'lstm'?)"
//   missing file  "train: file 'data/trian.tsv' does not exist"
//   sizes         dot attention with d_s != d_h names both sizes and suggests `general`.
// YAML may be flat (`hidden_size: 256`) or grouped by section (`model: {hidden_size: 256}`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nazar {

struct TrainConfig {
    // ---- data ----
    std::string train, train_src, train_tgt;  // a TSV, or two line-aligned files
    std::string train_alignment;  // Pharaoh links, one line per training line (guided alignment)
    std::string dev, dev_src, dev_tgt;
    std::string dev_alignment;  // Pharaoh links of the dev pairs: the dev alignment loss
    std::string tokenizer;      // char | word | spm
    std::string spm_model;      // an existing SentencePiece .model (spm)
    int spm_vocab_size = 0;
    std::string spm_model_type;  // unigram | bpe
    int vocab_size = 0;          // 0 = no limit (char/word)
    int min_freq = 0;
    bool shared_vocab = false;
    int max_length = 0;
    double max_length_ratio = 0;
    bool skip_bad_lines = false;
    int batch_tokens = 0;
    int batch_size = 0;
    // ---- model (models/config.h ModelConfig) ----
    std::string cell;  // gru | lstm
    int embedding_size = 0;
    int hidden_size = 0;          // encoder hidden size per direction
    int decoder_hidden_size = 0;  // d_s; 0 = d_h (the encoder output size)
    int encoder_layers = 0, decoder_layers = 0;
    bool bidirectional = false;
    double dropout = 0;
    std::string decoder;             // bahdanau | luong
    std::string attention;           // additive | dot | general | concat
    std::string attention_scale;     // none | sqrt | learned
    std::string attention_local;     // global | local-m | local-p
    int attention_window = 0;        // D
    int attention_size = 0;          // d_a; 0 = d_s
    int position_size = 0;           // d_p (local-p); 0 = d_s
    bool coverage = false;           // coverage vector in the additive/concat score
    bool monotonic = false;          // monotonic attention (Raffel et al. 2017), global only
    double monotonic_bias_init = 0;  // r at initialisation
    double monotonic_noise = 0;      // σ of the pre-sigmoid noise in training
    int mocha_chunk = 0;             // MoChA's chunk w (0 = plain monotonic attention)
    std::string attention_timing;    // auto | before | after
    std::string bridge;              // auto | backward-first | mean | last | zero
    bool deep_output = false;
    int deep_output_size = 0;
    bool input_feeding = false;        // luong only
    bool layer_norm = false;           // layer-normalised GRU cells, encoder and decoder
    bool encoder_residual = false;     // residual connections between stacked encoder layers
    int encoder_transition_depth = 1;  // deep transition: GRU cells per encoder step
    bool tie_embeddings = false;
    bool copy_attention = false;  // pointer-generator (models/copy.h)
    // ---- training ----
    std::string optimizer;  // adam | adamw | sgd
    double lr = 0;
    double momentum = 0;
    double weight_decay = 0;
    std::string schedule;  // constant | warmup | inverse_sqrt | step_decay | plateau
    int warmup_steps = 0;
    int decay_start_epoch = 0, decay_every = 0;
    double decay_factor = 0;
    int plateau_patience = 0;
    double min_lr = 0;
    double clip_norm = 0;
    double label_smoothing = 0;
    double coverage_loss_weight = 0;     // λ of the coverage loss (needs coverage)
    double guided_alignment_weight = 0;  // λ of the guided alignment loss (train_alignment)
    double guided_alignment_decay = 1;   // λ × decay every guided_alignment_decay_steps
    int guided_alignment_decay_steps = 1000;
    double scheduled_sampling = 0;
    double embedding_dropout = 0;       // source and target embedding outputs
    double encoder_output_dropout = 0;  // encoder states H before attention
    double decoder_output_dropout = 0;  // the decoder's output o_t before the generator
    double attention_dropout = 0;       // attention weights α before the context sum
    bool variational_dropout = false;   // one mask per sentence, reused at every position
    double word_dropout = 0;            // input tokens replaced by <unk>
    std::string precision;  // fp32 | bf16: the large products' inputs (docs/training.md)
    int max_steps = 0, max_epochs = 0;
    double max_minutes = 0;  // training wall-time budget of this invocation (0 = no limit)
    int valid_interval = 0;
    int valid_sample = 0;
    int valid_max_length = 0;
    std::string valid_metric;  // loss | bleu | chrf | exact: early stopping and best selection
    int valid_beam = 1;        // validation decoding: 1 = greedy, else beam search of this size
    int patience = 0;
    int max_skipped_updates = 0;  // consecutive skipped updates before training stops
    int seed = 0;
    int threads = 0;
    int accumulate = 1;         // micro-batches summed per update (gradient accumulation)
    double dist_timeout = 600;  // seconds a data-parallel collective may wait (0 = no limit)
    std::string save_dir;
    bool keep_best = false, keep_last = false;
    int checkpoint_interval = 0;
    int keep_checkpoints = 0;  // periodic checkpoint-<step>.safetensors kept (0 = none)
    int average_best = 0;      // best-<step>.safetensors of the K best validations, averaged at
                               // the end into averaged.safetensors (0 = off)
    double ema_decay = 0;      // exponential moving average of the weights (0 = off)
    std::string metrics_log;
    int log_interval = 0;
    std::string progress;  // auto | tty | plain | none

    // The table's defaults.
    static TrainConfig defaults();
};

enum class KeyType { integer, real, boolean, text, choice, file };

struct ConfigKey {
    using Field = std::variant<int TrainConfig::*, double TrainConfig::*, bool TrainConfig::*,
                               std::string TrainConfig::*>;
    const char* key;      // snake_case: the YAML key; the flag is --key with '_' -> '-'
    const char* section;  // "data", "model", "training"
    KeyType type;
    const char* def;  // default, as text
    const char* help;
    Field field;
    double min = 0, max = 0;  // numeric range when min < max ...
    bool max_open = false;    // ... with max excluded
    std::vector<std::string_view> choices{};
    bool resumable = true;  // may differ on --resume (training control), else fixed
};

const std::vector<ConfigKey>& config_keys();
const ConfigKey* find_config_key(std::string_view key);  // accepts '-' for '_'; nullptr if none
std::string flag_name(const ConfigKey& k);               // "--hidden-size"
std::string describe_key(const ConfigKey& k);            // help text with type, range, default

// Closest known key (Levenshtein) within a plausible distance, or "".
std::string suggest_key(std::string_view key);
std::size_t edit_distance(std::string_view a, std::string_view b);

// Sets one key from text. `where` prefixes errors ("run.yaml", "--lr"). Throws UsageError.
void set_config_value(TrainConfig& cfg, std::string_view key, std::string_view value,
                      std::string_view where);
std::string get_config_value(const TrainConfig& cfg, const ConfigKey& k);  // canonical text

// YAML: applies every key of the document (flat or by section). `source` names it in errors.
void apply_yaml_config(TrainConfig& cfg, const std::string& yaml_text, const std::string& source);
// The largest --config file read (a configuration is a few hundred bytes).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

void apply_yaml_file(TrainConfig& cfg, const std::string& path);

// JSON object of every key (checkpoint metadata "train.config"), and back.
std::string config_to_json(const TrainConfig& cfg);
TrainConfig config_from_json(const std::string& json, const std::string& source);
// Keys whose values differ, for resume checks.
std::vector<std::string> changed_keys(const TrainConfig& a, const TrainConfig& b);

// Cross-key checks run before any data is read: a training set given exactly once, files exist,
// batch size set, model sizes consistent (dot attention needs d_s == d_h). Throws UsageError.
void validate_config(const TrainConfig& cfg);

}  // namespace nazar
