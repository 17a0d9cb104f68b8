// The process group (communicator.h): MPI_COMM_WORLD when built with MPI and started by mpirun,
// else a single process.
#include "nazar/dist/communicator.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#if NAZAR_HAVE_MPI
#include <mpi.h>
#endif

namespace nazar::dist {
namespace {

// The world size the launcher announced: -1 when it names none (PMIx alone), 0 when no launcher.
int launcher_world_size() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(var); v && *v) return std::max(1, std::atoi(v));
    if (const char* v = std::getenv("PMIX_RANK"); v && *v) return -1;
    return 0;
}

class SingleProcess final : public Communicator {
public:
    void all_reduce_sum(std::span<float>, const char*) override {}
    void all_reduce_sum(std::span<double>, const char*) override {}
    void broadcast(std::span<float>, const char*) override {}
    void broadcast(std::span<double>, const char*) override {}
    std::vector<uint64_t> all_gather(uint64_t value, const char*) override { return {value}; }
    void barrier(const char*) override {}
    [[noreturn]] void abort(int code) override {
        std::fflush(stderr);
        std::_Exit(code);
    }
};

#if NAZAR_HAVE_MPI

constexpr int kWatchdogExit = 70;  // EX_SOFTWARE

// MPI counts are int: large buffers go in pieces.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

class Mpi final : public Communicator {
public:
    Mpi() {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        watchdog_ = std::thread([this] { watch(); });
    }
    ~Mpi() override {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        watchdog_.join();
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
    }
    Mpi(const Mpi&) = delete;
    Mpi& operator=(const Mpi&) = delete;

    void all_reduce_sum(std::span<float> x, const char* what) override {
        Guard g(*this, what);
        for (std::size_t i = 0; i < x.size(); i += kMaxCount)
            MPI_Allreduce(MPI_IN_PLACE, x.data() + i,
                          static_cast<int>(std::min(kMaxCount, x.size() - i)), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
    }
    void all_reduce_sum(std::span<double> x, const char* what) override {
        Guard g(*this, what);
        for (std::size_t i = 0; i < x.size(); i += kMaxCount)
            MPI_Allreduce(MPI_IN_PLACE, x.data() + i,
                          static_cast<int>(std::min(kMaxCount, x.size() - i)), MPI_DOUBLE, MPI_SUM,
                          MPI_COMM_WORLD);
    }
    void broadcast(std::span<float> x, const char* what) override {
        Guard g(*this, what);
        for (std::size_t i = 0; i < x.size(); i += kMaxCount)
            MPI_Bcast(x.data() + i, static_cast<int>(std::min(kMaxCount, x.size() - i)), MPI_FLOAT,
                      0, MPI_COMM_WORLD);
    }
    void broadcast(std::span<double> x, const char* what) override {
        Guard g(*this, what);
        for (std::size_t i = 0; i < x.size(); i += kMaxCount)
            MPI_Bcast(x.data() + i, static_cast<int>(std::min(kMaxCount, x.size() - i)), MPI_DOUBLE,
                      0, MPI_COMM_WORLD);
    }
    std::vector<uint64_t> all_gather(uint64_t value, const char* what) override {
        Guard g(*this, what);
        std::vector<uint64_t> out(static_cast<std::size_t>(size_));
        MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
        return out;
    }
    void barrier(const char* what) override {
        Guard g(*this, what);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    [[noreturn]] void abort(int code) override {
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);
    }

private:
    using Clock = std::chrono::steady_clock;
    // Marks the calling thread as inside a collective for the watchdog.
    struct Guard {
        Guard(Mpi& m, const char* what) : m(m) {
            std::lock_guard lock(m.mutex_);
            m.op_ = what;
            m.since_ = Clock::now();
            m.busy_ = true;
        }
        ~Guard() {
            std::lock_guard lock(m.mutex_);
            m.busy_ = false;
        }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        Mpi& m;
    };

    void watch() {
        std::unique_lock lock(mutex_);
        while (!stop_) {
            wake_.wait_for(lock, std::chrono::milliseconds(250));
            if (stop_ || !busy_ || timeout_s_ <= 0) continue;
            const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
            if (waited <= timeout_s_) continue;
            std::fprintf(stderr,
                         "error: rank %d of %d: %s has waited %.0f s for the other ranks "
                         "(dist_timeout %g s): a rank died or hangs; ending this rank (the last "
                         "checkpoint is intact; continue with --resume)\n",
                         rank_, size_, op_, waited, timeout_s_);
            std::fflush(stderr);
            std::_Exit(kWatchdogExit);
        }
    }

    std::thread watchdog_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false, busy_ = false;
    const char* op_ = "";
    Clock::time_point since_;
};

#endif

}  // namespace

bool launched_by_mpi() {
    return launcher_world_size() != 0;
}

bool built_with_mpi() {
    return NAZAR_HAVE_MPI != 0;
}

std::unique_ptr<Communicator> make_single() {
    return std::make_unique<SingleProcess>();
}

Communicator& world() {
    static const std::unique_ptr<Communicator> w = []() -> std::unique_ptr<Communicator> {
        const int n = launcher_world_size();
#if NAZAR_HAVE_MPI
        if (n != 0) return std::make_unique<Mpi>();
#else
        if (n != 1 && n != 0)
            throw UsageError(fmt::format(
                "this nazar was built without MPI, but an MPI launcher started it ({}): "
                "data-parallel training with mpirun is not supported in this build; install "
                "libopenmpi-dev (scripts/install-deps.sh) and rebuild, or run without mpirun",
                n > 0 ? fmt::format("world size {}", n) : std::string("PMIX_RANK is set")));
#endif
        return make_single();
    }();
    return *w;
}

}  // namespace nazar::dist
