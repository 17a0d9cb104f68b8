// One thread setting for all of nazar: BLAS and our own loops (docs/design.md §4).
//
// set_num_threads(n) sizes both the GEMM library and the pool behind parallel_for; the default is
// the number of cores. parallel_for splits [0, n) into contiguous chunks in a fixed way that
// depends only on n, grain and the thread count, so results are deterministic for a given
// thread count. A parallel_for reached from inside a body (directly, or through gemm(), which
// splits large products over this pool) runs inline on that thread as one chunk, so nesting is
// safe and never oversubscribes; with NAZAR_GEMM_THREADS=blas (the library's own threads, for
// comparison only) a gemm() inside a body would start the library's threads on top of ours.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace nazar {

// The most threads set_num_threads accepts (UsageError above it). A count the system cannot
// start (thread or memory limits) is a one-line nazar::Error naming the count.
inline constexpr int kMaxThreads = 1024;

void set_num_threads(int n);  // n <= 0: number of cores
int num_threads();

// Calls body(begin, end) on disjoint chunks covering [0, n); runs inline when n < 2 * grain
// or with one thread. Exceptions thrown by the body are rethrown in the caller.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Copies and fills of at least this many floats (256 KiB) between the products of a step are
// worth splitting over the pool: on one core they take long enough for the worker to fall asleep
// (docs/performance.md, "Serial stretches between a step's products").
inline constexpr int64_t kParallelCopyFloats = 65536;

// body(r0, r1) over rows [0, rows) of row_floats floats each: over the pool in pieces of at
// least 64 KiB when they hold kParallelCopyFloats or more, else on this thread in one call.
inline void for_rows(int64_t rows, int64_t row_floats,
                     const std::function<void(int64_t, int64_t)>& body) {
    if (rows * row_floats >= kParallelCopyFloats)
        parallel_for(rows, std::max<int64_t>(1, kParallelCopyFloats / 4 / row_floats), body);
    else
        body(0, rows);
}

}  // namespace nazar
