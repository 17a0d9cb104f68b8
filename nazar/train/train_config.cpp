// size: over 500 lines, make_table() over 80: the table of configuration keys (data).
// The option table and its parsers (train_config.h).
#include "nazar/train/train_config.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/utf8.h"
#include "nazar/train/choices.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

namespace nazar {
namespace {

using C = TrainConfig;

std::vector<ConfigKey> make_table() {
    using K = KeyType;
    std::vector<ConfigKey> t = {
        // ---- data ----
        {"train", "data", K::file, "",
         "Training pairs: a TSV file (source<TAB>target), plain or gzip", &C::train},
        {"train_src", "data", K::file, "",
         "Training sources, one per line (with train_tgt, instead of train)", &C::train_src},
        {"train_tgt", "data", K::file, "", "Training targets, line-aligned with train_src",
         &C::train_tgt},
        {"train_alignment", "data", K::file, "",
         "Pharaoh i-j links (model tokens, 0-based), one line per training line, for "
         "guided_alignment_weight",
         &C::train_alignment},
        {"dev", "data", K::file, "", "Validation pairs (TSV); empty = no validation", &C::dev},
        {"dev_src", "data", K::file, "", "Validation sources (with dev_tgt, instead of dev)",
         &C::dev_src},
        {"dev_tgt", "data", K::file, "", "Validation targets, line-aligned with dev_src",
         &C::dev_tgt},
        {"dev_alignment", "data", K::file, "",
         "Pharaoh links of the dev pairs (as train_alignment): validation reports the alignment "
         "loss",
         &C::dev_alignment},
        {"tokenizer",
         "data",
         K::choice,
         "word",
         "Tokenizer of both sides",
         &C::tokenizer,
         0,
         0,
         false,
         {"char", "word", "spm"}},
        {"spm_model", "data", K::file, "",
         "Existing SentencePiece .model to use (tokenizer spm); empty = train one", &C::spm_model},
        {"spm_vocab_size", "data", K::integer, "8000", "Size of a SentencePiece model trained here",
         &C::spm_vocab_size, 8, 1e6},
        {"spm_model_type",
         "data",
         K::choice,
         "unigram",
         "Type of a SentencePiece model trained here",
         &C::spm_model_type,
         0,
         0,
         false,
         {"unigram", "bpe"}},
        {"vocab_size", "data", K::integer, "0",
         "Largest vocabulary, specials included (0 = no limit; char/word)", &C::vocab_size, 0, 1e8},
        {"min_freq", "data", K::integer, "1", "Pieces seen fewer times become <unk> (char/word)",
         &C::min_freq, 1, 1e9},
        {"shared_vocab", "data", K::boolean, "false",
         "One vocabulary (and SentencePiece model) for both sides", &C::shared_vocab},
        {"max_length", "data", K::integer, "100",
         "Drop training pairs with a side longer than this (tokens; 0 = no limit)", &C::max_length,
         0, 1e6},
        {"max_length_ratio", "data", K::real, "0",
         "Drop pairs whose longer/shorter side ratio exceeds this (0 = off)", &C::max_length_ratio,
         0, 1e6},
        {"skip_bad_lines", "data", K::boolean, "false",
         "Count and skip malformed lines instead of stopping", &C::skip_bad_lines},
        {"batch_tokens", "data", K::integer, "0",
         "Token budget per batch, B x max(S, T) (0 = use batch_size)", &C::batch_tokens, 0, 1e8},
        {"batch_size", "data", K::integer, "32", "Sentences per batch (when batch_tokens is 0)",
         &C::batch_size, 1, 1e6},
        // ---- model ----
        {"cell",
         "model",
         K::choice,
         "gru",
         "Recurrent cell of encoder and decoder",
         &C::cell,
         0,
         0,
         false,
         {"gru", "lstm"}},
        {"embedding_size", "model", K::integer, "64", "Embedding size E (both sides)",
         &C::embedding_size, 1, 65536},
        {"hidden_size", "model", K::integer, "128", "Encoder hidden size per direction",
         &C::hidden_size, 1, 65536},
        {"decoder_hidden_size", "model", K::integer, "0",
         "Decoder state size d_s (0 = d_h, the encoder output size)", &C::decoder_hidden_size, 0,
         65536},
        {"encoder_layers", "model", K::integer, "1", "Encoder RNN layers", &C::encoder_layers, 1,
         16},
        {"encoder_residual", "model", K::boolean, "false",
         "Residual connections in the encoder: layer k > 0 outputs its states plus its input "
         "(needs encoder_layers >= 2)",
         &C::encoder_residual},
        {"encoder_transition_depth", "model", K::integer, "1",
         "Deep transition in the encoder: GRU cells per step, the first reading the input, the "
         "others only the state (Barone et al. 2017; cell: gru)",
         &C::encoder_transition_depth, 1, 8},
        {"decoder_layers", "model", K::integer, "1", "Decoder RNN layers", &C::decoder_layers, 1,
         16},
        {"bidirectional", "model", K::boolean, "true",
         "Bidirectional encoder (d_h = 2 x hidden_size)", &C::bidirectional},
        {"dropout", "model", K::real, "0",
         "Dropout between stacked RNN layers (encoder and decoder)", &C::dropout, 0, 1, true},
        {"decoder",
         "model",
         K::choice,
         "bahdanau",
         "Decoder: attention before the RNN step (bahdanau) or after it (luong)",
         &C::decoder,
         0,
         0,
         false,
         {"bahdanau", "luong"}},
        {"attention",
         "model",
         K::choice,
         "additive",
         "Attention score",
         &C::attention,
         0,
         0,
         false,
         {"additive", "dot", "general", "concat"}},
        {"attention_scale",
         "model",
         K::choice,
         "none",
         "Score scaling for dot/general: none, 1/sqrt(d_h), learned",
         &C::attention_scale,
         0,
         0,
         false,
         {"none", "sqrt", "learned"}},
        {"attention_local",
         "model",
         K::choice,
         "global",
         "Global attention or Luong's local-m / local-p",
         &C::attention_local,
         0,
         0,
         false,
         {"global", "local-m", "local-p"}},
        {"attention_window", "model", K::integer, "10", "Local attention half-window D",
         &C::attention_window, 1, 1e5},
        {"attention_size", "model", K::integer, "0", "additive/concat attention size d_a (0 = d_s)",
         &C::attention_size, 0, 65536},
        {"position_size", "model", K::integer, "0", "local-p position predictor size d_p (0 = d_s)",
         &C::position_size, 0, 65536},
        {"coverage", "model", K::boolean, "false",
         "Coverage attention: the sum of earlier attention weights enters the additive/concat "
         "score (See et al. 2017)",
         &C::coverage},
        {"monotonic", "model", K::boolean, "false",
         "Monotonic attention: weights are the expected left-to-right alignment of "
         "sigmoid(score + r + noise), decoding hard (Raffel et al. 2017); global only",
         &C::monotonic},
        {"monotonic_bias_init", "model", K::real, "-1",
         "Monotonic attention: initial value of the learned bias r added to every score",
         &C::monotonic_bias_init, -100, 100},
        {"monotonic_noise", "model", K::real, "1",
         "Monotonic attention: std-dev of the noise added to the scores before the sigmoid "
         "(training only; pushes the selection probabilities towards 0 or 1)",
         &C::monotonic_noise, 0, 100},
        {"mocha_chunk", "model", K::integer, "0",
         "MoChA (Chiu & Raffel 2018): with monotonic attention, attend softly to the w positions "
         "ending where the monotonic reader stops (0 = plain monotonic attention; additive or "
         "concat score)",
         &C::mocha_chunk, 0, 256},
        {"attention_timing",
         "model",
         K::choice,
         "auto",
         "Query s_{t-1} before the RNN step or s_t after it (auto: the decoder's own; others warn)",
         &C::attention_timing,
         0,
         0,
         false,
         {"auto", "before", "after"}},
        {"bridge",
         "model",
         K::choice,
         "auto",
         "Initial decoder state (auto: backward-first for bahdanau + bidirectional, else mean)",
         &C::bridge,
         0,
         0,
         false,
         {"auto", "backward-first", "mean", "last", "zero"}},
        {"deep_output", "model", K::boolean, "false",
         "Deep output layer (bahdanau; Bahdanau et al. 2015)", &C::deep_output},
        {"deep_output_size", "model", K::integer, "0", "Deep output size (0 = d_s)",
         &C::deep_output_size, 0, 65536},
        {"input_feeding", "model", K::boolean, "false",
         "luong: feed the attentional state to the next step (bahdanau always feeds the context)",
         &C::input_feeding},
        {"layer_norm", "model", K::boolean, "false",
         "Layer-normalised recurrent cells in the encoder and decoder (Ba et al. 2016)",
         &C::layer_norm},
        {"tie_embeddings", "model", K::boolean, "false",
         "Share the target embedding with the output layer", &C::tie_embeddings},
        {"copy_attention", "model", K::boolean, "false",
         "Copy attention (pointer-generator): mix the output with the attention over source words",
         &C::copy_attention},
        // ---- training ----
        {"optimizer",
         "training",
         K::choice,
         "adam",
         "Optimizer",
         &C::optimizer,
         0,
         0,
         false,
         {"adam", "adamw", "sgd"}},
        {"lr", "training", K::real, "0.001", "Learning rate (peak lr for warm-up schedules)",
         &C::lr, 0, 1e3, false},
        {"momentum", "training", K::real, "0", "SGD momentum", &C::momentum, 0, 1, true},
        {"weight_decay", "training", K::real, "0",
         "Weight decay (L2 for sgd/adam, decoupled for adamw)", &C::weight_decay, 0, 10},
        {"schedule",
         "training",
         K::choice,
         "constant",
         "Learning-rate schedule; linear and cosine decay to min_lr exactly when the budget "
         "(max_steps, max_epochs or max_minutes, whichever ends first) is used up",
         &C::schedule,
         0,
         0,
         false,
         {"constant", "warmup", "inverse_sqrt", "step_decay", "plateau", "linear", "cosine"}},
        {"warmup_steps", "training", K::integer, "1000",
         "Linear warm-up steps (warmup, inverse_sqrt, linear, cosine)", &C::warmup_steps, 0, 1e9},
        {"decay_start_epoch", "training", K::integer, "5",
         "step_decay: first epoch with a reduced lr", &C::decay_start_epoch, 0, 1e6},
        {"decay_every", "training", K::integer, "1", "step_decay: epochs between reductions",
         &C::decay_every, 1, 1e6},
        {"decay_factor", "training", K::real, "0.5", "step_decay / plateau: lr multiplier",
         &C::decay_factor, 0, 1, true},
        {"plateau_patience", "training", K::integer, "0",
         "plateau: validations without improvement before decay", &C::plateau_patience, 0, 1e6},
        {"min_lr", "training", K::real, "0",
         "plateau: lower bound of the lr; linear, cosine: the lr at the end of the budget",
         &C::min_lr, 0, 1e3},
        {"clip_norm", "training", K::real, "5", "Clip the global gradient norm to this (0 = off)",
         &C::clip_norm, 0, 1e9},
        {"label_smoothing", "training", K::real, "0", "Label smoothing epsilon",
         &C::label_smoothing, 0, 1, true},
        {"coverage_loss_weight", "training", K::real, "0",
         "Weight of the coverage loss sum_t sum_i min(a_ti, cov_ti) (needs coverage)",
         &C::coverage_loss_weight, 0, 1e3},
        {"guided_alignment_weight", "training", K::real, "0",
         "Weight of the guided alignment loss -sum A log(a + 1e-6) (needs train_alignment)",
         &C::guided_alignment_weight, 0, 1e3},
        {"guided_alignment_decay", "training", K::real, "1",
         "Multiply guided_alignment_weight by this every guided_alignment_decay_steps updates",
         &C::guided_alignment_decay, 0, 1},
        {"guided_alignment_decay_steps", "training", K::integer, "1000",
         "Updates between two guided_alignment_decay steps", &C::guided_alignment_decay_steps, 1,
         1e9},
        {"scheduled_sampling", "training", K::real, "0",
         "Probability of feeding the model's own previous prediction instead of the reference",
         &C::scheduled_sampling, 0, 1},
        {"embedding_dropout", "training", K::real, "0",
         "Dropout on the source and target embedding outputs (train mode only)",
         &C::embedding_dropout, 0, 1, true},
        {"encoder_output_dropout", "training", K::real, "0",
         "Dropout on the encoder states H that attention and the bridge read",
         &C::encoder_output_dropout, 0, 1, true},
        {"decoder_output_dropout", "training", K::real, "0",
         "Dropout on the decoder output o_t (s_t, deep output or Luong's attentional state) before "
         "the generator",
         &C::decoder_output_dropout, 0, 1, true},
        {"attention_dropout", "training", K::real, "0",
         "Dropout on the attention weights before the context sum (not renormalised)",
         &C::attention_dropout, 0, 1, true},
        {"variational_dropout", "training", K::boolean, "false",
         "The embedding, encoder/decoder output and attention dropouts draw one mask per "
         "sentence, reused at every position",
         &C::variational_dropout},
        {"word_dropout", "training", K::real, "0",
         "Replace each source and decoder-input token by <unk> with this probability (training "
         "batches only)",
         &C::word_dropout, 0, 1, true},
        {"precision",
         "training",
         K::choice,
         "fp32",
         "Inputs of the large matrix products: fp32, or bf16 with fp32 accumulation (weights, "
         "optimizer state and loss stay fp32) where this CPU runs bf16 products faster than "
         "fp32 (AMX, or AMD's AVX512-BF16; elsewhere fp32, said at the start), or bf16-always "
         "on any CPU",
         &C::precision,
         0,
         0,
         false,
         {"fp32", "bf16", "bf16-always"}},
        {"max_steps", "training", K::integer, "0", "Stop after this many updates (0 = no limit)",
         &C::max_steps, 0, 2e9},
        {"max_epochs", "training", K::integer, "10", "Stop after this many epochs (0 = no limit)",
         &C::max_epochs, 0, 1e6},
        {"max_minutes", "training", K::real, "0",
         "Stop at the first update boundary after this many minutes of wall time in this "
         "invocation (a --resume starts a new budget; with schedule linear or cosine the "
         "minutes count over the whole run, resumes included), then validate and save as at "
         "the end (0 = no limit)",
         &C::max_minutes, 0, 1e7},
        {"valid_interval", "training", K::integer, "500",
         "Validate every N updates (and at the end)", &C::valid_interval, 1, 2e9},
        {"valid_sample", "training", K::integer, "-1",
         "Distinct dev sources decoded (greedy, or beam valid_beam) for exact match, BLEU, "
         "chrF, each scored against every target the dev set gives it; an evenly spaced "
         "sample when fewer than the dev set (-1 = all of them up to 10,000; 0 = none)",
         &C::valid_sample, -1, 1e9},
        {"valid_max_length", "training", K::integer, "0",
         "Validation output limit in tokens, whatever the source length (0 = 2 x source length "
         "+ 10, at most 512)",
         &C::valid_max_length, 0, 1e6},
        {"valid_metric",
         "training",
         K::choice,
         "loss",
         "What early stopping and best.safetensors go by: dev loss, or BLEU / chrF / exact match "
         "of the decoded valid_sample (bleu on character-tokenized targets uses chrf, with a "
         "warning)",
         &C::valid_metric,
         0,
         0,
         false,
         {"loss", "bleu", "chrf", "exact"}},
        {"valid_beam", "training", K::integer, "1",
         "Validation decoding: 1 = greedy, K > 1 = beam search of size K (length penalty 0.6)",
         &C::valid_beam, 1, 1024},
        {"patience", "training", K::integer, "0",
         "Early stopping: validations without a better valid_metric (0 = off)", &C::patience, 0,
         1e6},
        {"max_skipped_updates", "training", K::integer, "100",
         "Stop with an error after this many consecutive skipped updates (non-finite loss or "
         "gradient), keeping the last checkpoint",
         &C::max_skipped_updates, 1, 1e9},
        {"seed", "training", K::integer, "1",
         "Random seed (initialisation, shuffling, dropout, sampling)", &C::seed, 0, 2147483647},
        {"threads", "training", K::integer, "0",
         "Threads (0 = all cores); results are bit-identical for a fixed count", &C::threads, 0,
         1024},
        {"accumulate", "training", K::integer, "1",
         "Gradient accumulation: micro-batches of batch_size (or batch_tokens) per update; equals "
         "one batch this many times larger",
         &C::accumulate, 1, 1e6},
        {"dist_timeout", "training", K::real, "600",
         "mpirun: seconds a rank waits for the others in a collective before ending the job (0 = "
         "no limit; must exceed validation time)",
         &C::dist_timeout, 0, 1e7},
        {"save_dir", "training", K::text, "model",
         "Directory for model.safetensors, best and last checkpoints", &C::save_dir},
        {"keep_best", "training", K::boolean, "true",
         "Keep the checkpoint with the best valid_metric (best.safetensors)", &C::keep_best},
        {"keep_last", "training", K::boolean, "true",
         "Keep the latest checkpoint (last.safetensors)", &C::keep_last},
        {"checkpoint_interval", "training", K::integer, "0",
         "Write last.safetensors every N updates (0 = at validations only)",
         &C::checkpoint_interval, 0, 2e9},
        {"keep_checkpoints", "training", K::integer, "0",
         "Also write checkpoint-<step>.safetensors whenever last.safetensors is written (and at "
         "the end) and keep the K latest, for `nazar average --last K` (0 = none)",
         &C::keep_checkpoints, 0, 1e6},
        {"average_best", "training", K::integer, "0",
         "Keep the weights of the K best validations by valid_metric (best-<step>.safetensors) "
         "and write their average, validated on the whole dev set, to averaged.safetensors at "
         "the end (0 = off; needs dev data)",
         &C::average_best, 0, 1000},
        {"ema_decay", "training", K::real, "0",
         "Exponential moving average of the weights, decay d (e.g. 0.999; 0 = off): validation "
         "and the saved models use the average",
         &C::ema_decay, 0, 1, true},
        {"metrics_log", "training", K::text, "",
         "Append JSON lines of training/validation metrics here", &C::metrics_log},
        {"log_interval", "training", K::integer, "50",
         "Updates between plain progress lines (non-TTY)", &C::log_interval, 1, 2e9},
        {"progress",
         "training",
         K::choice,
         "auto",
         "Progress line on stderr: auto (in place on a TTY), tty, "
         "plain, none (messages still shown)",
         &C::progress,
         0,
         0,
         false,
         {"auto", "tty", "plain", "none"}},
    };
    // Keys that control the run, not what is trained: they may change on --resume. The training
    // files may move (the trainer checks the pair count is unchanged).
    const std::vector<std::string_view> fixed_in_resume = {
        "tokenizer",    "spm_model",    "spm_vocab_size", "spm_model_type",   "vocab_size",
        "min_freq",     "shared_vocab", "max_length",     "max_length_ratio", "skip_bad_lines",
        "batch_tokens", "batch_size",   "optimizer",      "schedule",         "seed",
        "ema_decay",    "valid_metric"};
    for (auto& k : t)
        if (std::string_view(k.section) == "model" ||
            std::find(fixed_in_resume.begin(), fixed_in_resume.end(), k.key) !=
                fixed_in_resume.end())
            k.resumable = false;
    return t;
}

std::string normalize(std::string_view key) {
    std::string s(key);
    while (!s.empty() && s.front() == '-') s.erase(s.begin());
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

std::string range_text(const ConfigKey& k) {
    auto num = [&](double v) {
        return k.type == KeyType::integer ? fmt::format("{}", static_cast<int64_t>(v))
                                          : fmt::format("{}", v);
    };
    return fmt::format("[{}, {}{}", num(k.min), num(k.max), k.max_open ? ")" : "]");
}

std::string join(const std::vector<std::string_view>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::string(v[i]);
    return s;
}

std::string closest(std::string_view word, const std::vector<std::string_view>& options) {
    std::string best;
    std::size_t best_d = std::numeric_limits<std::size_t>::max();
    for (auto o : options) {
        const std::size_t d = edit_distance(word, o);
        if (d < best_d) best_d = d, best = std::string(o);
    }
    const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
    return best_d <= limit ? best : std::string();
}

[[noreturn]] void usage(std::string_view where, std::string msg) {
    std::replace_if(
        msg.begin(), msg.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');  // one line
    throw UsageError(where.empty() ? msg : fmt::format("{}: {}", where, msg));
}

bool parse_bool(std::string_view s, bool& out) {
    std::string l(s);
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    if (l == "true" || l == "yes" || l == "on" || l == "1") return out = true, true;
    if (l == "false" || l == "no" || l == "off" || l == "0") return out = false, true;
    return false;
}

}  // namespace

TrainConfig TrainConfig::defaults() {
    TrainConfig c;
    for (const auto& k : config_keys()) set_config_value(c, k.key, k.def, "default");
    return c;
}

const std::vector<ConfigKey>& config_keys() {
    static const std::vector<ConfigKey> table = make_table();
    return table;
}

const ConfigKey* find_config_key(std::string_view key) {
    const std::string n = normalize(key);
    for (const auto& k : config_keys())
        if (n == k.key) return &k;
    return nullptr;
}

std::string flag_name(const ConfigKey& k) {
    std::string s = k.key;
    std::replace(s.begin(), s.end(), '_', '-');
    return "--" + s;
}

std::string describe_key(const ConfigKey& k) {
    const bool ranged = (k.type == KeyType::integer || k.type == KeyType::real) && k.min < k.max;
    return fmt::format(
        "{}{}{} (default: {})", k.help,
        k.type == KeyType::choice ? fmt::format(" {{{}}}", join(k.choices)) : std::string(),
        ranged ? fmt::format(" {}", range_text(k)) : std::string(), *k.def ? k.def : "none");
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min(
                {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string suggest_key(std::string_view key) {
    std::vector<std::string_view> names;
    for (const auto& k : config_keys()) names.push_back(k.key);
    return closest(normalize(key), names);
}

void set_config_value(TrainConfig& cfg, std::string_view key, std::string_view value,
                      std::string_view where) {
    const ConfigKey* k = find_config_key(key);
    if (!k) {
        const std::string s = suggest_key(key);
        usage(where,
              fmt::format("unknown key '{}'{}", excerpt(normalize(key)),
                          s.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", s)));
    }
    const std::string v(value);
    const std::string shown = excerpt(v);  // messages quote at most kMaxEcho bytes
    // Values end up in checkpoint JSON ("train.config"), which must be UTF-8.
    if (!utf8::is_valid(v)) usage(where, fmt::format("{}: the value is not valid UTF-8", k->key));
    auto range = [&](double x) {
        if (k->min < k->max && (x < k->min || x > k->max || (k->max_open && x >= k->max)))
            usage(where, fmt::format("{}: {} is out of range {}", k->key, shown, range_text(*k)));
    };
    switch (k->type) {
        case KeyType::integer: {
            long long x = 0;
            const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (v.empty() || ec != std::errc() || p != v.data() + v.size())
                usage(where, fmt::format("{}: expected an integer, got '{}'", k->key, shown));
            range(static_cast<double>(x));
            cfg.*std::get<int C::*>(k->field) = static_cast<int>(x);
            break;
        }
        case KeyType::real: {
            char* end = nullptr;
            errno = 0;
            const double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
            if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || !std::isfinite(x))
                usage(where, fmt::format("{}: expected a number, got '{}'", k->key, shown));
            range(x);
            cfg.*std::get<double C::*>(k->field) = x;
            break;
        }
        case KeyType::boolean: {
            bool b = false;
            if (!parse_bool(v, b))
                usage(where, fmt::format("{}: expected true or false, got '{}'", k->key, shown));
            cfg.*std::get<bool C::*>(k->field) = b;
            break;
        }
        case KeyType::choice: {
            if (std::find(k->choices.begin(), k->choices.end(), v) == k->choices.end()) {
                const std::string s = closest(v, k->choices);
                usage(where,
                      fmt::format(
                          "{}: '{}' is not one of {}{}", k->key, shown, join(k->choices),
                          s.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", s)));
            }
            cfg.*std::get<std::string C::*>(k->field) = v;
            break;
        }
        case KeyType::text:
        case KeyType::file:
            cfg.*std::get<std::string C::*>(k->field) = v;
            break;
    }
}

std::string get_config_value(const TrainConfig& cfg, const ConfigKey& k) {
    return std::visit(
        [&](auto field) -> std::string {
            const auto& v = cfg.*field;
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>)
                return v ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::string>)
                return v;
            else if constexpr (std::is_same_v<T, double>)
                return fmt::format("{}", v);  // shortest round-trip
            else
                return fmt::format("{}", v);
        },
        k.field);
}

namespace {
// The number of YAML documents in `text`: a "---" marker line at column 0 after content, or
// content after a "..." end marker, starts another. Block scalars are indented, so a marker
// at column 0 is always one.
int yaml_documents(std::string_view text) {
    int docs = 0;
    bool content = false, ended = false;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const bool marker =
            line.rfind("---", 0) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
        if (marker) {
            if (content || docs == 0) ++docs;
            content = false;
            ended = false;
            std::string_view rest = line.substr(3);
            if (rest.find_first_not_of(" \t") != std::string_view::npos &&
                rest.substr(rest.find_first_not_of(" \t")).front() != '#')
                content = true;
            continue;
        }
        if (line == "...") {
            ended = true;
            continue;
        }
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#' || line[0] == '%') continue;
        if (!content && (docs == 0 || ended)) ++docs;
        content = true;
        ended = false;
    }
    return docs;
}
}  // namespace

void apply_yaml_config(TrainConfig& cfg, const std::string& yaml_text, const std::string& source) {
    try {
        check_nesting(yaml_text, source, TextSyntax::yaml);  // before yaml-cpp recurses
    } catch (const Error& e) {
        throw UsageError(e.what());  // the user's own configuration
    }
    YAML::Node root;
    // A second document is found in the text, not with YAML::LoadAll: yaml-cpp 0.7's LoadAll
    // loops forever (allocating) on some malformed flow mappings that Load refuses at once.
    if (const int docs = yaml_documents(yaml_text); docs > 1)
        usage(source, fmt::format("holds {} YAML documents (separated by '---'); put every key "
                                  "in one document",
                                  docs));
    try {
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
        usage(source, fmt::format("invalid YAML at line {}: {}", e.mark.line + 1, e.msg));
    }
    if (root.IsNull()) return;  // an empty file
    if (!root.IsMap()) usage(source, "expected a mapping of keys to values at the top level");
    auto scalar = [&](const std::string& key, const YAML::Node& v) {
        if (v.IsNull()) usage(source, fmt::format("{}: needs a value", key));
        if (!v.IsScalar())
            usage(source, fmt::format("{}: expected a single value, got a {}", key,
                                      v.IsSequence() ? "list" : "mapping"));
        set_config_value(cfg, key, v.Scalar(), source);
    };
    // yaml-cpp keeps every pair of a mapping, so a repeated key would silently win over the
    // first; a key is also repeated when given flat and in its section, or as hidden-size and
    // hidden_size.
    std::map<std::string, int> line_of;  // normalized key (or section) -> 1-based line
    auto once = [&](const std::string& key, const YAML::Node& node) {
        const ConfigKey* k = find_config_key(key);
        const std::string name = k ? std::string(k->key) : key;
        const int line = node.Mark().line + 1;
        const auto [it, fresh] = line_of.emplace(name, line);
        if (!fresh)
            usage(source,
                  fmt::format("key '{}' is set twice (lines {} and {})", name, it->second, line));
    };
    for (const auto& kv : root) {
        if (!kv.first.IsScalar())
            usage(source, "keys must be names, got a list or mapping as a key");
        const std::string key = kv.first.as<std::string>();
        const YAML::Node& v = kv.second;
        once(key, kv.first);
        if ((key == "data" || key == "model" || key == "training") && v.IsMap()) {
            for (const auto& inner : v) {
                if (!inner.first.IsScalar())
                    usage(source,
                          fmt::format("{}: keys must be names, got a list or mapping", key));
                const std::string k = inner.first.as<std::string>();
                if (const ConfigKey* ck = find_config_key(k); ck && key != ck->section)
                    usage(source, fmt::format("key '{}' belongs in section '{}', not '{}'", k,
                                              ck->section, key));
                once(k, inner.first);
                scalar(k, inner.second);
            }
            continue;
        }
        scalar(key, v);
    }
}

void apply_yaml_file(TrainConfig& cfg, const std::string& path) {
    if (const std::string why = file_problem(path, true); !why.empty())
        usage("--config", fmt::format("file '{}' {}", path, why));
    std::string text;
    try {
        text = read_file(path, kMaxConfigBytes);
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
    apply_yaml_config(cfg, text, path);
}

std::string config_to_json(const TrainConfig& cfg) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& k : config_keys()) j[k.key] = get_config_value(cfg, k);
    return j.dump();
}

TrainConfig config_from_json(const std::string& json, const std::string& source) {
    check_nesting(json, source + ": stored training configuration", TextSyntax::json);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json);
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("{}: stored training configuration is not valid JSON: {}", source,
                                excerpt(e.what())));
    }
    NZ_CHECK_INPUT(j.is_object(), "{}: stored training configuration is not a JSON object", source);
    TrainConfig cfg = TrainConfig::defaults();
    for (const auto& [key, value] : j.items()) {
        NZ_CHECK_INPUT(value.is_string(), "{}: stored configuration key '{}' is not a string",
                       source, key);
        set_config_value(cfg, key, value.get<std::string>(), source);
    }
    return cfg;
}

std::vector<std::string> changed_keys(const TrainConfig& a, const TrainConfig& b) {
    std::vector<std::string> out;
    for (const auto& k : config_keys())
        if (get_config_value(a, k) != get_config_value(b, k)) out.emplace_back(k.key);
    return out;
}

// The losses on the attention: coverage needs a coverage model; guided alignment's weight and
// file go together (docs/training.md "Guided alignment").
static void validate_attention_losses(const TrainConfig& cfg) {
    if (cfg.coverage_loss_weight > 0 && !cfg.coverage)
        usage("", fmt::format("coverage_loss_weight {} needs coverage: true",
                              cfg.coverage_loss_weight));
    if (cfg.guided_alignment_weight > 0 && cfg.train_alignment.empty())
        usage("", fmt::format("guided_alignment_weight {} needs train_alignment (a Pharaoh file of "
                              "the training pairs' links)",
                              cfg.guided_alignment_weight));
    if (!cfg.train_alignment.empty() && cfg.guided_alignment_weight == 0)
        usage("",
              "train_alignment is set but guided_alignment_weight is 0: set a weight > 0 "
              "(e.g. 1), or drop train_alignment");
    if (!cfg.dev_alignment.empty() && cfg.dev.empty() && cfg.dev_src.empty())
        usage("", "dev_alignment is set but there is no dev set (dev, or dev_src and dev_tgt)");
    if (cfg.guided_alignment_decay <= 0)
        usage("", fmt::format("guided_alignment_decay must be in (0, 1], got {}",
                              cfg.guided_alignment_decay));
}

// Data: exactly one training set; dev optional but complete.
static void validate_data_sets(const TrainConfig& cfg) {
    const bool tsv = !cfg.train.empty(), two = !cfg.train_src.empty() || !cfg.train_tgt.empty();
    if (!tsv && !two) usage("", "no training data: set train (a TSV) or train_src and train_tgt");
    if (tsv && two) usage("", "set either train or train_src/train_tgt, not both");
    if (two && (cfg.train_src.empty() || cfg.train_tgt.empty()))
        usage("", fmt::format(
                      "train_src and train_tgt go together (train_src = '{}', train_tgt = '{}')",
                      cfg.train_src, cfg.train_tgt));
    if (!cfg.dev.empty() && (!cfg.dev_src.empty() || !cfg.dev_tgt.empty()))
        usage("", "set either dev or dev_src/dev_tgt, not both");
    if (cfg.dev_src.empty() != cfg.dev_tgt.empty())
        usage("", fmt::format("dev_src and dev_tgt go together (dev_src = '{}', dev_tgt = '{}')",
                              cfg.dev_src, cfg.dev_tgt));
    if (cfg.average_best > 0 && cfg.dev.empty() && cfg.dev_src.empty())
        usage("", fmt::format("average_best {} needs a dev set (dev, or dev_src and dev_tgt): it "
                              "keeps the best validations",
                              cfg.average_best));
}

namespace {
// Monotonic attention and MoChA: what they combine with.
void validate_monotonic(const TrainConfig& cfg) {
    if (cfg.monotonic && cfg.attention_local != "global")
        usage("", fmt::format("monotonic attention reads the whole source left to right: it "
                              "needs attention_local: global, got '{}'",
                              cfg.attention_local));
    if (cfg.mocha_chunk > 0 && !cfg.monotonic)
        usage("", fmt::format("mocha_chunk {} needs monotonic attention (MoChA attends to the "
                              "chunk ending where the monotonic reader stops); set monotonic: true",
                              cfg.mocha_chunk));
    if (cfg.mocha_chunk > 0 && cfg.attention != "additive" && cfg.attention != "concat")
        usage("", fmt::format("MoChA needs attention: additive or concat (its chunk energy shares "
                              "the score's hidden layer), got '{}'",
                              cfg.attention));
    if (cfg.monotonic && cfg.coverage)
        usage("", "monotonic attention and coverage cannot be combined; choose one");
    if (cfg.monotonic && cfg.copy_attention)
        usage("",
              "monotonic attention and copy_attention cannot be combined: copying reads the "
              "attention weights as a distribution, and monotonic weights may sum to less "
              "than 1");
}
}  // namespace

void validate_config(const TrainConfig& cfg) {
    parse_choices(cfg);  // every choice key known (choices.h), also for a config built in code
    validate_data_sets(cfg);
    for (const auto& k : config_keys()) {
        if (k.type != KeyType::file) continue;
        const std::string& path = cfg.*std::get<std::string C::*>(k.field);
        if (path.empty() || path == "-") continue;
        if (const std::string why = file_problem(path, true); !why.empty())
            usage("", fmt::format("{}: file '{}' {}", k.key, path, why));
    }
    // The metrics log is appended to: never to one of the inputs (device and inode compared).
    if (!cfg.metrics_log.empty()) {
        struct stat log_st {};
        if (::stat(cfg.metrics_log.c_str(), &log_st) == 0 && S_ISREG(log_st.st_mode))
            for (const auto& k : config_keys()) {
                if (k.type != KeyType::file) continue;
                const std::string& path = cfg.*std::get<std::string C::*>(k.field);
                struct stat in {};
                if (!path.empty() && ::stat(path.c_str(), &in) == 0 && in.st_dev == log_st.st_dev &&
                    in.st_ino == log_st.st_ino)
                    usage("", fmt::format("metrics_log '{}' is the same file as {} '{}': the log "
                                          "would be appended to it",
                                          cfg.metrics_log, k.key, path));
            }
    }
    // An empty value is empty (an unset shell variable, --save-dir "$DIR"), never a default.
    if (cfg.save_dir.empty())
        usage("", "save_dir is empty: name a directory for the model ('.' = the current one)");
    if (!cfg.spm_model.empty() && cfg.tokenizer != "spm")
        usage("", fmt::format("spm_model is set but tokenizer is '{}' (use tokenizer: spm)",
                              cfg.tokenizer));
    if (cfg.max_length_ratio != 0 && cfg.max_length_ratio < 1)
        usage("", fmt::format("max_length_ratio must be 0 (off) or >= 1, got {}",
                              cfg.max_length_ratio));
    if (cfg.vocab_size != 0 && cfg.vocab_size < 5)
        usage("",
              fmt::format("vocab_size must be 0 (no limit) or >= 5 (4 specials + 1 piece), got {}",
                          cfg.vocab_size));
    if (cfg.save_dir.empty()) usage("", "save_dir is empty: name the run's directory");
    if (cfg.valid_metric != "loss" && cfg.valid_sample == 0)
        usage(
            "",
            fmt::format(
                "valid_metric {} scores decoded dev sentences: set valid_sample to -1 (all) or > 0 "
                "(or valid_metric: loss)",
                cfg.valid_metric));
    if (cfg.max_steps == 0 && cfg.max_epochs == 0 && cfg.max_minutes == 0)
        usage("", "max_steps, max_epochs and max_minutes are all 0: training would never stop");
    if ((cfg.schedule == "linear" || cfg.schedule == "cosine") && cfg.min_lr > cfg.lr)
        usage("", fmt::format("schedule {} decays from lr to min_lr, but min_lr {} > lr {}",
                              cfg.schedule, cfg.min_lr, cfg.lr));
    // Model sizes (docs/spec.md §4: dot needs d_s = d_h).
    const int d_h = cfg.hidden_size * (cfg.bidirectional ? 2 : 1);
    const int d_s = cfg.decoder_hidden_size ? cfg.decoder_hidden_size : d_h;
    if (cfg.attention == "dot" && d_s != d_h)
        usage(
            "",
            fmt::format(
                "attention 'dot' needs d_s == d_h, got d_s = {} (decoder_hidden_size) and d_h = {} "
                "(hidden_size {}{}); use attention: general, or make the sizes equal",
                d_s, d_h, cfg.hidden_size, cfg.bidirectional ? " x 2, bidirectional" : ""));
    if (cfg.attention_scale != "none" && cfg.attention != "dot" && cfg.attention != "general")
        usage("", fmt::format("attention_scale '{}' applies to dot/general scores only, not '{}'",
                              cfg.attention_scale, cfg.attention));
    if (cfg.coverage && cfg.attention != "additive" && cfg.attention != "concat")
        usage("", fmt::format("coverage needs attention: additive or concat (the coverage term "
                              "enters the score's hidden layer), got '{}'",
                              cfg.attention));
    validate_monotonic(cfg);
    validate_attention_losses(cfg);
}

}  // namespace nazar
