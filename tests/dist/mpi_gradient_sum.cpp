// Run under mpirun by tests/dist/test_mpirun.sh (not a gtest: every rank is one process of the
// check). GradientSum with a 7-float bucket over tensors of 3, 5, 20, 2 and 9 floats exercises
// both paths (small tensors packed into a shared bucket, cut across buckets; large ones reduced
// in place in pieces): every gradient must be the sum over ranks, bit for bit (small integers),
// weight broadcast and the hash check must agree, and a drifted weight must be named.
#include "nazar/core/check.h"
#include "nazar/dist/data_parallel.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace nazar;

int main() {
    dist::Communicator& comm = dist::world();
    const int r = comm.rank(), n = comm.size();
    std::vector<Tensor> values, grads;
    for (int size : {3, 5, 20, 2, 9}) {
        values.emplace_back(Shape{size});
        grads.emplace_back(Shape{size});
    }
    ParamList params;
    for (std::size_t t = 0; t < values.size(); ++t) {
        for (int64_t i = 0; i < grads[t].numel(); ++i) {
            grads[t].data()[i] = static_cast<float>((r + 1) * (100 * static_cast<int>(t) + i));
            values[t].data()[i] = static_cast<float>(r * 1000 + i);  // differs per rank
        }
        params.push_back({fmt::format("p{}", t), &values[t], &grads[t]});
    }
    dist::GradientSum sum(comm, 7);
    sum(params);
    int bad = 0;
    const int ranks_sum = n * (n + 1) / 2;  // Σ (r + 1)
    for (std::size_t t = 0; t < grads.size(); ++t)
        for (int64_t i = 0; i < grads[t].numel(); ++i)
            if (grads[t].data()[i] !=
                static_cast<float>(ranks_sum * (100 * static_cast<int>(t) + i)))
                ++bad;
    if (bad)
        std::fprintf(stderr, "rank %d: %d gradient values are not the sum over ranks\n", r, bad);
    // Ranks hold different weights: the check must say so (when there is more than one rank).
    bool drift_seen = false;
    try {
        dist::check_weights_agree(comm, params, "in the test");
    } catch (const Error& e) {
        drift_seen = std::string(e.what()).find("rank(s) 1") != std::string::npos;
    }
    if (n > 1 && !drift_seen)
        std::fprintf(stderr, "rank %d: weight drift not reported\n", r), ++bad;
    dist::broadcast_weights(comm, params);
    try {
        dist::check_weights_agree(comm, params, "after the broadcast");
    } catch (const Error& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        ++bad;
    }
    if (values[2].data()[5] != 5.0f) std::fprintf(stderr, "rank %d: broadcast\n", r), ++bad;
    if (r == 0 && bad == 0)
        std::printf("ok: gradient sum over %d ranks in %lld all-reduces, drift named, broadcast\n",
                    n, static_cast<long long>(sum.calls()));
    return bad ? 1 : 0;
}
