// Signals of a running training (Ctrl-C's SIGINT, SIGTERM), taken by a watcher thread and never
// delivered into a computing thread. Used by `nazar train` (cli/cmd_train.cpp: the first signal
// stops at an update boundary with last.safetensors written, a second kills) and by
// `nazar.train()` (python/src/interrupt.cpp: the signal goes to Python's handler between two
// updates).
//
// Why: a signal delivered into a training step, between two instructions of a product,
// corrupted the heap about once in 30-150 interrupts on the VMs measured, even with a handler
// that only stored an atomic flag (docs/reliability.md, "Known issues"). So no computing thread
// may take one:
//   - the constructor blocks `signals` in the calling thread; construct it before the worker
//     pool's threads (set_num_threads, num_threads) and the GEMM library's are started from that
//     thread, so that they inherit the mask;
//   - a watcher thread started by it (with the mask too) waits for them (sigtimedwait) and calls
//     `on_signal(sig)` on that thread for each one taken, in arrival order;
//   - the destructor stops and joins the watcher (within a tick, 20 ms), then restores the
//     calling thread's mask: a signal that arrives after the watcher stopped stays pending until
//     then and goes to the process's handler (the sigaction disposition) in that thread.
// A thread started before the watcher without the mask can still take a signal, through the
// process's handler: a front end that installs one keeps it doing what on_signal does.
//
// on_signal runs on the watcher thread, concurrently with the training: it may set atomics and
// call end_by_signal; it must not block for long (no other signal is taken meanwhile).
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <initializer_list>
#include <thread>

namespace nazar {

class SignalWatcher {
public:
    SignalWatcher(std::initializer_list<int> signals, std::function<void(int sig)> on_signal);
    ~SignalWatcher();
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;

private:
    void watch();

    sigset_t set_{}, old_{};
    std::function<void(int)> on_signal_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Ends the process now by `sig`'s default action (termination, as a signal: the parent sees it),
// from any thread, whatever the thread's mask. Async-signal-safe: a signal handler may call it.
[[noreturn]] void end_by_signal(int sig);

}  // namespace nazar
