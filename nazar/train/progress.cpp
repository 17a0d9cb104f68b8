// Progress display and metrics log (progress.h).
#include "nazar/train/progress.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace nazar {

ProgressMode parse_progress_mode(std::string_view name) {
    if (name == "auto") return isatty(fileno(stderr)) ? ProgressMode::tty : ProgressMode::plain;
    if (name == "tty") return ProgressMode::tty;
    if (name == "plain") return ProgressMode::plain;
    if (name == "none") return ProgressMode::none;
    throw UsageError(
        fmt::format("progress: '{}' is not one of auto, tty, plain, none", excerpt(name)));
}

std::string format_duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const int64_t t = static_cast<int64_t>(std::llround(s));
    if (t < 60) return fmt::format("{}s", t);
    if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
    return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string format_rate(double r) {
    if (!std::isfinite(r) || r < 0) return "?";
    if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
    if (r >= 1e3) return fmt::format("{:.1f}k", r / 1e3);
    return fmt::format("{:.0f}", r);
}

std::string format_progress(const ProgressLine& p) {
    const std::string step = p.total_steps > 0 ? fmt::format("step {}/{}", p.step, p.total_steps)
                                               : fmt::format("step {}", p.step);
    const std::string align = p.align >= 0 ? fmt::format(" | align {:.4f}", p.align) : "";
    return fmt::format("{} | epoch {} | loss {:.4f}{} | {} tok/s | lr {:.2e} | ETA {}", step,
                       p.epoch, p.loss, align, format_rate(p.tokens_per_s), p.lr,
                       format_duration(p.eta_s));
}

Progress::Progress(ProgressMode mode, int64_t log_interval, FILE* out)
    : mode_(mode), log_interval_(std::max<int64_t>(1, log_interval)), out_(out) {
    start_ = window_start_ = last_draw_ = Clock::now();
}

Progress::~Progress() {
    finish();
}

void Progress::update(int64_t step, int64_t total_steps, int64_t epoch, double loss_sum,
                      int64_t tokens, double lr) {
    due_ = false;
    const auto now = Clock::now();
    if (start_step_ < 0) start_step_ = step - 1, start_ = window_start_;
    window_loss_ += loss_sum;
    window_tokens_ += tokens;
    ++window_steps_;
    const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
    const bool show = mode_ == ProgressMode::tty
                          ? (since_draw >= 0.2 || step == total_steps)
                          : (step % log_interval_ == 0 || step == total_steps);
    if (!show) return;
    const double window_s = std::chrono::duration<double>(now - window_start_).count();
    const double total_s = std::chrono::duration<double>(now - start_).count();
    const int64_t done = step - start_step_;
    last_ = {.step = step,
             .total_steps = total_steps,
             .epoch = epoch,
             .loss = window_tokens_ ? window_loss_ / static_cast<double>(window_tokens_) : 0.0,
             .tokens_per_s = window_s > 0 ? static_cast<double>(window_tokens_) / window_s : 0.0,
             .lr = lr,
             .eta_s = total_steps > 0 && done > 0 ? total_s / static_cast<double>(done) *
                                                        static_cast<double>(total_steps - step)
                                                  : -1.0};
    if (time_left_ >= 0 && (last_.eta_s < 0 || time_left_ < last_.eta_s)) last_.eta_s = time_left_;
    if (window_aligned_ >= 0) {
        last_.align =
            window_aligned_ > 0 ? window_align_ / static_cast<double>(window_aligned_) : 0.0;
        window_align_ = 0;
        window_aligned_ = 0;
    }
    due_ = true;
    window_loss_ = 0;
    window_tokens_ = 0;
    window_steps_ = 0;
    window_start_ = last_draw_ = now;
    if (mode_ == ProgressMode::none) return;
    if (mode_ == ProgressMode::tty) {
        fmt::print(out_, "\r\033[K{}", format_progress(last_));
        line_open_ = true;
    } else {
        fmt::print(out_, "{}\n", format_progress(last_));
    }
    std::fflush(out_);
}

void Progress::add_alignment(double loss_sum, int64_t positions) {
    if (window_aligned_ < 0) window_aligned_ = 0;
    window_align_ += loss_sum;
    window_aligned_ += positions;
}

void Progress::message(const std::string& line) {
    if (line_open_) fmt::print(out_, "\r\033[K");
    fmt::print(out_, "{}\n", line);
    if (line_open_) fmt::print(out_, "{}", format_progress(last_));  // redraw below the message
    std::fflush(out_);
}

void Progress::finish() {
    if (line_open_) {
        fmt::print(out_, "\n");
        std::fflush(out_);
        line_open_ = false;
    }
}

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), "a");
    NZ_CHECK_INPUT(file_ != nullptr, "metrics_log: cannot open '{}' for appending: {}", path,
                   std::strerror(errno));
}

MetricsLog::~MetricsLog() {
    if (file_) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::json& record) {
    if (!file_) return;
    const std::string line = record.dump() + "\n";
    NZ_CHECK_INPUT(
        std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0,
        "metrics_log: writing '{}' failed: {}", path_, std::strerror(errno));
}

}  // namespace nazar
