// NAZAR_GEMM_PROFILE=1: every gemm_raw / gemm_xwt call is timed and tallied by (transposes, M, N,
// K); at exit the FLOPs executed in all and the 40 shapes that took longest are printed to stderr
// with calls, time, share and GFLOP/s, and for the products timed with profile_start also the
// process CPU time they took and GFLOP per CPU-second (what a loaded machine changes least;
// docs/performance.md). Off (the default) it costs one test of a pointer per call.
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/internal.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace nazar::gemm_detail {

class GemmProfile {
public:
    // cpu_seconds < 0: not measured (the caller timed wall time only)
    void add(bool ta, bool tb, int M, int N, int K, double seconds, double cpu_seconds, bool packed,
             bool bf16) {
        std::lock_guard lk(m_);
        auto& e = t_[{ta, tb, M, N, K, packed, bf16}];
        ++e.calls;
        e.seconds += seconds;
        if (cpu_seconds >= 0) {
            e.cpu_seconds += cpu_seconds;
            ++e.cpu_calls;
        }
    }
    ~GemmProfile() {
        std::lock_guard lk(m_);
        double total = 0, cpu = 0, gflop = 0;
        std::vector<std::pair<double, std::string>> rows;
        for (const auto& [k, e] : t_) {
            total += e.seconds;
            cpu += e.cpu_seconds;
            gflop += 2e-9 * std::get<2>(k) * std::get<3>(k) * std::get<4>(k) *
                     static_cast<double>(e.calls);
        }
        for (const auto& [k, e] : t_) rows.emplace_back(e.seconds, row(k, e, total));
        std::sort(rows.rbegin(), rows.rend());
        std::fprintf(stderr,
                     "gemm profile: %.1f ms (%.1f ms of process CPU time) in %zu shapes, %.3f "
                     "GFLOP executed\n",
                     1e3 * total, 1e3 * cpu, rows.size(), gflop);
        for (std::size_t i = 0; i < rows.size() && i < 40; ++i)
            std::fprintf(stderr, "%s\n", rows[i].second.c_str());
    }

private:
    struct Entry {
        int64_t calls = 0, cpu_calls = 0;
        double seconds = 0, cpu_seconds = 0;
    };
    using Key = std::tuple<bool, bool, int, int, int, bool, bool>;
    static std::string row(const Key& k, const Entry& e, double total) {
        const auto& [ta, tb, M, N, K, packed, bf16] = k;
        const double flop = 2e-9 * M * N * K;
        const double gflops = e.seconds > 0 ? flop * static_cast<double>(e.calls) / e.seconds : 0.0;
        const std::string per_cpu =
            e.cpu_calls > 0 && e.cpu_seconds > 0
                ? fmt::format(" {:7.1f} per CPU-s",
                              flop * static_cast<double>(e.cpu_calls) / e.cpu_seconds)
                : fmt::format(" {:>7} per CPU-s", "-");
        return fmt::format(
            "{:9.1f} ms {:5.1f}% {:8} calls  {}{} M {:5} N {:5} K {:5} {:7.1f} GFLOP/s{}{}{}",
            1e3 * e.seconds, total > 0 ? 100 * e.seconds / total : 0.0, e.calls, ta ? 'T' : 'N',
            tb ? 'T' : 'N', M, N, K, gflops, per_cpu,
            packed ? "  (x Wᵀ through the packed per-batch Wᵀ)" : "", bf16 ? "  (bf16)" : "");
    }
    std::mutex m_;
    std::map<Key, Entry> t_;
};

GemmProfile* profile() {
    static const std::unique_ptr<GemmProfile> p{switches().gemm_profile ? new GemmProfile
                                                                        : nullptr};
    return p.get();
}

void profile_add(GemmProfile* p, bool ta, bool tb, int M, int N, int K, double seconds, bool packed,
                 bool bf16) {
    p->add(ta, tb, M, N, K, seconds, -1.0, packed, bf16);
}

namespace {
double wall_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace

ProfileStart profile_start() {
    return {wall_now(), cpu_now()};
}

void profile_add(GemmProfile* p, bool ta, bool tb, int M, int N, int K, const ProfileStart& start,
                 bool packed, bool bf16) {
    const double cpu = cpu_now(), wall = wall_now();
    p->add(ta, tb, M, N, K, wall - start.wall, cpu - start.cpu, packed, bf16);
}

}  // namespace nazar::gemm_detail
