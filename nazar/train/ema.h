// Exponential moving average of the weights (train_config ema_decay; docs/training.md,
// "Averaging, EMA and ensembles").
//
// The average starts as the initial weights. After optimizer update n (n = 1, 2, ...: the update
// count once it is made; skipped updates do not count), for every parameter element:
//   d_n = min(d, (1 + n) / (10 + n))          warm-up, so the first updates are not swamped by
//                                             the random initial weights (as TensorFlow's
//                                             ExponentialMovingAverage with num_updates)
//   ema ← a · ema + b · w                     a = float(d_n), b = float(1 − d_n) (both computed
//                                             in double, then rounded), products and sum in float
// With d = 0.999 the warm-up form equals d from n = 8,991 on.
//
// Training holds the raw weights in the model and the average here; swap() exchanges the two
// (exactly: it swaps bits), which is how validation decodes with the average and how the
// trainer writes files whose model part is the average.
//
// Files of a run with ema_decay > 0: the model part of every file (model, best, last and the
// periodic checkpoints) holds the AVERAGE, so `translate`, `score`, `average` and the PyTorch
// loader use it; checkpoints also hold the raw weights as tensors "train.raw.<name>" (the model
// loaders ignore "train." tensors), from which --resume restores the run exactly.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nazar {

inline constexpr const char* kRawWeightPrefix = "train.raw.";

class Ema {
public:
    // Copies the current values of `params` as the average. decay in (0, 1).
    Ema(const ParamList& params, double decay);

    static double decay_at(double decay, int64_t n);  // d_n above
    void update(int64_t n);                           // after update n, from the params' values
    // Exchanges the params' values with the average; calling it twice restores both.
    void swap();
    bool swapped() const { return swapped_; }
    double decay() const { return decay_; }
    const std::vector<Tensor>& shadow() const { return shadow_; }  // the other set of weights

    // With swap() in effect (params = average): writes the raw weights as train.raw.<name>.
    void save_raw(SafeTensors& st) const;
    // On resume, the params hold the file's model part (the average): it becomes the average,
    // and the params get the raw weights from train.raw.<name>. Errors name `source` and the
    // tensor that is missing or of the wrong shape.
    void load_raw(const SafeTensors& st, const std::string& source);

private:
    ParamList params_;
    std::vector<Tensor> shadow_;
    double decay_;
    bool swapped_ = false;
};

// The average swapped into the model for a scope (validation, writing files); nothing when
// `ema` is null.
class EmaScope {
public:
    explicit EmaScope(Ema* ema) : ema_(ema) {
        if (ema_) ema_->swap();
    }
    ~EmaScope() {
        if (ema_) ema_->swap();
    }
    EmaScope(const EmaScope&) = delete;
    EmaScope& operator=(const EmaScope&) = delete;

private:
    Ema* ema_;
};

}  // namespace nazar
