// Optimizers: SGD (momentum, Nesterov, weight decay), Adam and AdamW, exactly as torch.optim
// (1.13, single-tensor path) defines them, element-wise in float32 with the scalars computed in
// double and cast to float where PyTorch casts them. t is the step count after increment (1-based).
//
//   SGD    g ← g + λ p;  buf ← g (t = 1) | μ buf + (1 − τ) g;  d ← nesterov ? g + μ buf : buf
//          (d ← g without momentum);  p ← p − lr d
//   Adam   g ← g + λ p;  m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²
//          p ← p − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)        (ε outside the root)
//   AdamW  p ← p (1 − lr λ) first (decoupled decay), then Adam with λ = 0
//
// Updates are dense (every parameter, every step, as PyTorch does for params with a gradient),
// split into fixed blocks run by parallel_for: element-wise, so the result does not depend on
// the thread count. State for checkpoints goes into a SafeTensors: tensors
// "optim.<buffer>.<param name>" (buffer = exp_avg, exp_avg_sq, momentum_buffer: PyTorch's state
// keys) and metadata "optim.kind", "optim.step", "optim.lr"; load_state restores it exactly,
// so a resumed run continues bit-identically.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nazar {

enum class OptimKind { sgd, adam, adamw };

struct SgdOptions {
    double lr = 0.1;
    double momentum = 0.0;      // μ
    double dampening = 0.0;     // τ
    double weight_decay = 0.0;  // λ (L2, added to the gradient)
    bool nesterov = false;      // needs momentum > 0 and dampening = 0 (as PyTorch)
};

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay =
        0.0;  // Adam: L2 added to the gradient; AdamW: decoupled (torch default 1e-2)
};

const char* optim_kind_name(OptimKind kind);          // "sgd", "adam", "adamw"
OptimKind parse_optim_kind(const std::string& name);  // throws UsageError naming the choices

class Optimizer {
public:
    // `params` must outlive the optimizer (it keeps the ParamRef pointers).
    static Optimizer sgd(ParamList params, SgdOptions opt);
    static Optimizer adam(ParamList params, AdamOptions opt);
    static Optimizer adamw(ParamList params, AdamOptions opt = {.weight_decay = 1e-2});

    // One update of every parameter from its gradient, with the current lr. Gradients are read,
    // not modified (zero them with zero_grads()).
    void step();

    double lr() const { return lr_; }
    void set_lr(double lr);                  // schedules call this before step()
    int64_t steps() const { return step_; }  // updates done so far
    OptimKind kind() const { return kind_; }
    const ParamList& params() const { return params_; }

    // Checkpoint state (see the file comment). save_state replaces same-named entries in `out`.
    void save_state(SafeTensors& out) const;
    // Restores moments, step and lr. Throws if the kind differs, a buffer is missing or has the
    // wrong shape, or `in` holds "optim." tensors this optimizer does not have.
    void load_state(const SafeTensors& in);

private:
    struct Block {
        int param;  // index into params_
        int64_t begin, end;
    };
    Optimizer(OptimKind kind, ParamList params, double lr);
    void make_blocks();
    void step_sgd();
    void step_adam();

    OptimKind kind_;
    ParamList params_;
    SgdOptions sgd_;
    AdamOptions adam_;
    double lr_ = 0;
    int64_t step_ = 0;
    // State buffers, one tensor per param: {momentum_buffer} for SGD with momentum,
    // {exp_avg, exp_avg_sq} for Adam/AdamW, none for plain SGD.
    struct Buffer {
        std::string name;
        std::vector<Tensor> t;
    };
    std::vector<Buffer> buffers_;
    std::vector<Block> blocks_;
};

}  // namespace nazar
