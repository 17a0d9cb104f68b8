// The trainer's time budget (trainer.h): its clock, max_minutes, and the share of the budget
// that the linear and cosine schedules follow (schedule.h BudgetLr).
#include "nazar/train/trainer.h"

#include "nazar/core/check.h"
#include "nazar/train/metadata.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace nazar {

double Trainer::clock() const {
    if (hooks_.clock) return hooks_.clock();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double Trainer::run_seconds() const {
    // A budget schedule counts the whole run (it must end its decay at the budget, resumed or
    // not); max_minutes alone counts this invocation (the documented rule).
    return clock() - started_ + (schedule_->follows_budget() ? seconds_before_ : 0.0);
}

void Trainer::restore_seconds(const SafeTensors& file) {
    if (!file.has_meta(kSecondsKey)) return;  // written before budget schedules: none counted
    const double seconds = meta_double(file, kSecondsKey);
    NZ_CHECK_INPUT(std::isfinite(seconds) && seconds >= 0 && seconds < 1e12,
                   "{}: metadata {} = {} is not a training time in seconds", file.source,
                   kSecondsKey, seconds);
    seconds_before_ = seconds;
}

bool Trainer::out_of_time() const {
    return cfg_.max_minutes > 0 && run_seconds() >= cfg_.max_minutes * 60;
}

double Trainer::budget_progress(int64_t step, double seconds) const {
    double p = 0;
    if (cfg_.max_steps > 0) p = static_cast<double>(step) / cfg_.max_steps;
    if (cfg_.max_epochs > 0) {
        const BatchPosition pos = batcher_->position();
        const double epochs =
            static_cast<double>(pos.epoch) +
            static_cast<double>(pos.batch) /
                static_cast<double>(std::max<int64_t>(batcher_->num_batches(), 1));
        p = std::max(p, epochs / cfg_.max_epochs);
    }
    if (cfg_.max_minutes > 0) p = std::max(p, seconds / (cfg_.max_minutes * 60));
    return std::clamp(p, 0.0, 1.0);
}

}  // namespace nazar
