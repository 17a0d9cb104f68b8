// Shared by the files of the extension nazar._nazar (docs/python.md): numpy views of tensors and
// the registration functions of each part. Only the library's public API is used; the Python
// side (python/nazar/*.py) wraps what these functions return in small picklable classes.
#pragma once

#include "nazar/core/tensor.h"
#include "nazar/train/signal_watcher.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nazar::py {

namespace pb = pybind11;

// Arguments (args.cpp), checked before any work with errors that name them, as the command
// line checks its flags; never pybind11's "incompatible function arguments".
//
// `v` as an integer in [lo, hi]: TypeError when it is not an int (a bool is not; numpy's
// integers are), ValueError "<name> must be in [lo, hi], got <v>" for any int out of range.
int64_t int_arg(const pb::handle& v, const char* name, int64_t lo, int64_t hi);
// A str as UTF-8: TypeError when not a str, UnicodeEncodeError naming `name` when it cannot be
// encoded (a lone surrogate such as "\ud800").
std::string text_arg(const pb::handle& v, const std::string& name);
// The str items of a list (or another sequence, not a str) as UTF-8, each checked as text_arg
// does under the name "<name>[i]"; max_bytes > 0: a ValueError naming the item, its length and
// the limit when one is longer (max_line_bytes, the command line's --max-line-bytes).
std::vector<std::string> text_list(const pb::handle& seq, const char* name,
                                   std::size_t max_bytes = 0);

// Ctrl-C and cancellation (interrupt.cpp, where the reasons are).
//
// SIGINT blocked in this thread while alive; nazar's worker pool, started the first time, is
// started with it blocked too. Every binding that computes starts with one (an InterruptPoll
// holds one).
class SigintBlocked {
public:
    SigintBlocked();
    ~SigintBlocked();
    SigintBlocked(const SigintBlocked&) = delete;
    SigintBlocked& operator=(const SigintBlocked&) = delete;
    void let_pending_in();  // unblocks and blocks again: a pending SIGINT is delivered here

private:
    sigset_t old_{};
};

// Made with the GIL held in the thread that computes; check() without the GIL at each step
// boundary: in the main thread, at most once per `every` (the first time at once), a pending
// SIGINT is let in and Python's handlers run (PyErr_CheckSignals); what they raise
// (KeyboardInterrupt) is thrown as pybind11::error_already_set. Elsewhere check() does nothing.
class InterruptPoll {
public:
    explicit InterruptPoll(std::chrono::milliseconds every = std::chrono::milliseconds(20));
    void check();

private:
    friend class TrainInterrupt;
    SigintBlocked blocked_;
    bool main_ = false;
    std::chrono::steady_clock::duration every_;
    std::chrono::steady_clock::time_point next_{};
};

// Ctrl-C during nazar.train(): made with the GIL held in the thread that trains, before the
// pool's threads are resized; check() without the GIL at each update boundary. As an
// InterruptPoll (SIGINT blocked here and in nazar's workers, Python's handlers run in check()),
// and in the main thread the library's SignalWatcher (nazar/train/signal_watcher.h) takes
// SIGINT; check() raises one it took into this thread, where it is let in between two updates.
// One taken after the last check is let in when the object goes (Python's handler runs then).
class TrainInterrupt {
public:
    TrainInterrupt();
    ~TrainInterrupt();
    TrainInterrupt(const TrainInterrupt&) = delete;
    TrainInterrupt& operator=(const TrainInterrupt&) = delete;
    void check();

private:
    InterruptPoll poll_;
    std::atomic<bool> taken_{false};
    std::unique_ptr<SignalWatcher> watcher_;  // main thread only
};

// nazar.CancelToken: cancel() from any thread stops the translations it was given to.
struct CancelToken {
    std::atomic<bool> cancelled{false};
};

// A translation stopped by its CancelToken: raised as nazar.Cancelled (a nazar.Error).
class Cancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A float32 array over `t`'s buffer, which the array then owns (no copy): C-contiguous,
// shape = t's shape.
pb::array_t<float> to_numpy(Tensor&& t);
// A copy of a view (the view's memory stays with its owner).
pb::array_t<float> copy_to_numpy(ConstTensorView v);

void init_translate(pb::module_& m);
void init_model(pb::module_& m);
void init_train(pb::module_& m);
void init_eval(pb::module_& m);
void init_interrupt(pb::module_& m);
void init_heatmaps(pb::module_& m);

}  // namespace nazar::py
