// The one ensemble setting the application API (translator.h) shares with decode/ensemble.h,
// kept apart so that translator.h does not pull in the model headers.
#pragma once

namespace nazar {

// Ensemble attention (alignments, coverage penalty, replace_unk): a member index (0-based), or
// this value for the mean of every member's attention.
inline constexpr int kMeanAttention = -1;

}  // namespace nazar
