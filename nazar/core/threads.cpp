#include "nazar/core/threads.h"

#include "nazar/core/blas.h"
#include "nazar/core/check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace nazar {
namespace {

// A fixed pool: workers sleep on a condition variable between jobs. A job is a range cut into
// `chunks` equal pieces; workers and the caller take piece indices from an atomic counter.
class Pool {
public:
    ~Pool() { resize(1); }

    void resize(int n) {
        std::lock_guard run(run_mutex_);
        {
            std::lock_guard lk(m_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
        stop_ = false;
        try {
            for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
        } catch (const std::system_error& e) {  // EAGAIN: process/thread or memory limits
            size_ = static_cast<int>(workers_.size()) + 1;  // the pool works with what started
            throw Error(fmt::format(
                "cannot start {} threads ({} started: {}); give a smaller --threads or threads:", n,
                size_, e.what()));
        }
        size_ = n;
    }

    int size() const { return size_; }

    void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& body) {
        std::lock_guard run(run_mutex_);  // one job at a time
        Job job{&body, n, chunks, 0};
        {
            std::lock_guard lk(m_);
            job.generation = generation_.load() + 1;
            job_ = job;
            pending_ = chunks;
            error_ = nullptr;
            ticket_.store(ticket(job.generation, 0));
            generation_.store(job.generation, std::memory_order_release);
            if (sleepers_ > 0) cv_.notify_all();
        }
        work(job);
        wait_for([&] { return pending_.load(std::memory_order_acquire) == 0; });
        std::unique_lock lk(m_);
        done_cv_.wait(lk, [this] { return pending_.load() == 0; });
        job_.body = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    // A job as its threads see it. A worker copies it under m_ when it picks the job up, and
    // claims pieces from ticket_, which carries the job's generation beside the next piece:
    // a worker still leaving an earlier job (preempted after its last piece, while the caller
    // has returned and started the next job) cannot take a piece of a job it has not copied.
    // (With one counter for all jobs such a worker could compare an old job's piece number
    // against a new job's piece count, run a piece twice or lose its count: a hang, seen with
    // more pieces than threads.)
    struct Job {
        const std::function<void(int64_t, int64_t)>* body;
        int64_t n, chunks;
        uint64_t generation;
    };

    static uint64_t ticket(uint64_t generation, uint64_t piece) {
        return (generation << 32) | piece;
    }

    void loop() {
        Job job{};  // the last job this worker picked up (its generation: the one it has seen)
        for (;;) {
            // Wait a while before sleeping (wait_for): the jobs of a training or decoding step
            // come microseconds apart, and a futex wake-up costs more than a small job. The wait
            // is bounded by time, not by a count: `pause` takes ~10 cycles on some CPUs and ~65
            // on others.
            wait_for([&] { return generation_.load(std::memory_order_acquire) != job.generation; });
            {
                std::unique_lock lk(m_);
                ++sleepers_;
                cv_.wait(lk, [&] { return stop_ || generation_.load() != job.generation; });
                --sleepers_;
                if (stop_) return;
                job = job_;
            }
            work(job);
        }
    }

    // Wait until `done()`, or give up after kWaitMicros: busy for the first kSpinMicros (`pause`
    // between checks), then yielding the core between checks. The busy phase catches the jobs
    // of a step that come microseconds apart; the yielding phase catches those a serial stretch
    // apart (a decoding step's attention and log-softmax between its products, 20-100 µs) at
    // the cost of a `sched_yield` per check, and hands the core to another process's thread
    // when the machine is oversubscribed. A futex sleep and wake-up after the wait costs the
    // waking thread a system call and the woken one 10-50 µs on a virtual machine: measured on
    // a greedy batch-1 decode at 20 µs of busy wait alone, 1.2 sleeps per step and a step 10%
    // slower (docs/performance.md, "The pool's wait").
    template <class F>
    static void wait_for(F&& done) {
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        const auto spin_until = start + std::chrono::microseconds(kSpinMicros);
        const auto yield_until = start + std::chrono::microseconds(kWaitMicros);
        for (;;) {
            for (int i = 0; i < 16; ++i) {
                if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#elif defined(__aarch64__)
                __asm__ __volatile__("yield");  // Arm's spin-wait hint, as pause is x86's
#endif
            }
            if (Clock::now() >= spin_until) break;
        }
        for (;;) {
            if (done()) return;
            std::this_thread::yield();
            if (Clock::now() >= yield_until) return;
        }
    }

    // Claims the next piece of `job` (false when the job has none left or has been replaced).
    bool claim(const Job& job, int64_t& piece) {
        uint64_t t = ticket_.load(std::memory_order_acquire);
        for (;;) {
            if (t >> 32 != (job.generation & 0xffffffffu)) return false;
            piece = static_cast<int64_t>(t & 0xffffffffu);
            if (piece >= job.chunks) return false;
            if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) return true;
        }
    }

    void work(const Job& job) {
        t_inside = true;
        int64_t c = 0;
        while (claim(job, c)) {
            const int64_t b = job.n * c / job.chunks, e = job.n * (c + 1) / job.chunks;
            try {
                (*job.body)(b, e);
            } catch (...) {
                std::lock_guard lk(m_);
                if (!error_) error_ = std::current_exception();
            }
            // The last piece wakes the caller if it went to sleep. Taking m_ before the notify
            // orders it after the caller's check of pending_ (made under m_): no lost wake-up.
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                std::lock_guard lk(m_);
                done_cv_.notify_all();
            }
        }
        t_inside = false;
    }

public:
    static thread_local bool t_inside;

private:
    std::mutex run_mutex_, m_;
    std::condition_variable cv_, done_cv_;
    std::vector<std::thread> workers_;
    static constexpr int kSpinMicros = 20, kWaitMicros = 200;
    bool stop_ = false;
    int sleepers_ = 0;  // workers waiting on cv_ (guarded by m_)
    std::atomic<uint64_t> generation_{0};
    Job job_{};                        // the current job (guarded by m_)
    std::atomic<uint64_t> ticket_{0};  // ticket(generation, next piece) of the current job
    std::atomic<int64_t> pending_{0};
    std::exception_ptr error_;
    int size_ = 1;
};

thread_local bool Pool::t_inside = false;

int default_threads() {
    return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
    static Pool p;
    static bool init = [] {
        p.resize(default_threads());
        blas_set_num_threads(default_threads());
        return true;
    }();
    (void)init;
    return p;
}

}  // namespace

void set_num_threads(int n) {
    if (n <= 0) n = default_threads();
    if (n > kMaxThreads)
        throw UsageError(fmt::format("threads: {} is above the maximum of {}", n, kMaxThreads));
    pool().resize(n);
    blas_set_num_threads(n);
}

int num_threads() {
    return pool().size();
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    grain = std::max<int64_t>(grain, 1);
    Pool& p = pool();
    const int64_t chunks = std::min<int64_t>(p.size(), n / grain);
    if (chunks < 2 || Pool::t_inside) {
        body(0, n);
        return;
    }
    p.run(n, chunks, body);
}

}  // namespace nazar
