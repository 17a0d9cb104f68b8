// The process group of data-parallel training (docs/distributed.md, DESIGN.md §7).
//
// The trainer sees this small interface, never MPI: rank/size, in-place sums over all ranks,
// broadcast from rank 0, gather of one value per rank, barrier, abort. world() is the group this
// process belongs to:
//   - started by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment) in a
//     build with MPI (CMake found it: NAZAR_HAVE_MPI): MPI_COMM_WORLD, initialised on the first
//     call (MPI_Init_thread, FUNNELED: only the calling thread talks to MPI) and finalised at
//     exit;
//   - otherwise a single process (rank 0 of 1): every collective is the identity.
// Started by mpirun in a build without MPI, world() throws a UsageError that says so (the ranks
// would otherwise each train the whole model alone, N times over).
//
// Hangs: every collective runs under a watchdog. When one has waited longer than timeout()
// seconds (a rank died without the launcher noticing, or is stuck), this process prints one line
// naming its rank, the operation and the wait, and exits with status 70; mpirun then ends the
// other ranks. A rank that exits (or is killed) is noticed by mpirun itself, which ends the job.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace nazar::dist {

// True when the environment says an MPI launcher started this process (any world size).
bool launched_by_mpi();
// True when this build links MPI.
bool built_with_mpi();

class Communicator {
public:
    virtual ~Communicator() = default;
    int rank() const { return rank_; }
    int size() const { return size_; }
    bool parallel() const { return size_ > 1; }

    // Element-wise sum over all ranks, in place; every rank gets the same result. `what` names
    // the operation in a watchdog message.
    virtual void all_reduce_sum(std::span<float> x, const char* what) = 0;
    virtual void all_reduce_sum(std::span<double> x, const char* what) = 0;
    // Rank 0's values to every rank.
    virtual void broadcast(std::span<float> x, const char* what) = 0;
    virtual void broadcast(std::span<double> x, const char* what) = 0;
    // One value from every rank, in rank order, on every rank.
    virtual std::vector<uint64_t> all_gather(uint64_t value, const char* what) = 0;
    virtual void barrier(const char* what) = 0;
    // Ends every rank of the job with `code` (after this process printed why).
    [[noreturn]] virtual void abort(int code) = 0;

    // Seconds a collective may wait before the watchdog ends this process (0 = no limit).
    void set_timeout(double seconds) { timeout_s_ = seconds; }
    double timeout() const { return timeout_s_; }

protected:
    int rank_ = 0, size_ = 1;
    double timeout_s_ = 0;
};

Communicator& world();

// A single-process group (rank 0 of 1), for tests and for builds without MPI.
std::unique_ptr<Communicator> make_single();

}  // namespace nazar::dist
