// attn::row_context (row_equations.cpp): c = Σ_j wt[j] h_j in register blocks of 64 and 8
// columns, bit for bit what a run of axpys from c = 0 gives (each element accumulated in j order,
// one multiply-add per term), for widths with and without the blocks' tails; and within float
// rounding of an fp64 oracle.
#include "nazar/attention/row_equations.h"
#include "nazar/core/kernels.h"
#include "nazar/core/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace nazar {
namespace test_attention_row_context {
namespace {

TEST(AttentionRowContext, BitIdenticalToAxpysAndNearTheOracle) {
    Rng rng(9, 0);
    for (int C : {1, 6, 8, 13, 64, 75, 512, 517}) {
        for (int n : {0, 1, 3, 37}) {
            std::vector<float> wt(n), h(static_cast<std::size_t>(n) * C);
            for (float& x : wt) x = rng.uniform();
            for (float& x : h) x = 4 * rng.uniform() - 2;
            std::vector<float> want(C, 0.0f), got(C, -1.0f);
            for (int j = 0; j < n; ++j)
                kernels::axpy(C, wt[j], h.data() + static_cast<std::size_t>(j) * C, want.data());
            attn::row_context(wt.data(), n, h.data(), C, got.data());
            for (int i = 0; i < C; ++i) {
                EXPECT_EQ(got[i], want[i]) << "C=" << C << " n=" << n << " i=" << i;
                double o = 0;
                for (int j = 0; j < n; ++j)
                    o += static_cast<double>(wt[j]) * h[static_cast<std::size_t>(j) * C + i];
                EXPECT_NEAR(got[i], o, 1e-5 * (1 + n));
            }
        }
    }
}

}  // namespace
}  // namespace test_attention_row_context
}  // namespace nazar
