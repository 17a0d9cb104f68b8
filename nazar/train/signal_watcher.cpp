#include "nazar/train/signal_watcher.h"

#include <pthread.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <utility>

namespace nazar {

SignalWatcher::SignalWatcher(std::initializer_list<int> signals,
                             std::function<void(int sig)> on_signal)
    : on_signal_(std::move(on_signal)) {
    sigemptyset(&set_);
    for (const int s : signals) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this] { watch(); });  // inherits the mask: sigtimedwait needs it
}

SignalWatcher::~SignalWatcher() {
    stop_.store(true);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void SignalWatcher::watch() {
    const timespec tick{.tv_sec = 0, .tv_nsec = 20'000'000};
    while (!stop_.load()) {
        const int sig = sigtimedwait(&set_, nullptr, &tick);
        if (sig > 0) on_signal_(sig);  // else EAGAIN (the tick) or EINTR
    }
}

void end_by_signal(int sig) {
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(sig);  // to this thread, where it is not blocked: the default action ends the process
    std::_Exit(128 + sig);  // not reached for a terminating signal
}

}  // namespace nazar
