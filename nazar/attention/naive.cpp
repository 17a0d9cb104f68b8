// Double-precision oracle for every attention variant (see naive.h).
#include "nazar/attention/naive.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nazar::attn::naive {

namespace {
double score(const Attention& att, const float* q, const float* h) {
    const AttentionParams& p = att.params;
    const AttentionConfig& c = att.cfg;
    const int H = c.query_size, C = c.context_size;
    double e = 0;
    if (c.score == ScoreKind::additive || c.score == ScoreKind::concat) {
        for (int a = 0; a < c.attention_size; ++a) {
            double pre = 0;
            for (int k = 0; k < H; ++k) pre += static_cast<double>(p.W_q.at(a, k)) * q[k];
            for (int k = 0; k < C; ++k) pre += static_cast<double>(p.W_k.at(a, k)) * h[k];
            e += p.v_a[a] * std::tanh(pre);
        }
        return e;
    }
    for (int r = 0; r < H; ++r) {
        double key = h[r];
        if (c.score == ScoreKind::general) {
            key = 0;
            for (int k = 0; k < C; ++k) key += static_cast<double>(p.W_k.at(r, k)) * h[k];
        }
        e += q[r] * key;
    }
    if (c.scale == ScaleMode::inv_sqrt) e /= std::sqrt(static_cast<double>(C));
    if (c.scale == ScaleMode::learned) e *= p.scale[0];
    return e;
}
}  // namespace

void attention_forward(const Attention& att, TensorView query, TensorView enc_out,
                       std::span<const int> lengths, int t, TensorView weights,
                       TensorView context) {
    const AttentionConfig& cfg = att.cfg;
    const int B = query.dim(0), S = enc_out.dim(1), H = cfg.query_size, C = cfg.context_size,
              D = cfg.window;
    NZ_CHECK_SHAPE(weights, {B, S});
    NZ_CHECK_SHAPE(context, {B, C});
    for (int b = 0; b < B; ++b) {
        const int Sb = lengths[b];
        const float* q = query.data() + static_cast<int64_t>(b) * H;
        double p = 0;
        int lo = 0, hi = Sb - 1;
        if (cfg.local == LocalMode::monotonic) p = std::min(t, Sb - 1);
        if (cfg.local == LocalMode::predictive) {
            double u = 0;
            for (int i = 0; i < att.params.W_p.dim(0); ++i) {
                double pre = 0;
                for (int k = 0; k < H; ++k)
                    pre += static_cast<double>(att.params.W_p.at(i, k)) * q[k];
                u += att.params.v_p[i] * std::tanh(pre);
            }
            p = Sb / (1 + std::exp(-u));
        }
        if (cfg.local != LocalMode::global && Sb > 0) {
            const int c = std::min(static_cast<int>(std::floor(p + 0.5)), Sb - 1);
            lo = std::max(0, c - D);
            hi = std::min(Sb - 1, c + D);
        }
        std::vector<double> a(S, 0.0);
        double mx = -1e300, sum = 0;
        for (int i = lo; i <= hi; ++i)
            mx = std::max(
                mx, a[i] = score(att, q, enc_out.data() + (static_cast<int64_t>(b) * S + i) * C));
        for (int i = lo; i <= hi; ++i) sum += (a[i] = std::exp(a[i] - mx));
        const double sigma = D / 2.0;
        for (int i = lo; i <= hi; ++i) {
            a[i] /= sum;
            if (cfg.local == LocalMode::predictive)
                a[i] *= std::exp(-(i - p) * (i - p) / (2 * sigma * sigma));
        }
        for (int i = 0; i < S; ++i) weights.at(b, i) = static_cast<float>(a[i]);
        for (int k = 0; k < C; ++k) {
            double c = 0;
            for (int i = lo; i <= hi; ++i) c += a[i] * enc_out.at(b, i, k);
            context.at(b, k) = static_cast<float>(c);
        }
    }
}

}  // namespace nazar::attn::naive
