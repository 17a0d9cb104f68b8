// Groups of a beam search step's sentences (beam_groups.h).
#include "nazar/decode/beam_groups.h"

#include <algorithm>
#include <cstdint>

namespace nazar::detail {

int group_target_rows(const BeamOptions& o, int V) {
    if (o.output_group_rows >= 0) return o.output_group_rows;
    return std::max(1, (1 << 21) / (4 * std::max(1, V)));
}

void form_groups(const std::vector<int>& first, int N, int target, int min_rows, int threads,
                 std::vector<int>& gs) {
    gs.clear();
    const int n = static_cast<int>(first.size()), T = std::max(1, threads);
    if (target <= 0 || min_rows <= 0 || n < 2) return;
    int want = (N + target - 1) / target;
    want = std::min(n, (want + T - 1) / T * T);
    for (int g = 0, i = 0; g < want && i < n; ++g) {
        gs.push_back(i);
        const int64_t end = static_cast<int64_t>(N) * (g + 1) / want;
        do ++i;  // at least one sentence
        while (i < n && first[i] < end);
    }
    const auto rows = [&](std::size_t g) {
        return (g + 1 < gs.size() ? first[gs[g + 1]] : N) - first[gs[g]];
    };
    for (std::size_t g = 0; g < gs.size();)  // a short group joins the one before (or after)
        if (gs.size() > 1 && rows(g) < min_rows)
            gs.erase(gs.begin() + static_cast<std::ptrdiff_t>(g == 0 ? 1 : g));
        else
            ++g;
    if (gs.size() < 2) return gs.clear();
    gs.push_back(n);
}

}  // namespace nazar::detail
