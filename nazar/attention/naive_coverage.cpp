// Double-precision oracle of coverage attention (naive_coverage.h).
#include "nazar/attention/naive_coverage.h"

#include <algorithm>
#include <cmath>

namespace nazar::attn::naive {

namespace {
// e = Σ_a v_a tanh(W_q[a] · q + W_k[a] · h + w_c[a] cov)
double coverage_score(const Attention& att, const float* q, const float* h, double cov) {
    const AttentionParams& p = att.params;
    const int H = att.cfg.query_size, C = att.cfg.context_size;
    double e = 0;
    for (int a = 0; a < att.cfg.attention_size; ++a) {
        double pre = static_cast<double>(p.w_c[a]) * cov;
        for (int k = 0; k < H; ++k) pre += static_cast<double>(p.W_q.at(a, k)) * q[k];
        for (int k = 0; k < C; ++k) pre += static_cast<double>(p.W_k.at(a, k)) * h[k];
        e += p.v_a[a] * std::tanh(pre);
    }
    return e;
}
}  // namespace

CoverageRun coverage_forward(const Attention& att, ConstTensorView queries, ConstTensorView enc_out,
                             std::span<const int> lengths, ConstTensorView R,
                             std::span<const bool> real, double lambda) {
    const AttentionConfig& cfg = att.cfg;
    NZ_CHECK(cfg.coverage && cfg.local == LocalMode::global,
             "naive coverage: needs global coverage attention, got {}", describe(cfg));
    const int T = queries.dim(0), B = queries.dim(1), H = cfg.query_size;
    const int S = enc_out.dim(1), C = cfg.context_size;
    NZ_CHECK_SHAPE(queries, {T, B, H});
    NZ_CHECK_SHAPE(R, {T, B, C});
    CoverageRun run;
    run.weights.assign(static_cast<std::size_t>(T) * B * S, 0.0);
    run.coverage.assign(static_cast<std::size_t>(T) * B * S, 0.0);
    run.contexts.assign(static_cast<std::size_t>(T) * B * C, 0.0);
    std::vector<double> cov(static_cast<std::size_t>(B) * S, 0.0);  // cov_0 = 0
    for (int t = 0; t < T; ++t)
        for (int b = 0; b < B; ++b) {
            const int n = lengths[b];
            const std::size_t row = static_cast<std::size_t>(t) * B + b;
            double* alpha = run.weights.data() + row * S;
            double* c = run.contexts.data() + row * C;
            // α = softmax over the S_b real positions of e_i; padding gets 0
            double mx = -1e300, sum = 0;
            for (int i = 0; i < n; ++i) {
                alpha[i] = coverage_score(att, queries.data() + row * H,
                                          enc_out.data() + (int64_t{b} * S + i) * C,
                                          cov[static_cast<std::size_t>(b) * S + i]);
                mx = std::max(mx, alpha[i]);
            }
            for (int i = 0; i < n; ++i) sum += (alpha[i] = std::exp(alpha[i] - mx));
            for (int i = 0; i < n; ++i) alpha[i] /= sum;
            for (int i = 0; i < S; ++i) {
                double& cv = cov[static_cast<std::size_t>(b) * S + i];
                run.coverage[row * S + i] = cv;
                if (real[row]) run.loss += lambda * std::min(alpha[i], cv);
                const float* h = enc_out.data() + (int64_t{b} * S + i) * C;
                for (int k = 0; k < C; ++k) c[k] += alpha[i] * h[k];
                cv += alpha[i];  // cov_{t+1} = cov_t + α_t
            }
            for (int k = 0; k < C; ++k) run.loss += c[k] * R.data()[row * C + k];
        }
    return run;
}

}  // namespace nazar::attn::naive
