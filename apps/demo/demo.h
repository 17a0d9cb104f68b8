// The embedded demo (`nazar demo`): a built-in task (tasks.h) trained in memory with nazar's
// Trainer (nazar/train/trainer.h: the pairs as a TrainingSource, no data files), evaluated by
// greedy decoding, with the attention of every output token.
//
// Training is the Trainer's update (demo_train_config): bucketed batches of batch_size pairs
// shuffled per epoch from the seed, teacher forcing, mean cross-entropy per token, the global
// gradient norm clipped to `clip`, Adam with lr. Every valid_interval steps: greedy exact match
// on the dev set (valid_metric exact); the lr halves after a validation without a better dev
// loss (schedule plateau, patience 0); training stops when the exact match reaches stop_exact,
// at max_steps, or after max_seconds of training time (validation excluded; 0 = no limit). Same
// seed and thread count ⇒ the same model, unless max_seconds cuts the run.
//
// Models (attention names as `nazar demo --attention`): char-level, a bidirectional GRU encoder
// (hidden per direction; C = 2·hidden) and a GRU decoder with H = C, so dot attention applies:
//   bahdanau             Bahdanau decoder, additive score, attention before the RNN step
//   dot|general|concat   Luong decoder (global), attention after the RNN step, no input feeding
//   local-m|local-p      Luong decoder, general score, window D = `window`
#pragma once

#include "apps/demo/tasks.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/seq2seq.h"
#include "nazar/train/train_config.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace nazar::demo {

struct DemoConfig {
    Task task = Task::dates;
    std::string attention = "bahdanau";
    int n_train = 20000, n_dev = 400, n_test = 1000;
    int max_length = 100;  // reversal: longest source
    int embedding_size = 32;
    int hidden_size = 64;  // encoder, per direction; decoder H = 2 · hidden_size
    int window = 10;       // local D
    int batch_size = 64;
    int max_steps = 6000;
    double max_seconds = 0;  // training-time budget; 0 = none
    double lr = 4e-3;
    double clip = 5.0;
    int valid_interval = 250;
    double stop_exact = 99.5;  // stop when dev exact match (percent) reaches this
    uint64_t seed = 1;
};

const std::vector<std::string>&
demo_attention_names();  // bahdanau dot general concat local-m local-p
ModelConfig demo_model_config(const DemoConfig& cfg, int src_vocab_size, int tgt_vocab_size);
// The Trainer's configuration of the demo's run, writing its files into save_dir; its model is
// demo_model_config's.
TrainConfig demo_train_config(const DemoConfig& cfg, const std::string& save_dir);

struct DemoModel {
    std::unique_ptr<Seq2Seq> model;
    Vocab src_vocab, tgt_vocab;
    Tokenizer tokenizer = Tokenizer::character();
    std::vector<int32_t> encode_source(std::string_view text) const;
    std::vector<int32_t> encode_target(std::string_view text) const;
    std::map<std::string, std::string> metadata() const;  // vocabularies + tokenizers (model file)
};
// Vocabularies from the characters of every set (sorted code points: deterministic).
DemoModel build_demo_model(const DemoConfig& cfg, const TaskData& data);

struct TrainProgress {
    int step = 0;
    double seconds = 0;     // training time so far (validation excluded)
    double loss = 0;        // mean per token over the last valid_interval steps
    double dev_exact = -1;  // percent; -1 when this report is not a validation
    double lr = 0;
};
struct TrainReport {
    int steps = 0;
    double seconds = 0;  // training time (validation excluded)
    double ms_per_step = 0;
    double final_loss = 0;
    double dev_exact = 0;  // the last validation
    int64_t parameters = 0;
    bool stopped_by_time = false;
};
TrainReport train_demo(DemoModel& m, const DemoConfig& cfg, const TaskData& data,
                       const std::function<void(const TrainProgress&)>& on_progress = {});

struct Decoded {
    std::string source, reference, hypothesis;
    std::vector<std::string> source_pieces;  // S_b
    std::vector<std::string>
        output_pieces;  // n: emitted pieces, the final "</s>" included when finished
    Tensor attention;   // (n, S_b)
    bool correct = false;
};
struct EvalReport {
    std::vector<Decoded> decoded;  // in the order of the examples
    double exact = 0;              // percent
    double seconds = 0;            // decoding wall time
    double us_per_step = 0;        // per batched decoder step (batch_size sentences)
    int64_t steps = 0;
};
// Greedy decoding in batches of batch_size (sentences sorted by length inside the call).
EvalReport evaluate(DemoModel& m, std::span<const Example> examples, int batch_size = 100);

// Exact match (percent) by source length bucket: buckets are [edges[k], edges[k+1]).
struct BucketAccuracy {
    int lo = 0, hi = 0, n = 0;
    double exact = 0;
};
std::vector<BucketAccuracy> accuracy_by_length(const EvalReport& r, std::span<const int> edges);

// Dates: the share (percent) of month and day output characters (ISO positions 5, 6, 8, 9) whose
// hard alignment (argmax of the attention row, lowest index on ties) lies inside the source span
// that spells the month / day, over the correctly translated examples. `checked` gets the count.
double date_alignment_accuracy(const EvalReport& r, std::span<const Example> examples,
                               int64_t* checked = nullptr);

}  // namespace nazar::demo
