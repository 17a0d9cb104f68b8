// The signal watcher of a running training (nazar/train/signal_watcher.h): a signal sent to the
// process is taken on the watcher's thread, never by the handler in a thread that computes;
// threads started meanwhile inherit the mask; the mask is restored afterwards; end_by_signal
// ends the process by the signal even where it is blocked. SIGUSR1 stands in for SIGINT, so
// that the test runner's own Ctrl-C is left alone; both tests run in a child process.
#include "nazar/train/signal_watcher.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace nazar {
namespace test_train_signal_watcher {
namespace {

std::atomic<int> g_handled{0};
extern "C" void count_signal(int) {
    g_handled.fetch_add(1);
}

bool blocked_here(int sig) {
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    return sigismember(&now, sig) == 1;
}

// Polls `done` for up to 10 s (a loaded machine), true once it holds.
template <class F>
bool eventually(F&& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return done();
}

// The checks of the test below, in a child process with one thread (a pool started by another
// test would take the signal through the handler): "" when all hold, else the first failure.
const char* watch_in_child() {
    struct sigaction sa {};
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, nullptr) != 0) return "sigaction failed";
    if (blocked_here(SIGUSR1)) return "blocked before";
    std::atomic<int> taken{0};
    std::atomic<bool> on_this_thread{false};
    const pthread_t self = pthread_self();
    {
        const SignalWatcher watcher({SIGUSR1}, [&](int sig) {
            if (pthread_equal(pthread_self(), self)) on_this_thread = true;
            if (sig == SIGUSR1) taken.fetch_add(1);
        });
        if (!blocked_here(SIGUSR1)) return "not blocked while watching";
        bool inherited = false;  // a pool started now gets the mask
        std::thread([&] { inherited = blocked_here(SIGUSR1); }).join();
        if (!inherited) return "a new thread did not inherit the mask";
        for (int i = 1; i <= 3; ++i) {
            if (kill(getpid(), SIGUSR1) != 0) return "kill failed";
            if (!eventually([&] { return taken.load() == i; })) return "the watcher missed one";
        }
        if (g_handled.load() != 0) return "the handler ran while watching";
        if (on_this_thread.load()) return "on_signal ran on the computing thread";
    }
    if (blocked_here(SIGUSR1)) return "the mask was not restored";
    if (kill(getpid(), SIGUSR1) != 0) return "kill failed";
    if (!eventually([] { return g_handled.load() == 1; })) return "the handler did not run after";
    if (taken.load() != 3) return "the watcher took one after it stopped";
    return "";
}

TEST(SignalWatcher, TakesTheSignalOnItsOwnThreadAndRestoresTheMask) {
    EXPECT_EXIT(
        {
            const char* failure = watch_in_child();
            std::fprintf(stderr, "watcher: %s\n", *failure ? failure : "all checks hold");
            std::fflush(stderr);
            std::_Exit(*failure ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "watcher: all checks hold");
}

TEST(SignalWatcher, EndBySignalEndsTheProcessEvenWhereTheSignalIsBlocked) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // async-signal-safe calls only from here
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &s, nullptr);
        ::signal(SIGTERM, SIG_IGN);  // end_by_signal restores the default action
        end_by_signal(SIGTERM);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace test_train_signal_watcher
}  // namespace nazar
