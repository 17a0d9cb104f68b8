// Ctrl-C and cancellation while nazar computes with the GIL released (common.h: SigintBlocked,
// InterruptPoll, CancelToken; docs/python.md "Ctrl-C and cancellation").
//
// Python's own SIGINT handler only records the signal; Python raises KeyboardInterrupt when the
// main thread next runs bytecode, which without help is after nazar returns (a 40 s translation
// ignored Ctrl-C for 40 s). That handler stays installed, and while nazar computes:
//
//   - SIGINT is blocked in the computing thread and in nazar's worker threads (their pool is
//     started with it blocked, SigintBlocked), so the signal is never delivered into the middle
//     of a product: `nazar train` saw its heap corrupted about once in 30-150 interrupts
//     delivered into a computing thread on the VMs measured, and takes signals in a sigwait
//     thread since (docs/reliability.md "Known issues"). Outside training it goes to a thread
//     that does not block it (another Python thread: the handler's C part only sets a flag) or
//     it stays pending.
//   - training (TrainInterrupt) also runs the library's signal watcher thread, as `nazar train`
//     does (nazar/train/signal_watcher.h): the signal is taken there, never in a computing
//     thread, and TrainInterrupt::check() raises it again into the training thread, still
//     blocked, for the step below to let in. The watcher alone would keep it from Python's
//     handler: the program's own SIGINT handler must still run (and KeyboardInterrupt come
//     from Python's default one).
//   - InterruptPoll::check(), called at a step boundary (after each decoder step, between
//     training updates) in the main thread, at most every 20 ms (translation; every update in
//     training, whose steps are longer and whose stop must come at a known update): unblocks
//     SIGINT for a moment (a pending one is delivered there, between two steps, to Python's
//     handler), takes the GIL and calls PyErr_CheckSignals(), which runs the Python-level handler;
//     when that raises (KeyboardInterrupt), check() throws it as pybind11::error_already_set.
//
// Only the main thread runs Python's signal handlers, so in other threads check() does nothing:
// Ctrl-C goes to the main thread, as in any Python program, and a translation in another
// thread is stopped with a CancelToken instead.
#include "common.h"

#include "nazar/core/threads.h"

#include <pthread.h>

#include <csignal>
#include <initializer_list>
#include <memory>

namespace nazar::py {
namespace {

unsigned long g_main_thread = 0;  // threading.main_thread().ident, taken at import

sigset_t sigint_only() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    return s;
}

}  // namespace

SigintBlocked::SigintBlocked() {
    const sigset_t s = sigint_only();
    pthread_sigmask(SIG_BLOCK, &s, &old_);
    (void)num_threads();  // starts nazar's pool the first time: its workers inherit the mask
}

SigintBlocked::~SigintBlocked() {
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void SigintBlocked::let_pending_in() {
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);  // a pending SIGINT is delivered now
    const sigset_t s = sigint_only();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

InterruptPoll::InterruptPoll(std::chrono::milliseconds every)
    : main_(PyThread_get_thread_ident() == g_main_thread), every_(every) {}

void InterruptPoll::check() {
    if (!main_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + every_;
    blocked_.let_pending_in();
    pb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw pb::error_already_set();
}

TrainInterrupt::TrainInterrupt() : poll_(std::chrono::milliseconds(0)) {
    if (poll_.main_)
        watcher_ = std::make_unique<SignalWatcher>(std::initializer_list<int>{SIGINT},
                                                   [this](int) { taken_.store(true); });
}

TrainInterrupt::~TrainInterrupt() {
    watcher_.reset();  // SIGINT stays blocked here (poll_) until poll_ goes
    if (taken_.exchange(false)) pthread_kill(pthread_self(), SIGINT);
}

void TrainInterrupt::check() {
    // Pending in this thread, where it is blocked: poll_ lets it in (to the process's handler,
    // Python's) between two updates.
    if (taken_.exchange(false)) pthread_kill(pthread_self(), SIGINT);
    poll_.check();
}

void init_interrupt(pb::module_& m) {
    g_main_thread =
        pb::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    pb::class_<CancelToken, std::shared_ptr<CancelToken>>(
        m, "CancelToken",
        "Stops a translation from another thread: pass it as translate(..., cancel=token); "
        "token.cancel() makes that call raise nazar.Cancelled within a decoder step.")
        .def(pb::init<>())
        .def(
            "cancel", [](CancelToken& t) { t.cancelled.store(true); },
            "Cancels the translations given this token (now, or as soon as they start).")
        .def_property_readonly(
            "cancelled", [](const CancelToken& t) { return t.cancelled.load(); },
            "Whether cancel() was called.")
        .def("__repr__", [](const CancelToken& t) {
            return t.cancelled.load() ? "nazar.CancelToken(cancelled)" : "nazar.CancelToken()";
        });
}

}  // namespace nazar::py
