// Data-parallel training on top of a Communicator (docs/distributed.md): which rows of a global
// batch a rank trains on, the gradient sum over ranks in buckets, the weight broadcast and the
// weight-hash check. Nothing here names MPI.
//
// The global batch: every rank runs the same Batcher over the whole corpus with the global batch
// size (batch_size · accumulate · ranks, or the same multiple of batch_tokens), so every rank
// holds the same global batch and counts its target tokens without communication. The batch's
// rows are cut into `accumulate · ranks` contiguous parts with shard_rows(); rank r trains parts
// r·K .. r·K+K-1, one micro-batch each. The data order is thus that of one process with the
// global batch, for any split of the multiple into ranks × accumulate.
#pragma once

#include "nazar/core/params.h"
#include "nazar/data/batcher.h"
#include "nazar/dist/communicator.h"

#include <cstdint>
#include <vector>

namespace nazar::dist {

struct RowRange {
    int begin = 0, end = 0;  // [begin, end)
    int size() const { return end - begin; }
};

// Part `part` of `rows` rows cut into `parts` contiguous, near-equal parts (the first
// rows % parts parts get one row more). Parts may be empty when rows < parts.
RowRange shard_rows(int rows, int parts, int part);

// Rows [r.begin, r.end) of `b`, padded to the longest source and target among them.
Batch batch_rows(const Batch& b, RowRange r);

// Sums every parameter's gradient over all ranks, in place, in buckets of `bucket_floats`
// floats (small tensors are copied into a shared bucket; one of at least half a bucket is reduced
// in place, in bucket-sized pieces): one all-reduce per bucket or piece. A barrier
// first separates the time spent waiting for the slowest rank from the transfer itself (one
// latency per update).
class GradientSum {
public:
    explicit GradientSum(Communicator& comm, std::size_t bucket_floats = std::size_t{1} << 20)
        : comm_(comm), bucket_floats_(bucket_floats) {}
    void operator()(const ParamList& params);
    // All-reduce calls and bytes (per rank, payload) so far: for the scaling model's check.
    int64_t calls() const { return calls_; }
    int64_t bytes() const { return bytes_; }
    double wait_seconds() const { return wait_s_; }  // in the barrier: other ranks still computing
    double seconds() const { return seconds_; }      // after it: pack, all-reduce, unpack

private:
    Communicator& comm_;
    std::size_t bucket_floats_;
    std::vector<float> bucket_;
    int64_t calls_ = 0, bytes_ = 0;
    double wait_s_ = 0, seconds_ = 0;
};

// A cheap hash of every parameter value's bits (order and names included).
uint64_t weights_hash(const ParamList& params);

// Rank 0's weights to every rank.
void broadcast_weights(Communicator& comm, const ParamList& params);

// Compares weights_hash over the ranks; throws Error naming the ranks whose weights differ from
// rank 0's (`when` says where, e.g. "after step 100").
void check_weights_agree(Communicator& comm, const ParamList& params, const std::string& when);

}  // namespace nazar::dist
