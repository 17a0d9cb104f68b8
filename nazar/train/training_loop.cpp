// Trainer::run(): the training loop, validation on the interval, progress and metrics records,
// and the files a run writes (trainer.h). Setting up and one update are in trainer.cpp.
#include "nazar/train/trainer.h"

#include "nazar/core/check.h"
#include "nazar/models/model_file.h"
#include "nazar/train/average.h"
#include "nazar/train/progress.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace nazar {
namespace {

constexpr int64_t kHashEvery = 100;  // updates between weight-hash checks of a parallel run

}  // namespace

// The per-run state of run(): the progress display, the metrics log and the result so far.
// Ranks other than 0 log nothing (their progress goes to /dev/null, no metrics file).
struct Trainer::RunLog {
    RunLog(ProgressMode mode, int64_t log_interval, const std::string& metrics_path, bool quiet)
        : null_out(quiet ? std::fopen("/dev/null", "w") : nullptr, &std::fclose),
          progress(quiet ? ProgressMode::none : mode, log_interval,
                   null_out ? null_out.get() : stderr),
          metrics(quiet ? std::string() : metrics_path) {}
    std::unique_ptr<FILE, int (*)(FILE*)> null_out;  // destroyed after `progress`
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    Progress progress;
    MetricsLog metrics;
    TrainResult result;
    int64_t saved_last_at = -1, validated_at = -1;
};

void Trainer::save_periodic(RunLog& log) {
    if (cfg_.keep_last) save("last.safetensors");
    if (cfg_.keep_checkpoints > 0) {
        save(periodic_checkpoint_name(state_.step));
        if (comm_->rank() == 0)  // rank 0 alone writes (and deletes) files
            prune_periodic_checkpoints(cfg_.save_dir, cfg_.keep_checkpoints, state_.step);
    }
    log.saved_last_at = state_.step;
}

void Trainer::announce(RunLog& log) const {
    log.progress.message(fmt::format(
        "model: {} parameters, {} (vocabularies {} / {}); {} training pairs, {} dev pairs",
        thousands(count_params(params_)), describe(attention_config(model_->config())),
        data_.src_vocab.size(), data_.tgt_vocab.size(), thousands(data_.corpus.size()),
        thousands(has_dev_ ? dev_.size() : 0)));
    if (parts_ > 1)
        log.progress.message(fmt::format(
            "global batch: {} {} = {} rank(s) x accumulate {} x {}",
            parts_ * (cfg_.batch_tokens > 0 ? cfg_.batch_tokens : cfg_.batch_size),
            cfg_.batch_tokens > 0 ? "tokens" : "sentences", comm_->size(), cfg_.accumulate,
            cfg_.batch_tokens > 0 ? cfg_.batch_tokens : cfg_.batch_size));
    if (state_.step > 0)
        log.progress.message(fmt::format("resuming at step {} (epoch {}, batch {})", state_.step,
                                         state_.position.epoch + 1, state_.position.batch));
}

namespace {

// "exact 72.5% ± 0.6 | BLEU 30.12 | chrF 55.10 (5,304 of 5,304 sources": the decoded part
// of a validation line.
std::string decoded_scores(const ValidationResult& v, bool char_targets) {
    return fmt::format(
        "exact {:.2f}% ± {:.2f} | {} | chrF {:.2f} ({} of {} source{}", v.exact, v.exact_se,
        char_targets ? std::string("BLEU n/a (char targets)") : fmt::format("BLEU {:.2f}", v.bleu),
        v.chrf, thousands(v.sampled), thousands(v.sources), v.sources == 1 ? "" : "s");
}

}  // namespace

void Trainer::report(RunLog& log, const ValidationResult& v, bool improved) {
    const bool char_targets = data_.tgt_tokenizer.kind() == TokenizerKind::character;
    log.progress.message(fmt::format(
        "valid step {} | loss {:.4f}{} | ppl {:.2f} | acc {:.1f}% | {}{}{}){}", state_.step, v.loss,
        v.alignment_loss >= 0 ? fmt::format(" | align {:.4f}", v.alignment_loss) : "", v.perplexity,
        v.accuracy, v.sampled > 0 ? decoded_scores(v, char_targets) : std::string("(no decoding"),
        cfg_.valid_beam > 1 ? fmt::format(", beam {}", cfg_.valid_beam) : "",
        ema_ ? ", EMA weights" : "", improved ? fmt::format(" | best by {}", metric_name()) : ""));
    nlohmann::json record = {{"type", "valid"},
                             {"step", state_.step},
                             {"epoch", state_.position.epoch + 1},
                             {"loss", v.loss},
                             {"perplexity", v.perplexity},
                             {"accuracy", v.accuracy},
                             {"exact", v.exact},
                             {"bleu", v.bleu},
                             {"chrf", v.chrf},
                             {"exact_se", v.exact_se},
                             {"sampled", v.sampled},
                             {"sources", v.sources},
                             {"best", improved}};
    if (v.alignment_loss >= 0) record["alignment_loss"] = v.alignment_loss;
    log.metrics.write(record);
    if (hooks_.on_record) hooks_.on_record(record);
    log.result.last_valid = v;
    log.result.validated = true;
}

TrainResult Trainer::stop_interrupted(RunLog& log) {
    log.progress.finish();
    save("last.safetensors");
    log.progress.message(
        fmt::format("interrupted at step {}: checkpoint written to {}/last.safetensors; continue "
                    "with: nazar train --resume {}",
                    state_.step, cfg_.save_dir, cfg_.save_dir));
    log.result.interrupted = true;
    log.result.state = state_;
    return log.result;
}

void Trainer::note_skipped(RunLog& log) {
    log.progress.message(last_skip_);
    if (state_.skipped_in_a_row >= cfg_.max_skipped_updates) {
        log.progress.finish();
        throw Error(fmt::format(
            "training stopped: {} updates in a row were skipped for a non-finite loss or "
            "gradient (max_skipped_updates {}; the last: {}); nothing was saved after "
            "step {} (the last checkpoint is left as it was): lower lr, set clip_norm, or "
            "check the data",
            state_.skipped_in_a_row, cfg_.max_skipped_updates, last_skip_, state_.step));
    }
}

void Trainer::log_update(RunLog& log, int64_t total) {
    if (!cfg_.train_alignment.empty())
        log.progress.add_alignment(last_alignment_loss_, last_aligned_);
    if (cfg_.max_minutes > 0)
        log.progress.set_time_left(std::max(0.0, cfg_.max_minutes * 60 - run_seconds()));
    log.progress.update(state_.step, total, state_.position.epoch + 1, last_loss_, last_tokens_,
                        optim_->lr());
    if (log.progress.due()) {
        const ProgressLine& p = log.progress.last();
        log.result.last_train_loss = p.loss;
        nlohmann::json record = {{"type", "train"},
                                 {"step", p.step},
                                 {"epoch", p.epoch},
                                 {"loss", p.loss},
                                 {"tokens_per_s", p.tokens_per_s},
                                 {"lr", p.lr},
                                 {"grad_norm", last_norm_}};
        if (cfg_.coverage_loss_weight > 0)  // the last batch's, per target token
            record["coverage_loss"] = last_coverage_loss_ / std::max<int64_t>(last_tokens_, 1);
        if (p.align >= 0) {  // the window's, per aligned target position; and the weight now
            record["alignment_loss"] = p.align;
            record["guided_alignment_weight"] = guided_weight();
        }
        log.metrics.write(record);
        if (hooks_.on_record) hooks_.on_record(record);
    }
}

void Trainer::validate_on_interval(RunLog& log) {
    // Rank 0 validates; the others take its loss and selection criterion (valid_metric), so
    // schedule, early stopping and best selection agree on every rank.
    ValidationResult v = comm_->rank() == 0 ? validate() : ValidationResult{};
    double shared[2] = {v.loss, comm_->rank() == 0 ? criterion(v) : 0.0};
    if (comm_->parallel()) comm_->broadcast(std::span<double>(shared, 2), "validation result");
    v.loss = shared[0];
    ++state_.validations;
    const double c = shared[1];
    const bool improved = c < state_.best_dev_loss;  // early stopping
    const bool new_best = c < best_loss_;            // best.safetensors
    if (improved) {
        state_.best_dev_loss = c;
        state_.best_step = state_.step;
        state_.bad_validations = 0;
    } else {
        ++state_.bad_validations;
    }
    if (schedule_->on_validation(v.loss))
        log.progress.message(
            fmt::format("learning rate reduced to {:.3e}", schedule_->lr(state_.step + 1, 0)));
    report(log, v, new_best);
    log.validated_at = state_.step;
    if (new_best) {
        best_loss_ = c;
        best_valid_ = v;
        best_valid_step_ = state_.step;
        if (cfg_.keep_best) save("best.safetensors");
    }
    keep_ranked(c);
    save_periodic(log);
    if (cfg_.patience > 0 && state_.bad_validations >= cfg_.patience) {
        log.result.early_stopped = true;
        const bool loss = metric_ == ValidMetric::loss;
        log.progress.message(fmt::format(
            "early stopping: {} validation{} without a better {} (best {:.4f} at step {})",
            state_.bad_validations, state_.bad_validations == 1 ? "" : "s", metric_name(),
            loss ? state_.best_dev_loss : 100.0 - state_.best_dev_loss, state_.best_step));
    }
}

void Trainer::keep_ranked(double c) {
    if (cfg_.average_best <= 0 || comm_->rank() != 0 || !std::isfinite(c) ||
        !enters_best(ranked_, c, cfg_.average_best))
        return;
    std::map<std::string, std::string> meta = metadata();
    meta[kValidCriterionKey] = loss_text(c);
    const std::string path =
        (std::filesystem::path(cfg_.save_dir) / ranked_checkpoint_name(state_.step)).string();
    {
        const EmaScope average(ema_.get());  // the weights validation measured
        save_model(path, *model_, meta);
    }
    ranked_ = prune_ranked_checkpoints(cfg_.save_dir, cfg_.average_best, state_.step);
}

void Trainer::write_averaged(RunLog& log) {
    if (cfg_.average_best <= 0 || ranked_.empty()) return;
    std::vector<std::string> inputs;
    std::string steps;
    for (const RankedCheckpoint& r : ranked_) {
        inputs.push_back(r.path);
        log.result.averaged_steps.push_back(r.step);
        steps += fmt::format("{}{}", steps.empty() ? "" : ", ", r.step);
    }
    const std::string out =
        (std::filesystem::path(cfg_.save_dir) / "averaged.safetensors").string();
    average_models(inputs, out);
    const ValidationResult v = validate_file(out, nullptr);
    log.result.final_averaged = v;
    const bool char_targets = data_.tgt_tokenizer.kind() == TokenizerKind::character;
    log.progress.message(fmt::format(
        "final, all dev sources: averaged.safetensors (the {} best by {}: steps {}) | loss {:.4f} "
        "| {}{})",
        ranked_.size(), metric_name(), steps, v.loss, decoded_scores(v, char_targets),
        cfg_.valid_beam > 1 ? fmt::format(", beam {}", cfg_.valid_beam) : ""));
    nlohmann::json record = {{"type", "final"},
                             {"file", "averaged.safetensors"},
                             {"steps", log.result.averaged_steps},
                             {"loss", v.loss},
                             {"exact", v.exact},
                             {"exact_se", v.exact_se},
                             {"bleu", v.bleu},
                             {"chrf", v.chrf},
                             {"sampled", v.sampled}};
    log.metrics.write(record);
    if (hooks_.on_record) hooks_.on_record(record);
}

void Trainer::final_report(RunLog& log) {
    // Both files scored on every distinct dev source, so that they compare with each other
    // (and with another run's) whatever valid_sample was: a sample's best is optimistic.
    const auto all = static_cast<int64_t>(dev_groups_.size());
    const bool char_targets = data_.tgt_tokenizer.kind() == TokenizerKind::character;
    const auto full = [&](const ValidationResult& v) {
        return v.sampled == all && v.sources == all;
    };
    const auto line = [&](const char* what, int64_t step, const ValidationResult& v) {
        log.progress.message(
            fmt::format("final, all dev sources: {} (step {}) | loss {:.4f} | {}{})", what, step,
                        v.loss, decoded_scores(v, char_targets),
                        cfg_.valid_beam > 1 ? fmt::format(", beam {}", cfg_.valid_beam) : ""));
        nlohmann::json record = {{"type", "final"}, {"file", what},     {"step", step},
                                 {"loss", v.loss},  {"exact", v.exact}, {"exact_se", v.exact_se},
                                 {"bleu", v.bleu},  {"chrf", v.chrf},   {"sampled", v.sampled}};
        log.metrics.write(record);
        if (hooks_.on_record) hooks_.on_record(record);
    };
    const std::filesystem::path best = std::filesystem::path(cfg_.save_dir) / "best.safetensors";
    if (cfg_.keep_best && std::filesystem::exists(best)) {
        if (best_valid_step_ >= 0 && full(best_valid_)) {
            log.result.final_best = best_valid_;
            log.result.final_best_step = best_valid_step_;
        } else {  // chosen on a sample, or in an earlier invocation: score the file itself
            log.result.final_best = validate_file(best.string(), &log.result.final_best_step);
        }
        line("best.safetensors", log.result.final_best_step, log.result.final_best);
    }
    const ValidationResult& last = log.result.last_valid;
    if (log.result.validated && log.validated_at == state_.step && full(last)) {
        log.result.final_model = last;
    } else {
        const EmaScope average(ema_.get());
        log.result.final_model = validate_weights(*model_, all);
    }
    line("model.safetensors", state_.step, log.result.final_model);
}

TrainResult Trainer::finish_run(RunLog& log) {
    log.progress.finish();
    log.result.early_stopped =
        log.result.early_stopped || (cfg_.patience > 0 && state_.bad_validations >= cfg_.patience);
    // Off the interval, one more validation. It counts for best.safetensors like any other
    // (the best file is never worse than the final model), but not for early stopping or the
    // schedule, so that resuming from last.safetensors equals an uninterrupted run.
    check_ranks_agree(fmt::format("at the end (step {})", state_.step));
    if (has_dev_ && log.validated_at != state_.step && comm_->rank() == 0) {
        const ValidationResult v = validate();
        const bool new_best = criterion(v) < best_loss_;
        report(log, v, new_best);
        if (new_best) {
            best_loss_ = criterion(v);
            best_valid_ = v;
            best_valid_step_ = state_.step;
            if (cfg_.keep_best) save("best.safetensors", false);  // rank 0 only: checked above
        }
        keep_ranked(criterion(v));
    }
    if (log.saved_last_at != state_.step) save_periodic(log);
    log.result.model_path = (std::filesystem::path(cfg_.save_dir) / "model.safetensors").string();
    if (comm_->rank() == 0) {
        const EmaScope average(ema_.get());  // model.safetensors: the moving average
        check_finite(params_, "model.safetensors");
        save_model(log.result.model_path, *model_, metadata());
    }
    if (has_dev_ && comm_->rank() == 0) {
        final_report(log);
        write_averaged(log);
    }
    if (comm_->parallel()) {
        const double total =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - log.started).count();
        log.progress.message(fmt::format(
            "gradient all-reduce (rank 0): {} calls, {:.2f} MB per update; of {:.2f} s in this "
            "run, {:.2f} s ({:.1f}%) waiting for the other ranks, {:.2f} s ({:.1f}%) in the "
            "transfer",
            grad_sum_->calls(), static_cast<double>(count_params(params_)) * 4 / 1e6, total,
            grad_sum_->wait_seconds(), total > 0 ? 100 * grad_sum_->wait_seconds() / total : 0.0,
            grad_sum_->seconds(), total > 0 ? 100 * grad_sum_->seconds() / total : 0.0));
    }
    log.progress.message(fmt::format(
        "done: {} updates ({} skipped), {} epochs completed, {} target tokens; model written to {}",
        state_.step, state_.skipped, completed_epochs(), thousands(state_.tgt_tokens),
        log.result.model_path));
    log.result.state = state_;
    return log.result;
}

TrainResult Trainer::run() {
    if (comm_->rank() == 0) std::filesystem::create_directories(cfg_.save_dir);
    RunLog log(parse_choices(cfg_).progress, cfg_.log_interval, cfg_.metrics_log,
               comm_->rank() != 0 || hooks_.quiet);
    announce(log);
    if (cfg_.average_best > 0 && comm_->rank() == 0)  // a resumed run's, up to its step
        ranked_ = prune_ranked_checkpoints(cfg_.save_dir, cfg_.average_best, state_.step);
    started_ = clock();
    time_up_ = false;
    Batch batch;
    const int64_t total = total_steps();
    while (!stop_now()) {
        batcher_->next(batch);
        ++state_.batches;
        const bool updated = train_one(batch);
        state_.position = batcher_->position();
        state_.rng = rng_.state();
        if (hooks_.stop_after && hooks_.stop_after(state_.batches))
            return log.result;  // a simulated kill
        if (comm_->parallel() ? interrupt_agreed_ : hooks_.interrupt && hooks_.interrupt->load())
            return stop_interrupted(log);
        if (!updated) {
            note_skipped(log);
            continue;
        }
        log_update(log, total);
        if (!comm_->parallel()) time_up_ = out_of_time();
        if (time_up_)
            log.progress.message(fmt::format("max_minutes: {} minutes used up at step {}",
                                             cfg_.max_minutes, state_.step));
        if (comm_->parallel() && state_.step % kHashEvery == 0)
            check_ranks_agree(fmt::format("after step {}", state_.step));
        if (has_dev_ && state_.step % cfg_.valid_interval == 0) {
            validate_on_interval(log);
        } else if (cfg_.checkpoint_interval > 0 && state_.step % cfg_.checkpoint_interval == 0 &&
                   (cfg_.keep_last || cfg_.keep_checkpoints > 0)) {
            save_periodic(log);
        }
    }
    return finish_run(log);
}

}  // namespace nazar
