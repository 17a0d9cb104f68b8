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
        {
            std::lock_guard lk(m_);
            body_ = &body;
            n_ = n;
            chunks_ = chunks;
            next_.store(0);
            pending_ = chunks;
            error_ = nullptr;
            generation_.fetch_add(1, std::memory_order_release);
            if (sleepers_ > 0) cv_.notify_all();
        }
        work();
        spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
        std::unique_lock lk(m_);
        done_cv_.wait(lk, [this] { return pending_.load() == 0; });
        body_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void loop() {
        uint64_t seen = 0;
        for (;;) {
            // Spin briefly before sleeping: the jobs of a training step (gemm blocks, gate and
            // attention loops) often come microseconds apart, and a futex wake-up costs about as
            // much as a small job. The busy wait is bounded by time (about 20 µs), not by a count:
            // `pause` takes ~10 cycles on some CPUs and ~65 on others.
            spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
            {
                std::unique_lock lk(m_);
                ++sleepers_;
                cv_.wait(lk, [&] { return stop_ || generation_.load() != seen; });
                --sleepers_;
                if (stop_) return;
                seen = generation_.load();
            }
            work();
        }
    }

    template <class F>
    static void spin_until(F&& done) {
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
        for (;;) {
            for (int i = 0; i < 16; ++i) {
                if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
            if (std::chrono::steady_clock::now() >= until) return;
        }
    }

    void work() {
        t_inside = true;
        for (;;) {
            const int64_t c = next_.fetch_add(1);
            if (c >= chunks_) break;
            const int64_t b = n_ * c / chunks_, e = n_ * (c + 1) / chunks_;
            try {
                (*body_)(b, e);
            } catch (...) {
                std::lock_guard lk(m_);
                if (!error_) error_ = std::current_exception();
            }
            std::lock_guard lk(m_);
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_cv_.notify_all();
        }
        t_inside = false;
    }

public:
    static thread_local bool t_inside;

private:
    std::mutex run_mutex_, m_;
    std::condition_variable cv_, done_cv_;
    std::vector<std::thread> workers_;
    static constexpr int kSpinMicros = 20;
    bool stop_ = false;
    int sleepers_ = 0;  // workers waiting on cv_ (guarded by m_)
    std::atomic<uint64_t> generation_{0};
    const std::function<void(int64_t, int64_t)>* body_ = nullptr;
    int64_t n_ = 0, chunks_ = 0;
    std::atomic<int64_t> pending_{0};
    std::atomic<int64_t> next_{0};
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
