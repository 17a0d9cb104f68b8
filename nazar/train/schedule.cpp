#include "nazar/train/schedule.h"

#include "nazar/train/metadata.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace nazar {

namespace {

void check_step(int64_t step, int epoch) {
    NZ_CHECK(step >= 1, "lr schedule: step is 1-based, got {}", step);
    NZ_CHECK(epoch >= 0, "lr schedule: epoch must be >= 0, got {}", epoch);
}

}  // namespace

double ConstantLr::at(int64_t step, int epoch) const {
    check_step(step, epoch);
    return lr;
}

double WarmupLr::at(int64_t step, int epoch) const {
    check_step(step, epoch);
    const double s = static_cast<double>(step), W = static_cast<double>(warmup_steps);
    if (step <= warmup_steps) return lr * s / W;
    if (decay == Decay::none) return lr;
    return lr * std::sqrt(std::max(W, 1.0) / s);
}

double StepDecayLr::at(int64_t step, int epoch) const {
    check_step(step, epoch);
    if (epoch < start_epoch) return lr;
    return lr * std::pow(factor, (epoch - start_epoch) / every + 1);
}

double BudgetLr::at(int64_t step, int epoch, double progress) const {
    check_step(step, epoch);
    NZ_CHECK(std::isfinite(progress) && progress >= 0, "lr schedule: progress must be >= 0, got {}",
             progress);
    const double p = std::min(progress, 1.0);
    const double f = shape == Shape::linear ? 1.0 - p : 0.5 * (1.0 + std::cos(M_PI * p));
    const double warm =
        step < warmup_steps ? static_cast<double>(step) / static_cast<double>(warmup_steps) : 1.0;
    return (min_lr + (lr - min_lr) * f) * warm;
}

bool PlateauLr::on_validation(double metric) {
    NZ_CHECK(std::isfinite(metric), "plateau schedule: validation metric is {}", metric);
    if (current < 0) current = lr;
    const bool better =
        !seen || (maximize ? metric > best * (1 + threshold) : metric < best * (1 - threshold));
    if (better) {
        best = metric;
        seen = true;
        bad = 0;
        return false;
    }
    if (++bad <= patience) return false;
    bad = 0;
    const double reduced = std::max(current * factor, min_lr);
    if (current - reduced <= 1e-8) return false;  // PyTorch's eps: already at min_lr
    current = reduced;
    return true;
}

LrSchedule::LrSchedule(Any s) : s_(std::move(s)) {
    std::visit(
        [](auto& x) {
            using T = std::decay_t<decltype(x)>;
            NZ_CHECK_USAGE(std::isfinite(x.lr) && x.lr >= 0,
                           "lr schedule: lr must be finite and >= 0, got {}", x.lr);
            if constexpr (std::is_same_v<T, WarmupLr>)
                NZ_CHECK_USAGE(x.warmup_steps >= 0, "warmup: warmup_steps must be >= 0, got {}",
                               x.warmup_steps);
            if constexpr (std::is_same_v<T, StepDecayLr>) {
                NZ_CHECK_USAGE(x.start_epoch >= 0, "step decay: start_epoch must be >= 0, got {}",
                               x.start_epoch);
                NZ_CHECK_USAGE(x.every >= 1, "step decay: every must be >= 1, got {}", x.every);
                NZ_CHECK_USAGE(x.factor > 0 && x.factor <= 1,
                               "step decay: factor must be in (0, 1], got {}", x.factor);
            }
            if constexpr (std::is_same_v<T, BudgetLr>) {
                NZ_CHECK_USAGE(x.warmup_steps >= 0, "{}: warmup_steps must be >= 0, got {}",
                               x.shape == BudgetLr::Shape::linear ? "linear" : "cosine",
                               x.warmup_steps);
                NZ_CHECK_USAGE(std::isfinite(x.min_lr) && x.min_lr >= 0 && x.min_lr <= x.lr,
                               "{}: min_lr must be in [0, lr = {}], got {}",
                               x.shape == BudgetLr::Shape::linear ? "linear" : "cosine", x.lr,
                               x.min_lr);
            }
            if constexpr (std::is_same_v<T, PlateauLr>) {
                NZ_CHECK_USAGE(x.factor > 0 && x.factor < 1,
                               "plateau: factor must be in (0, 1), got {}", x.factor);
                NZ_CHECK_USAGE(x.patience >= 0, "plateau: patience must be >= 0, got {}",
                               x.patience);
                NZ_CHECK_USAGE(x.min_lr >= 0, "plateau: min_lr must be >= 0, got {}", x.min_lr);
                NZ_CHECK_USAGE(x.threshold >= 0, "plateau: threshold must be >= 0, got {}",
                               x.threshold);
                if (x.current < 0) x.current = x.lr;
            }
        },
        s_);
}

double LrSchedule::lr(int64_t step, int epoch, double progress) const {
    return std::visit(
        [&](const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, BudgetLr>)
                return x.at(step, epoch, progress);
            else
                return x.at(step, epoch);
        },
        s_);
}

bool LrSchedule::on_validation(double metric) {
    if (auto* p = std::get_if<PlateauLr>(&s_)) return p->on_validation(metric);
    return false;
}

std::string LrSchedule::kind() const {
    if (const auto* b = std::get_if<BudgetLr>(&s_))
        return b->shape == BudgetLr::Shape::linear ? "linear" : "cosine";
    static const char* names[] = {"constant", "warmup", "step_decay", "plateau"};
    return names[s_.index()];
}

std::string LrSchedule::describe() const {
    struct V {
        std::string operator()(const ConstantLr& x) const {
            return fmt::format("constant lr {}", x.lr);
        }
        std::string operator()(const WarmupLr& x) const {
            return fmt::format(
                "lr {} with {} warm-up steps, then {}", x.lr, x.warmup_steps,
                x.decay == WarmupLr::Decay::none ? "constant" : "inverse square root decay");
        }
        std::string operator()(const StepDecayLr& x) const {
            return fmt::format("lr {}, times {} every {} epoch(s) from epoch {}", x.lr, x.factor,
                               x.every, x.start_epoch + 1);
        }
        std::string operator()(const PlateauLr& x) const {
            return fmt::format("lr {}, times {} after {} validation(s) without {} (min {})", x.lr,
                               x.factor, x.patience + 1, x.maximize ? "increase" : "decrease",
                               x.min_lr);
        }
        std::string operator()(const BudgetLr& x) const {
            return fmt::format("lr {}{}, {} decay to {} at the end of the budget", x.lr,
                               x.warmup_steps > 0
                                   ? fmt::format(" after {} warm-up steps", x.warmup_steps)
                                   : std::string(),
                               x.shape == BudgetLr::Shape::linear ? "linear" : "cosine", x.min_lr);
        }
    };
    return std::visit(V{}, s_);
}

void LrSchedule::save_state(SafeTensors& out) const {
    out.metadata["schedule.kind"] = kind();
    if (const auto* p = std::get_if<PlateauLr>(&s_)) {
        out.metadata["schedule.current"] =
            fmt::format("{}", p->current);  // shortest round-trip form
        out.metadata["schedule.best"] = fmt::format("{}", p->best);
        out.metadata["schedule.bad"] = fmt::format("{}", p->bad);
        out.metadata["schedule.seen"] = fmt::format("{}", p->seen ? 1 : 0);
    }
}

void LrSchedule::load_state(const SafeTensors& in) {
    const std::string& k = in.meta("schedule.kind");
    NZ_CHECK_INPUT(k == kind(), "{}: lr schedule state is '{}', this run uses '{}'", in.source, k,
                   kind());
    if (auto* p = std::get_if<PlateauLr>(&s_)) {
        const double current = meta_double(in, "schedule.current"),
                     best = meta_double(in, "schedule.best");
        const double bad = meta_double(in, "schedule.bad");
        const std::string& seen = in.meta("schedule.seen");
        NZ_CHECK(current >= 0 && std::isfinite(current), "{}: schedule.current = {}", in.source,
                 current);
        NZ_CHECK(!std::isnan(best), "{}: schedule.best = {}", in.source, best);
        NZ_CHECK(bad >= 0 && bad <= 1e9 && bad == std::floor(bad), "{}: schedule.bad = {}",
                 in.source, bad);
        NZ_CHECK(seen == "0" || seen == "1", "{}: schedule.seen = '{}'", in.source, seen);
        p->current = current;
        p->best = best;
        p->bad = static_cast<int>(bad);
        p->seen = seen == "1";
    }
}

}  // namespace nazar
