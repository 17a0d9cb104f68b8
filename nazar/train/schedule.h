// Learning-rate schedules. The trainer asks lr(step, epoch, progress) before every update and
// calls on_validation(metric) after every validation; the optimizer gets the value via set_lr().
//
//   step      1-based index of the update about to be made (optimizer.steps() + 1)
//   epoch     number of COMPLETED epochs (0 during the first one)
//   progress  the share of the run's budget used by this update, in [0, 1]: the largest of
//             step / max_steps, epochs done (fractional) / max_epochs and training seconds /
//             (max_minutes · 60) over the budgets that are set (Trainer::budget_progress)
//
//   ConstantLr   lr
//   WarmupLr     lr · s / W for s ≤ W (linear warm-up), then lr (constant) or lr · √(W / s)
//                (inverse square root, continuous at s = W; W = 0 means lr / √s)
//   StepDecayLr  lr · factor^k,  k = 0 before start_epoch, else ⌊(epoch − start_epoch) / every⌋ + 1
//                Luong et al. 2015 §4.1: 10 epochs, "after 5 epochs, we begin to halve the learning
//                rate every epoch" = {.start_epoch = 5, .every = 1, .factor = 0.5}
//   PlateauLr    torch.optim.lr_scheduler.ReduceLROnPlateau (threshold_mode 'rel', no cooldown):
//                a metric is better when < best·(1 − threshold) (minimise) or > best·(1 +
//                threshold) (maximise); after more than `patience` validations without improvement
//                the lr becomes max(lr · factor, min_lr) and the count restarts.
//   BudgetLr     budgeted training (Li, Yumer & Ramanan 2020, "Budgeted training: rethinking deep
//                neural network training under resource constraints"): the lr falls to min_lr
//                exactly when the budget ends, whichever of steps, epochs or minutes it is:
//                  lr(p) = min_lr + (lr − min_lr) · f(p) · min(1, s / W)
//                  f(p) = 1 − p (linear)  or  (1 + cos(π p)) / 2 (cosine),  p clamped to [0, 1]
//                with an optional linear warm-up of W steps (W = 0: none).
// Serialisable state (PlateauLr: current lr, best, bad count) goes into SafeTensors metadata
// "schedule.*", so a resumed run continues exactly.
#pragma once

#include "nazar/core/safetensors.h"

#include <cstdint>
#include <string>
#include <variant>

namespace nazar {

struct ConstantLr {
    double lr = 1.0;
    double at(int64_t step, int epoch) const;
};

struct WarmupLr {
    enum class Decay { none, inverse_sqrt };
    double lr = 1e-3;
    int64_t warmup_steps = 4000;  // W
    Decay decay = Decay::none;
    double at(int64_t step, int epoch) const;
};

struct StepDecayLr {
    double lr = 1.0;
    int start_epoch = 5;  // K: the first halving applies during epoch K (0-based)
    int every = 1;        // N: then every N epochs
    double factor = 0.5;
    double at(int64_t step, int epoch) const;
};

struct PlateauLr {
    double lr = 1.0;      // initial lr
    double factor = 0.5;  // in (0, 1)
    int patience = 0;     // validations without improvement tolerated before a reduction
    double min_lr = 0.0;
    double threshold = 1e-4;  // relative improvement needed (PyTorch's default)
    bool maximize = false;    // true for BLEU-like metrics, false for loss/perplexity

    // State (saved and restored).
    double current = -1;  // lr now; < 0 until first used (then = lr)
    double best = 0;
    int bad = 0;        // validations since the last improvement
    bool seen = false;  // a metric has been recorded

    double at(int64_t /*step*/, int /*epoch*/) const { return current < 0 ? lr : current; }
    bool on_validation(double metric);  // true when the lr was reduced
};

struct BudgetLr {
    enum class Shape { linear, cosine };
    double lr = 1e-3;          // the peak (after warm-up)
    double min_lr = 0;         // reached when the budget is used up
    int64_t warmup_steps = 0;  // W
    Shape shape = Shape::cosine;
    double at(int64_t step, int epoch, double progress) const;
};

class LrSchedule {
public:
    using Any = std::variant<ConstantLr, WarmupLr, StepDecayLr, PlateauLr, BudgetLr>;

    // Implicit from each schedule struct (LrSchedule s = WarmupLr{...}); validates the fields.
    LrSchedule(ConstantLr s) : LrSchedule(Any(s)) {}   // NOLINT
    LrSchedule(WarmupLr s) : LrSchedule(Any(s)) {}     // NOLINT
    LrSchedule(StepDecayLr s) : LrSchedule(Any(s)) {}  // NOLINT
    LrSchedule(PlateauLr s) : LrSchedule(Any(s)) {}    // NOLINT
    LrSchedule(BudgetLr s) : LrSchedule(Any(s)) {}     // NOLINT
    explicit LrSchedule(Any s);

    // `progress` matters to BudgetLr only (the others ignore it).
    double lr(int64_t step, int epoch, double progress = 0) const;
    // true for the schedules that follow the budget (BudgetLr): the trainer then counts
    // max_minutes over the whole run, resumes included (trainer.h).
    bool follows_budget() const { return std::holds_alternative<BudgetLr>(s_); }
    // Records a validation metric; true when the lr changed (only PlateauLr reacts).
    bool on_validation(double metric);

    std::string kind() const;  // "constant", "warmup", "step_decay", "plateau", "linear", "cosine"
    std::string describe() const;  // one line for logs

    // metadata "schedule.kind" (+ PlateauLr's state); load checks the kind matches.
    void save_state(SafeTensors& out) const;
    void load_state(const SafeTensors& in);

    const Any& get() const { return s_; }

private:
    Any s_;
};

}  // namespace nazar
