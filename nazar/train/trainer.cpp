// The training loop (trainer.h).
#include "nazar/train/trainer.h"

#include "nazar/core/check.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/threads.h"
#include "nazar/models/model_file.h"
#include "nazar/train/choices.h"
#include "nazar/train/clip.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace nazar {
namespace {

constexpr uint64_t kTrainRngStream = 7;  // dropout + scheduled sampling; init uses Seq2Seq's own
constexpr const char* kWorldSizeKey = "train.world_size";  // ranks that wrote a checkpoint

// Resuming needs the same global batch (accumulate · ranks), else the batch plan and position
// mean other batches: refuse, naming a setting that continues exactly when there is one.
void check_resume_split(const Checkpoint& ck, const TrainConfig& cfg, int ranks) {
    const int stored_ranks =
        ck.file.has_meta(kWorldSizeKey) ? std::stoi(ck.file.meta(kWorldSizeKey)) : 1;
    const int64_t before = int64_t{ck.config.accumulate} * stored_ranks,
                  now = int64_t{cfg.accumulate} * ranks;
    if (before == now) return;
    throw UsageError(fmt::format(
        "--resume: the checkpoint was written by {} rank(s) x accumulate {} (global batch = {} "
        "batches), this run is {} rank(s) x accumulate {} ({}): the batch plan and position "
        "would mean other batches; {}",
        stored_ranks, ck.config.accumulate, before, ranks, cfg.accumulate, now,
        before % ranks == 0
            ? fmt::format("continue exactly with --accumulate {} on {} rank(s)", before / ranks,
                          ranks)
            : fmt::format("use ranks x accumulate = {}, or start a new run", before)));
}

// Every choice below comes from parse_choices (choices.h): an unknown name was already a
// UsageError, so the switches are exhaustive and nothing falls back to a default.
LrSchedule make_schedule(const TrainConfig& c, ScheduleKind kind) {
    switch (kind) {
        case ScheduleKind::warmup:
            return WarmupLr{.lr = c.lr, .warmup_steps = c.warmup_steps};
        case ScheduleKind::inverse_sqrt:
            return WarmupLr{
                .lr = c.lr, .warmup_steps = c.warmup_steps, .decay = WarmupLr::Decay::inverse_sqrt};
        case ScheduleKind::step_decay:
            return StepDecayLr{.lr = c.lr,
                               .start_epoch = c.decay_start_epoch,
                               .every = c.decay_every,
                               .factor = c.decay_factor};
        case ScheduleKind::plateau:
            return PlateauLr{.lr = c.lr,
                             .factor = c.decay_factor,
                             .patience = c.plateau_patience,
                             .min_lr = c.min_lr};
        case ScheduleKind::linear:
        case ScheduleKind::cosine:
            return BudgetLr{.lr = c.lr,
                            .min_lr = c.min_lr,
                            .warmup_steps = c.warmup_steps,
                            .shape = kind == ScheduleKind::linear ? BudgetLr::Shape::linear
                                                                  : BudgetLr::Shape::cosine};
        case ScheduleKind::constant:
            break;
    }
    return ConstantLr{.lr = c.lr};
}

std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& c, OptimKind kind, ParamList params) {
    const AdamOptions a{.lr = c.lr, .weight_decay = c.weight_decay};
    switch (kind) {
        case OptimKind::sgd:
            return std::make_unique<Optimizer>(Optimizer::sgd(
                std::move(params),
                {.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay}));
        case OptimKind::adamw:
            return std::make_unique<Optimizer>(Optimizer::adamw(std::move(params), a));
        case OptimKind::adam:
            break;
    }
    return std::make_unique<Optimizer>(Optimizer::adam(std::move(params), a));
}

CorpusFiles files_of(const std::string& tsv, const std::string& src, const std::string& tgt) {
    return tsv.empty() ? CorpusFiles{.src = src, .tgt = tgt} : CorpusFiles{.tsv = tsv};
}

std::string meta_or_fail(const SafeTensors& st, const char* key) {
    NZ_CHECK_INPUT(st.has_meta(key), "{}: checkpoint lacks metadata '{}'", st.source, key);
    return st.meta(key);
}

}  // namespace

Batch batch_from_ids(std::span<const std::vector<int32_t>> src,
                     std::span<const std::vector<int32_t>> tgt) {
    NZ_CHECK(tgt.empty() || tgt.size() == src.size(), "batch_from_ids: {} sources but {} targets",
             src.size(), tgt.size());
    Batch b;
    b.B = static_cast<int>(src.size());
    for (const auto& s : src) b.S = std::max(b.S, static_cast<int>(s.size()));
    for (const auto& t : tgt) b.T = std::max(b.T, static_cast<int>(t.size()) + 1);
    b.src.assign(static_cast<std::size_t>(b.B) * b.S, Vocab::pad);
    b.tgt_in.assign(static_cast<std::size_t>(b.B) * b.T, Vocab::pad);
    b.tgt_out.assign(static_cast<std::size_t>(b.B) * b.T, Vocab::pad);
    b.src_lengths.resize(b.B);
    b.tgt_lengths.assign(b.B, 0);
    b.index.resize(b.B);
    for (int i = 0; i < b.B; ++i) {
        std::copy(src[i].begin(), src[i].end(),
                  b.src.begin() + static_cast<std::ptrdiff_t>(i) * b.S);
        b.src_lengths[i] = static_cast<int>(src[i].size());
        b.index[i] = i;
        if (tgt.empty()) continue;
        const auto& t = tgt[i];
        const std::size_t row = static_cast<std::size_t>(i) * b.T;
        b.tgt_in[row] = Vocab::bos;
        for (std::size_t k = 0; k < t.size(); ++k) {
            b.tgt_in[row + k + 1] = t[k];
            b.tgt_out[row + k] = t[k];
        }
        b.tgt_out[row + t.size()] = Vocab::eos;
        b.tgt_lengths[i] = static_cast<int>(t.size()) + 1;
    }
    return b;
}

// The training data, its tokenizers and vocabularies (built, or the checkpoint's on resume), and
// the dev set; returns the checkpoint being resumed (null on a fresh start).
std::unique_ptr<Checkpoint> Trainer::prepare_data(const std::string& resume,
                                                  const TrainChoices& choices) {
    const CorpusFiles train_files = files_of(cfg_.train, cfg_.train_src, cfg_.train_tgt);
    LoadOptions train_load{
        .filter = {.max_length = cfg_.max_length,
                   .max_length_ratio = static_cast<float>(cfg_.max_length_ratio)},
        .skip_bad_lines = cfg_.skip_bad_lines};
    std::vector<int64_t> kept_lines;  // guided alignment: each kept pair's line
    if (!cfg_.train_alignment.empty()) train_load.kept_lines = &kept_lines;
    std::unique_ptr<Checkpoint> ck;
    if (resume.empty()) {
        const TokenizerOptions tok{
            .kind = choices.tokenizer,
            .spm_model = cfg_.spm_model,
            .spm = {.vocab_size = cfg_.spm_vocab_size, .model_type = choices.spm_model_type}};
        const VocabOptions voc{.max_size = cfg_.vocab_size, .min_freq = cfg_.min_freq};
        data_ = prepare_training_data(train_files, {.src_tokenizer = tok,
                                                    .tgt_tokenizer = tok,
                                                    .shared_vocab = cfg_.shared_vocab,
                                                    .src_vocab = voc,
                                                    .tgt_vocab = voc,
                                                    .load = train_load});
        if (cfg_.copy_attention) {  // again with the vocabularies: the extended ids (strings)
            train_load.copy_ids = true;
            train_load.print_summary = false;
            data_.corpus = load_corpus(train_files, data_.src_tokenizer, data_.tgt_tokenizer,
                                       data_.src_vocab, data_.tgt_vocab, train_load);
        }
    } else {
        // The checkpoint's tokenizers and vocabularies: the same ids as the interrupted run, and
        // no SentencePiece retraining.
        ck = std::make_unique<Checkpoint>(load_checkpoint(resolve_checkpoint(resume)));
        train_load.copy_ids = cfg_.copy_attention;
        const SafeTensors& st = ck->file;
        data_.src_tokenizer = Tokenizer::from_string(meta_or_fail(st, kSrcTokenizerKey));
        data_.tgt_tokenizer = Tokenizer::from_string(meta_or_fail(st, kTgtTokenizerKey));
        data_.src_vocab = Vocab::from_json(meta_or_fail(st, kSrcVocabKey));
        data_.tgt_vocab = Vocab::from_json(meta_or_fail(st, kTgtVocabKey));
        data_.corpus = load_corpus(train_files, data_.src_tokenizer, data_.tgt_tokenizer,
                                   data_.src_vocab, data_.tgt_vocab, train_load, &data_.summary);
        const std::string pairs = meta_or_fail(st, "train.corpus_pairs");
        NZ_CHECK_INPUT(
            std::to_string(data_.corpus.size()) == pairs,
            "--resume: the training data changed: {} pairs now, {} when the checkpoint was written",
            data_.corpus.size(), pairs);
    }
    if (!cfg_.train_alignment.empty())
        load_alignments(kept_lines, train_files.name(), data_.summary.read);
    if (!cfg_.dev.empty() || !cfg_.dev_src.empty()) {
        const CorpusFiles dev_files = files_of(cfg_.dev, cfg_.dev_src, cfg_.dev_tgt);
        std::vector<int64_t> dev_lines;
        LoadSummary dev_summary;
        dev_ = load_corpus(dev_files, data_.src_tokenizer, data_.tgt_tokenizer, data_.src_vocab,
                           data_.tgt_vocab,
                           {.skip_bad_lines = cfg_.skip_bad_lines,
                            .tgt_text = &dev_text_,
                            .src_text = &dev_src_text_,
                            .copy_ids = cfg_.copy_attention,
                            .kept_lines = &dev_lines},
                           &dev_summary);
        has_dev_ = dev_.size() > 0;
        group_dev_sources();
        if (!cfg_.dev_alignment.empty())
            dev_alignments_ = CorpusAlignments::read(cfg_.dev_alignment, dev_, dev_lines,
                                                     dev_summary.read, dev_files.name());
    }
    return ck;
}

// A resumed run's state: optimizer, schedule, counters, RNG and batch position (after the weights,
// which model_from_safetensors read).
void Trainer::restore(const Checkpoint& ck) {
    optim_->load_state(ck.file);
    schedule_->load_state(ck.file);
    restore_seconds(ck.file);
    state_ = ck.state;
    best_loss_ = ck.best_loss;
    rng_.set_state(state_.rng);
    batcher_->set_position(state_.position);
    if (ck.threads != num_threads() && comm_->rank() == 0)
        fmt::print(stderr,
                   "warning: the checkpoint was written with {} threads, this run uses {}: results "
                   "will not be bit-identical to an uninterrupted run\n",
                   ck.threads, num_threads());
}

Trainer::Trainer(TrainConfig cfg, const std::string& resume, TrainerHooks hooks)
    : Trainer(std::move(cfg), resume, nullptr, std::move(hooks)) {}

Trainer::Trainer(TrainConfig cfg, TrainingSource data, TrainerHooks hooks)
    : Trainer(std::move(cfg), "", std::make_unique<TrainingSource>(std::move(data)),
              std::move(hooks)) {}

Trainer::Trainer(TrainConfig cfg, const std::string& resume, std::unique_ptr<TrainingSource> data,
                 TrainerHooks hooks)
    : cfg_(std::move(cfg)),
      hooks_(std::move(hooks)),
      comm_(&dist::world()),
      rng_(static_cast<uint64_t>(cfg_.seed), kTrainRngStream) {
    data ? check_in_memory_config(cfg_) : validate_config(cfg_);
    nazar::validate(model_config_from(cfg_, 5, 5));  // warnings are check_config()'s to print
    const TrainChoices choices = parse_choices(cfg_);
    const std::unique_ptr<Checkpoint> ck =
        data ? take_data(std::move(*data)) : prepare_data(resume, choices);  // data_, dev_
    if (ck) {
        model_ = std::move(model_from_safetensors(ck->file).model);
    } else {
        model_ = std::make_unique<Seq2Seq>(
            model_config_from(cfg_, data_.src_vocab.size(), data_.tgt_vocab.size()),
            static_cast<uint64_t>(cfg_.seed));
    }
    pass_ = std::make_unique<TrainPass>(*model_);
    params_ = model_->parameters();
    optim_ = make_optimizer(cfg_, choices.optimizer, params_);
    schedule_ = std::make_unique<LrSchedule>(make_schedule(cfg_, choices.schedule));
    comm_->set_timeout(cfg_.dist_timeout);
    parts_ = cfg_.accumulate * comm_->size();
    grad_sum_ = std::make_unique<dist::GradientSum>(*comm_);
    const int64_t global = int64_t{cfg_.batch_tokens > 0 ? cfg_.batch_tokens : cfg_.batch_size} *
                           parts_;  // the global batch (docs/distributed.md)
    NZ_CHECK_INPUT(global <= std::numeric_limits<int>::max(),
                   "{} x accumulate {} x {} rank(s) = {} is too large a global batch",
                   cfg_.batch_tokens > 0 ? "batch_tokens" : "batch_size", cfg_.accumulate,
                   comm_->size(), global);
    batcher_ = std::make_unique<Batcher>(
        data_.corpus,
        BatchOptions{.batch_tokens = cfg_.batch_tokens > 0 ? static_cast<int>(global) : 0,
                     .batch_size = cfg_.batch_tokens > 0 ? 0 : static_cast<int>(global),
                     .seed = static_cast<uint64_t>(cfg_.seed)});
    if (ck) check_resume_split(*ck, cfg_, comm_->size());
    dist::broadcast_weights(*comm_, params_);  // identical from the seed; made certain
    if (ck) restore(*ck);
    if (cfg_.ema_decay > 0) {
        ema_ = std::make_unique<Ema>(params_, cfg_.ema_decay);
        if (ck) ema_->load_raw(ck->file, ck->file.source);
    }
    metric_ = choices.valid_metric;
    precision_ = choices.precision;
    if (cfg_.precision == "bf16" && precision_ == GemmPrecision::fp32 && comm_->rank() == 0)
        fmt::print(stderr,
                   "note: precision bf16: {}, so this run's products stay fp32 (bf16 would be "
                   "slower here; precision: bf16-always insists)\n",
                   bf16_verdict().why);
    if (metric_ == ValidMetric::bleu && data_.tgt_tokenizer.kind() == TokenizerKind::character) {
        metric_ = ValidMetric::chrf;
        fmt::print(stderr,
                   "warning: valid_metric bleu is meaningless on character-tokenized targets "
                   "(each target is one word, so BLEU is 0 until it is exact); early stopping "
                   "and best.safetensors go by chrF instead\n");
    }
    state_.rng = rng_.state();
}

Trainer::~Trainer() = default;

double Trainer::criterion(const ValidationResult& v) const {
    switch (metric_) {
        case ValidMetric::bleu:
            return 100.0 - v.bleu;
        case ValidMetric::chrf:
            return 100.0 - v.chrf;
        case ValidMetric::exact:
            return 100.0 - v.exact;
        case ValidMetric::loss:
            break;
    }
    return v.loss;
}

const char* Trainer::metric_name() const {
    switch (metric_) {
        case ValidMetric::bleu:
            return "BLEU";
        case ValidMetric::chrf:
            return "chrF";
        case ValidMetric::exact:
            return "exact match";
        case ValidMetric::loss:
            break;
    }
    return "dev loss";
}

std::map<std::string, std::string> Trainer::metadata() const {
    return {{kSrcVocabKey, data_.src_vocab.to_json()},
            {kTgtVocabKey, data_.tgt_vocab.to_json()},
            {kSrcTokenizerKey, data_.src_tokenizer.to_string()},
            {kTgtTokenizerKey, data_.tgt_tokenizer.to_string()},
            {"train.config", config_to_json(cfg_)},
            {"train.corpus_pairs", std::to_string(data_.corpus.size())}};
}

int64_t Trainer::total_steps() const {
    const int64_t by_epochs = cfg_.max_epochs > 0 ? cfg_.max_epochs * batcher_->num_batches() : 0;
    if (cfg_.max_steps > 0 && by_epochs > 0) return std::min<int64_t>(cfg_.max_steps, by_epochs);
    return cfg_.max_steps > 0 ? cfg_.max_steps : by_epochs;
}

int64_t Trainer::completed_epochs() const {
    const BatchPosition p = batcher_->position();
    return p.epoch + (p.batch >= batcher_->num_batches() ? 1 : 0);
}

bool Trainer::stop_now() const {
    if (time_up_) return true;
    if (cfg_.max_steps > 0 && state_.step >= cfg_.max_steps) return true;
    if (cfg_.max_epochs > 0 && completed_epochs() >= cfg_.max_epochs) return true;
    if (hooks_.finish && hooks_.finish->load()) return true;
    return cfg_.patience > 0 && state_.bad_validations >= cfg_.patience;
}

void Trainer::save(const std::string& name, bool check_ranks) {
    if (check_ranks) check_ranks_agree("before writing " + name);
    if (comm_->rank() != 0) return;  // rank 0 alone writes files
    std::map<std::string, std::string> meta = metadata();
    meta[kBestLossKey] = loss_text(best_loss_);
    if (schedule_->follows_budget())  // wall time: only where the schedule needs it
        meta[kSecondsKey] = fmt::format("{}", seconds_before_ + (clock() - started_));
    meta[kWorldSizeKey] = std::to_string(comm_->size());
    const EmaScope average(ema_.get());  // the model part of the file is the average
    save_checkpoint((std::filesystem::path(cfg_.save_dir) / name).string(), *model_, meta, *optim_,
                    *schedule_, state_, ema_.get());
}

bool Trainer::train_one(Batch& batch) {
    const BatchPosition pos = batcher_->position();  // after next(): this batch is pos.batch - 1
    zero_grads(params_);
    if (cfg_.word_dropout > 0)  // on the whole global batch: the same draws on every rank
        word_dropout(batch, static_cast<float>(cfg_.word_dropout), model_->config().special_ids,
                     rng_);
    const TrainOptions opt{
        .label_smoothing = static_cast<float>(cfg_.label_smoothing),
        .sampling_prob = static_cast<float>(cfg_.scheduled_sampling),
        .dropout = {.embedding = static_cast<float>(cfg_.embedding_dropout),
                    .encoder_output = static_cast<float>(cfg_.encoder_output_dropout),
                    .decoder_output = static_cast<float>(cfg_.decoder_output_dropout),
                    .attention = static_cast<float>(cfg_.attention_dropout),
                    .per_sequence = cfg_.variational_dropout},
        .coverage_loss_weight = static_cast<float>(cfg_.coverage_loss_weight),
        .guided_alignment_weight = guided_weight(),
        .alignments = cfg_.train_alignment.empty() ? nullptr : &alignments_};
    LossStats st;
    {
        // precision: bf16 runs the step's large products with bf16 inputs (gemm/bf16.h) where
        // they pay on this CPU (precision_, resolved in the constructor); the weights are
        // constant until optim_->step(), after the scope.
        const GemmPrecisionScope scope(precision_, constant_ranges(params_));
        st = parts_ == 1 ? pass_->train_step(batch, opt, rng_) : train_parts(batch, opt);
    }
    if (hooks_.after_backward) hooks_.after_backward(state_.batches - 1, params_);  // 0-based
    const float norm = cfg_.clip_norm > 0
                           ? clip_grad_norm(params_, static_cast<float>(cfg_.clip_norm))
                           : grad_norm(params_);
    if (!std::isfinite(st.loss) || !std::isfinite(norm)) {
        ++state_.skipped;
        ++state_.skipped_in_a_row;
        last_skip_ = fmt::format(
            "step {} (epoch {}, batch {} of the epoch, {} sentences): non-finite {} ({}); update "
            "skipped",
            state_.step + 1, pos.epoch + 1, pos.batch - 1, batch.B,
            std::isfinite(st.loss) ? "gradient norm" : "loss",
            std::isfinite(st.loss) ? static_cast<double>(norm) : st.loss);
        return false;
    }
    // A parallel run's budget goes by rank 0's clock (agreed in train_parts), like time_up_.
    const double seconds = parts_ == 1 ? run_seconds() : agreed_seconds_;
    optim_->set_lr(schedule_->lr(optim_->steps() + 1, static_cast<int>(pos.epoch),
                                 budget_progress(optim_->steps() + 1, seconds)));
    optim_->step();
    ++state_.step;
    if (ema_) ema_->update(state_.step);
    state_.skipped_in_a_row = 0;
    state_.tgt_tokens += st.tokens;
    last_loss_ = st.loss;
    last_tokens_ = st.tokens;
    last_coverage_loss_ = st.coverage_loss;
    last_alignment_loss_ = st.alignment_loss;
    last_aligned_ = st.aligned;
    last_norm_ = norm;
    return true;
}

LossStats Trainer::train_parts(const Batch& batch, TrainOptions opt) {
    // Every rank holds the whole global batch: its target tokens need no communication.
    const int64_t tokens = std::count_if(batch.tgt_out.begin(), batch.tgt_out.end(),
                                         [](int32_t id) { return id != Vocab::pad; });
    opt.grad_scale = tokens > 0 ? 1.0f / static_cast<float>(tokens) : 0.0f;
    const uint64_t part_seed = rng_.next_u64();  // the same draw on every rank
    // loss, correct, interrupt, coverage loss, time up, alignment loss, aligned positions,
    // rank 0's training seconds (the budget schedule's clock)
    double sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < cfg_.accumulate; ++k) {
        const int part = comm_->rank() * cfg_.accumulate + k;
        const dist::RowRange rows = dist::shard_rows(batch.B, parts_, part);
        if (rows.size() == 0) continue;
        Rng part_rng(part_seed, static_cast<uint64_t>(part) + 1);
        const LossStats s = pass_->train_step(dist::batch_rows(batch, rows), opt, part_rng);
        sums[0] += s.loss;
        sums[1] += static_cast<double>(s.correct);
        sums[3] += s.coverage_loss;
        sums[5] += s.alignment_loss;
        sums[6] += static_cast<double>(s.aligned);
    }
    (*grad_sum_)(params_);
    sums[2] = hooks_.interrupt && hooks_.interrupt->load() ? 1 : 0;
    sums[4] = comm_->rank() == 0 && out_of_time() ? 1 : 0;
    sums[7] = comm_->rank() == 0 ? run_seconds() : 0;
    comm_->all_reduce_sum(std::span<double>(sums), "loss all-reduce");
    interrupt_agreed_ = sums[2] > 0;  // every rank stops at the same step
    time_up_ = sums[4] > 0;
    agreed_seconds_ = sums[7];
    return {sums[0], tokens,  static_cast<int64_t>(sums[1]),
            sums[3], sums[5], static_cast<int64_t>(sums[6])};
}

void Trainer::check_ranks_agree(const std::string& when) const {
    dist::check_weights_agree(*comm_, params_, when);
}

}  // namespace nazar
