// The guided alignment oracle (naive_guided_alignment.h).
#include "nazar/models/naive_guided_alignment.h"

#include "nazar/core/check.h"

#include <cmath>
#include <set>
#include <utility>

namespace nazar::naive {

double guided_alignment_loss(std::span<const double> alpha, int T, int B, int S,
                             std::span<const std::vector<AlignedPair>> rows, double lambda,
                             std::vector<double>* d_alpha) {
    NZ_CHECK(static_cast<int64_t>(alpha.size()) == int64_t{T} * B * S &&
                 static_cast<int>(rows.size()) == B,
             "naive guided alignment: sizes");
    if (d_alpha) d_alpha->assign(alpha.size(), 0.0);
    const double eps = 1e-6;
    double loss = 0.0;
    for (int b = 0; b < B; ++b) {
        std::set<std::pair<int, int>> links;  // (t, i)
        for (const AlignedPair& l : rows[static_cast<std::size_t>(b)]) links.insert({l.tgt, l.src});
        for (int t = 0; t < T; ++t) {
            int n = 0;
            for (int i = 0; i < S; ++i) n += links.count({t, i}) > 0 ? 1 : 0;
            for (int i = 0; i < S; ++i) {
                if (links.count({t, i}) == 0) continue;
                const std::size_t k = (static_cast<std::size_t>(t) * B + b) * S + i;
                if (alpha[k] == 0.0) continue;
                const double A = 1.0 / n;
                loss -= lambda * A * std::log(alpha[k] + eps);
                if (d_alpha) (*d_alpha)[k] = -lambda * A / (alpha[k] + eps);
            }
        }
    }
    return loss;
}

}  // namespace nazar::naive
