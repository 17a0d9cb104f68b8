#include "nazar/decode/greedy.h"

namespace nazar {
std::vector<GreedyResult> greedy_decode(Seq2Seq&, std::span<const int32_t>, std::span<const int>, int,
                                        const GreedyOptions&) {
    NZ_FAIL("not yet");
}
}  // namespace nazar
