// The guided alignment loss and its gradient (guided_alignment.h).
#include "nazar/models/guided_alignment.h"

#include "nazar/core/check.h"

#include <cmath>

namespace nazar {

GuidedAlignmentStats guided_alignment_loss(std::span<const DecoderStepCache> steps,
                                           std::span<const std::span<const AlignedPair>> rows,
                                           int T, int S, float weight, float grad_scale,
                                           TensorView d_alpha) {
    const int B = static_cast<int>(rows.size());
    NZ_CHECK(static_cast<int>(steps.size()) >= T, "guided alignment: {} steps for T = {}",
             steps.size(), T);
    const bool grads = d_alpha.numel() > 0;
    if (grads) NZ_CHECK_SHAPE(d_alpha, {T, B, S});
    GuidedAlignmentStats st;
    double sum = 0.0;  // Σ A log(α + ε) over the counted links
    for (int b = 0; b < B; ++b) {
        const std::span<const AlignedPair> links = rows[static_cast<std::size_t>(b)];
        for (std::size_t k = 0; k < links.size();) {
            const int t = links[k].tgt;  // links are sorted by target: [k, e) share t
            std::size_t e = k;
            while (e < links.size() && links[e].tgt == t) ++e;
            NZ_CHECK(t >= 0 && t < T, "guided alignment: target position {} outside [0, {})", t, T);
            const AttentionStepCache& c = steps[static_cast<std::size_t>(t)].attention;
            const int W = c.weights.dim(1);
            const float* wt = c.weights.data() + int64_t{b} * W;
            const int start = c.start[static_cast<std::size_t>(b)];
            const int count = c.count[static_cast<std::size_t>(b)];
            const double a = 1.0 / static_cast<double>(e - k);  // A_bti
            float* da = grads ? d_alpha.data() + (int64_t{t} * B + b) * S : nullptr;
            for (; k < e; ++k) {
                const int i = links[k].src;
                NZ_CHECK(i >= 0 && i < S, "guided alignment: source position {} outside [0, {})", i,
                         S);
                const int j = i - start;
                if (j < 0 || j >= count) continue;  // outside the window: α = 0, no gradient
                const double alpha = static_cast<double>(wt[j]) + kGuidedAlignmentEps;
                sum += a * std::log(alpha);
                if (grads) da[i] += static_cast<float>(-weight * grad_scale * a / alpha);
            }
            ++st.positions;
        }
    }
    st.loss = -static_cast<double>(weight) * sum;
    return st;
}

double guided_alignment_weight_at(double weight, double decay, int64_t decay_steps, int64_t step) {
    NZ_CHECK(decay_steps >= 1 && decay > 0.0 && decay <= 1.0,
             "guided alignment decay {} every {} updates", decay, decay_steps);
    if (decay == 1.0) return weight;
    return weight * std::pow(decay, static_cast<double>(step / decay_steps));
}

}  // namespace nazar
