// What training shows and records while it runs (docs/design.md §6):
//
//   Progress    one line on stderr:
//                 step 1200/5000 | epoch 3 | loss 2.314 | 18.4k tok/s | lr 1.00e-03 | ETA 4m12s
//               on a TTY it is rewritten in place ("\r" + clear line) at most every 0.2 s;
//               otherwise (a file, a pipe, CI logs) it is printed as a plain line every
//               `log_interval` updates. Other messages (validation, warnings) go through
//               message(), which first clears an in-place line so nothing is garbled.
//               loss = mean per-token training loss since the previous line; tok/s = target
//               tokens per second over the same window; ETA from the mean time per update so
//               far and the updates left (max_steps, or max_epochs × batches per epoch).
//               Mode none hides the progress line only; message() lines still appear.
//   MetricsLog  JSON lines appended to a file (one object per line: {"type": "train", ...} or
//               {"type": "valid", ...}), for plotting. Reopened in append mode on --resume.
// Neither touches anything that affects training: runs are deterministic with or without them.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace nazar {

enum class ProgressMode { tty, plain, none };

// "auto" -> tty when stderr is a terminal, else plain; "tty", "plain", "none" as named.
ProgressMode parse_progress_mode(std::string_view name);

// "4m12s", "1h03m", "17s"; "?" for a negative or non-finite value.
std::string format_duration(double seconds);
// 18400 -> "18.4k", 950 -> "950", 2.5e6 -> "2.50M".
std::string format_rate(double per_second);

struct ProgressLine {
    int64_t step = 0;         // updates done
    int64_t total_steps = 0;  // 0 = unknown
    int64_t epoch = 0;        // 1-based epoch being trained
    double loss = 0;          // mean per token over the window
    double tokens_per_s = 0;
    double lr = 0;
    double eta_s = -1;  // < 0 = unknown
    // guided alignment: its weighted loss per aligned target position over the window, shown
    // as "| align 0.412" after the loss; < 0 = not training with it
    double align = -1;
};
std::string format_progress(const ProgressLine& p);

class Progress {
public:
    Progress(ProgressMode mode, int64_t log_interval, FILE* out = stderr);
    ~Progress();

    // After every update. Accumulates loss/tokens; prints when due (see the file comment).
    void update(int64_t step, int64_t total_steps, int64_t epoch, double loss_sum, int64_t tokens,
                double lr);
    // Before update(), with guided alignment: the update's weighted alignment loss (summed) and
    // its aligned target positions join the window's "align" figure.
    void add_alignment(double loss_sum, int64_t positions);
    // Before update(), with a time budget (max_minutes): the seconds it has left, which bound
    // the ETA (< 0 = no budget).
    void set_time_left(double seconds) { time_left_ = seconds; }
    // A full line of its own (validation results, skipped updates, warnings).
    void message(const std::string& line);
    void finish();  // ends an in-place line with a newline

    // The last window's figures (also for the metrics log).
    const ProgressLine& last() const { return last_; }
    bool due() const { return due_; }  // whether the last update() produced a line

private:
    using Clock = std::chrono::steady_clock;
    ProgressMode mode_;
    int64_t log_interval_;
    FILE* out_;
    bool line_open_ = false;  // an in-place line is on screen
    bool due_ = false;
    Clock::time_point start_, window_start_, last_draw_;
    int64_t start_step_ = -1;
    double window_loss_ = 0;
    int64_t window_tokens_ = 0, window_steps_ = 0;
    double window_align_ = 0;
    int64_t window_aligned_ = -1;  // < 0: no alignment loss in this run
    double time_left_ = -1;        // set_time_left
    ProgressLine last_;
};

class MetricsLog {
public:
    MetricsLog() = default;                        // disabled
    explicit MetricsLog(const std::string& path);  // "" = disabled; appends
    ~MetricsLog();
    MetricsLog(const MetricsLog&) = delete;
    MetricsLog& operator=(const MetricsLog&) = delete;

    bool enabled() const { return file_ != nullptr; }
    void write(const nlohmann::json& record);  // one line, flushed

private:
    FILE* file_ = nullptr;
    std::string path_;
};

}  // namespace nazar
