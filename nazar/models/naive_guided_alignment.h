// The oracle of the guided alignment loss (guided_alignment.h), in double precision straight
// from docs/spec.md §7 "Guided alignment": dense weights α (T, B, S) by source position, each row's
// links as given (any order, duplicates counted once), A_bti = 1/n_bt. A link whose α is exactly 0
// (outside a local window, or padding: inside a window α > 0) is skipped, as the production loss
// skips links outside the window. Shares no code with guided_alignment.cpp; the tests compare the
// two and take central differences of this one (tests/unit/test_guided_alignment.cpp).
#pragma once

#include "nazar/data/alignment_file.h"

#include <span>
#include <vector>

namespace nazar::naive {

// L_ga = −λ Σ_b Σ_t Σ_i A_bti log(α_bti + ε) with ε = 1e-6. d_alpha: (T·B·S) out, dL/dα (no
// grad_scale), when not null.
double guided_alignment_loss(std::span<const double> alpha, int T, int B, int S,
                             std::span<const std::vector<AlignedPair>> rows, double lambda,
                             std::vector<double>* d_alpha = nullptr);

}  // namespace nazar::naive
