// Beam search's grouped output (BeamOptions::output_group_rows, beam_search.cpp): which rows of
// a step form each group. Internal to nazar/decode; here for its unit tests.
#pragma once

#include "nazar/decode/beam_search.h"

#include <vector>

namespace nazar::detail {

// Rows per group for BeamOptions::output_group_rows and a vocabulary of V (-1: about 2 MB of
// logits rows, the L2 of a core of the Intel machine in docs/performance.md; 65 rows at
// V = 8000, where 64 measured best).
int group_target_rows(const BeamOptions& o, int V);

// Groups of consecutive sentences for a step of N rows whose sentences start at rows `first`
// (increasing, first[0] = 0): group g is sentences gs[g] .. gs[g + 1] − 1. As many groups as
// N / target rows, rounded up to a multiple of `threads`, cut at the first sentence boundary at
// or after each equal share of the rows; a group under min_rows rows joins its neighbour. No
// group is empty. Fewer than two groups (or target or min_rows <= 0): gs is empty, the step
// runs ungrouped.
void form_groups(const std::vector<int>& first, int N, int target, int min_rows, int threads,
                 std::vector<int>& gs);

}  // namespace nazar::detail
