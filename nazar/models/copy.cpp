// Copy attention: the mixture of one row and the gate (copy.h).
#include "nazar/models/copy.h"

#include "nazar/core/check.h"
#include "nazar/core/kernels.h"
#include "nazar/core/simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace nazar {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
const double kLogEpsilon = std::log(kCopyEpsilon);

double softplus(double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

double log_add(double a, double b) {
    if (a == kNegInf) return b;
    if (b == kNegInf) return a;
    const double m = std::max(a, b);
    return m + std::log(std::exp(a - m) + std::exp(b - m));
}

// log Σ_v exp(z_v) over V logits
double log_sum_exp(const float* z, int V) {
    double m = kNegInf;
    for (int v = 0; v < V; ++v) m = std::max(m, static_cast<double>(z[v]));
    double s = 0;
    for (int v = 0; v < V; ++v) s += std::exp(z[v] - m);
    return m + std::log(s);
}

// Σ_{i : ids_i = y} α_i
double copy_mass(const CopyRow& r, int32_t y) {
    double a = 0;
    for (int i = 0; i < r.S; ++i)
        if (r.ids[i] == y) a += r.alpha[i];
    return a;
}

// The smoothing term (ls / V) Σ_{v<V} −log(P(v) + ε) of a row; with `grad`, ADDS its gradients
// times `scale`. With w_v = 1 / (P(v) + ε), r_v = p s_v w_v (s = softmax(z)), R = Σ_v r_v and
// C = Σ_v q A_v w_v (q = 1 − p, A_v the source mass of v):
//   d/dz_k = −(ls/V)(r_k − s_k R),  d/dα_i = −(ls/V) q w_{x̂_i} [x̂_i < V],  d/dg = −(ls/V)(q R − p
//   C)
// A word without source mass has P + ε = p s (1 + x), x = ε/(p s): where x < 1e-4 its log is
// log p + log s + x − x²/2 and r = 1 − x + x²; where x > 1e4, log ε + 1/x − 1/(2x²) and
// r = 1/x − 1/x² (errors below 1e-12): the V-long loop needs one vectorised (float) exp and a
// division per word; the others (source words, 1e-4 <= x <= 1e4) are computed in double.
double smoothing_term(const CopyRow& r, double lse, double log_p, double log_q, double ls,
                      float scale, CopyRowGrad* grad) {
    thread_local std::vector<float> soft, shifted;
    thread_local std::vector<double> mass, share;
    const auto V = static_cast<std::size_t>(r.V);
    soft.resize(V);
    share.resize(V);
    if (mass.size() < V) mass.assign(V, 0.0);  // all zero between calls
    const float* lz = r.z;                     // log softmax(z)
    if (!r.normalized) {
        shifted.resize(V);
        for (std::size_t v = 0; v < V; ++v) shifted[v] = static_cast<float>(r.z[v] - lse);
        lz = shifted.data();
    }
    kernels::exp(lz, soft.data(), r.V);
    for (int i = 0; i < r.S; ++i)
        if (r.ids[i] < r.V) mass[static_cast<std::size_t>(r.ids[i])] += r.alpha[i];
    const double p = std::exp(log_p), q = std::exp(log_q), k = ls / r.V;
    double sum_log = 0, R = 0, Cq = 0;
    for (std::size_t v = 0; v < V; ++v) {
        const double ps = p * soft[v], x = mass[v] == 0 ? kCopyEpsilon / ps : 1.0;
        if (x < 1e-4) {
            sum_log += log_p + (r.z[v] - lse) + x * (1 - 0.5 * x);
            share[v] = 1 - x * (1 - x);
        } else if (x > 1e4 && std::isfinite(x)) {  // p s / ε = 1/x tiny: log ε + 1/x − 1/(2x²)
            const double y = 1 / x;
            sum_log += kLogEpsilon + y * (1 - 0.5 * y);
            share[v] = y * (1 - y);
        } else {  // source words and tiny probabilities: in double throughout
            const double pd = p * std::exp(r.z[v] - lse), P = pd + q * mass[v] + kCopyEpsilon;
            sum_log += std::log(P);
            share[v] = pd / P;
            Cq += q * mass[v] / P;
        }
        R += share[v];
    }
    if (grad != nullptr) {
        const double c = scale * k;
        for (std::size_t v = 0; v < V; ++v)
            grad->d_z[v] -= static_cast<float>(c * (share[v] - soft[v] * R));
        for (int i = 0; i < r.S; ++i) {
            if (r.ids[i] >= r.V) continue;
            const auto u = static_cast<std::size_t>(r.ids[i]);
            grad->d_alpha[i] -= static_cast<float>(
                c * q / (p * std::exp(r.z[u] - lse) + q * mass[u] + kCopyEpsilon));
        }
        grad->d_g -= static_cast<float>(c * (q * R - p * Cq));
    }
    for (int i = 0; i < r.S; ++i)
        if (r.ids[i] < r.V) mass[static_cast<std::size_t>(r.ids[i])] = 0.0;
    return -k * sum_log;
}

}  // namespace

double copy_row_loss(const CopyRow& r, int32_t y, float scale, CopyRowGrad* grad,
                     float label_smoothing) {
    NZ_CHECK(r.V > 0 && y >= 0, "copy: target {} with a vocabulary of {}", y, r.V);
    NZ_CHECK(label_smoothing >= 0 && label_smoothing < 1, "copy: label smoothing {} outside [0, 1)",
             label_smoothing);
    const double lse = r.normalized ? 0.0 : log_sum_exp(r.z, r.V);
    const double log_p = -softplus(-r.g), log_q = -softplus(r.g);  // log p_gen, log(1 − p_gen)
    const double ls = label_smoothing;
    const double ts = scale * (1 - ls);  // the target term's weight 1 − ls
    const double mass = copy_mass(r, y);
    // a = log(p_gen P_vocab(y)), b = log((1 − p_gen) A_y), L = log(e^a + e^b + ε)
    const double a = y < r.V ? log_p + r.z[y] - lse : kNegInf;
    const double b = mass > 0 ? log_q + std::log(mass) : kNegInf;
    const double L = log_add(log_add(a, b), std::log(kCopyEpsilon));
    if (grad != nullptr) {
        const double ra = std::exp(a - L), rb = std::exp(b - L);
        const double p = std::exp(log_p);
        // d(−L)/dz_v = ra (softmax_v − δ_vy);  d(−L)/dα_i = −(1 − p)/(P + ε) [x̂_i = y];
        // d(−L)/dg = −(1 − p) ra + p rb
        const float c = static_cast<float>(ts * ra), shift = static_cast<float>(lse);
        if (r.normalized) {  // the vectorised exp (docs/design.md: ≈ 1-2 ulp)
            kernels::exp(r.z, grad->d_z, r.V);
            for (int v = 0; v < r.V; ++v) grad->d_z[v] *= c;
        } else {
            for (int v = 0; v < r.V; ++v) grad->d_z[v] = c * std::exp(r.z[v] - shift);
        }
        if (y < r.V) grad->d_z[y] -= static_cast<float>(ts * ra);
        const float da = static_cast<float>(-ts * std::exp(log_q - L));
        for (int i = 0; i < r.S; ++i) grad->d_alpha[i] = r.ids[i] == y ? da : 0.0f;
        grad->d_g = static_cast<float>(ts * (-(1 - p) * ra + p * rb));
    }
    if (ls == 0) return -L;
    return -(1 - ls) * L + smoothing_term(r, lse, log_p, log_q, ls, scale, grad);
}

int32_t copy_row_argmax(const CopyRow& r) {
    const double lse = r.normalized ? 0.0 : log_sum_exp(r.z, r.V);
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(r.g))), q = 1.0 - p;
    const auto prob = [&](int32_t w) {
        return (w < r.V ? p * std::exp(r.z[w] - lse) : 0.0) + q * copy_mass(r, w);
    };
    // P(w) = p P_vocab(w) for every w not in the source: at most the generator's best
    int32_t best = static_cast<int32_t>(std::max_element(r.z, r.z + r.V) - r.z);
    double best_p = prob(best);
    for (int i = 0; i < r.S; ++i) {
        const int32_t w = r.ids[i];
        const double pw = prob(w);
        if (pw > best_p || (pw == best_p && w < best)) {
            best = w;
            best_p = pw;
        }
    }
    return best;
}

float copy_row_log_probs(const CopyRow& r, int V_ext, float* out) {
    NZ_CHECK(V_ext >= r.V, "copy: extended vocabulary {} below V = {}", V_ext, r.V);
    const double lse = r.normalized ? 0.0 : log_sum_exp(r.z, r.V);
    const double log_p = -softplus(-r.g), log_q = -softplus(r.g);
    const double p = std::exp(log_p), q = std::exp(log_q);
    // P(w) = p P_vocab(w) + q A_w; summed here in double, logged with ε. A_w is nonzero for the
    // words of the source only: the generator's term everywhere first, then those words again
    // with their copy mass (each word's α summed in position order).
    const auto log_p_of = [&](int w, double mass) {
        const double gen = w < r.V ? p * std::exp(r.z[w] - lse) : 0.0;
        return static_cast<float>(std::log(gen + q * mass + kCopyEpsilon));
    };
    // Words without copy mass, V of them a step per row: log(p e^(z − lse) + ε) in float with
    // simd.h's exp and log (≈2 ulp; the loop vectorises), not two libm calls in double each.
    const float pf = static_cast<float>(p), lsef = static_cast<float>(lse),
                epsf = static_cast<float>(kCopyEpsilon);
    for (int w = 0; w < r.V; ++w) out[w] = simd::log1(pf * simd::exp1(r.z[w] - lsef) + epsf);
    std::fill(out + r.V, out + V_ext, static_cast<float>(kLogEpsilon));  // extended: P = 0
    thread_local std::vector<std::pair<int32_t, int>> at;  // (word, position), by word
    at.clear();
    for (int i = 0; i < r.S; ++i) {
        NZ_CHECK(r.ids[i] >= 0 && r.ids[i] < V_ext, "copy: source id {} outside [0, {})", r.ids[i],
                 V_ext);
        at.emplace_back(r.ids[i], i);
    }
    std::sort(at.begin(), at.end());
    for (std::size_t k = 0; k < at.size();) {
        const int32_t w = at[k].first;
        double mass = 0.0;
        for (; k < at.size() && at[k].first == w; ++k) mass += r.alpha[at[k].second];
        out[w] = log_p_of(w, mass);
    }
    return static_cast<float>(p);
}

CopyGate::CopyGate(int C, int H, int E, Rng& rng)
    : linear({.in_features = C + H + E, .out_features = 1, .bias = true}, rng),
      C_(C),
      H_(H),
      E_(E) {}

void CopyGate::forward(ConstTensorView c, ConstTensorView s, ConstTensorView e, Tensor& in,
                       TensorView g) const {
    const int N = c.dim(0), W = C_ + H_ + E_;
    NZ_CHECK_SHAPE(c, {N, C_});
    NZ_CHECK_SHAPE(s, {N, H_});
    NZ_CHECK_SHAPE(e, {N, E_});
    NZ_CHECK_SHAPE(g, {N});
    in.resize({N, W}, false);
    for (int n = 0; n < N; ++n) {
        float* row = in.data() + static_cast<int64_t>(n) * W;
        std::memcpy(row, c.data() + static_cast<int64_t>(n) * C_, sizeof(float) * C_);
        std::memcpy(row + C_, s.data() + static_cast<int64_t>(n) * H_, sizeof(float) * H_);
        std::memcpy(row + C_ + H_, e.data() + static_cast<int64_t>(n) * E_, sizeof(float) * E_);
    }
    linear.forward(in, g.reshape({N, 1}));
}

void CopyGate::backward(ConstTensorView d_g, ConstTensorView in, TensorView d_c, TensorView d_s,
                        TensorView d_e) {
    const int N = d_g.dim(0), W = C_ + H_ + E_;
    NZ_CHECK_SHAPE(in, {N, W});
    d_in_.resize({N, W});  // zeroed: Linear::backward accumulates
    linear.backward(d_g.reshape({N, 1}), in, d_in_);
    const auto add = [&](TensorView d, int off, int w) {
        NZ_CHECK_SHAPE(d, {N, w});
        for (int n = 0; n < N; ++n) {
            const float* src = d_in_.data() + static_cast<int64_t>(n) * W + off;
            float* dst = d.data() + static_cast<int64_t>(n) * w;
            for (int k = 0; k < w; ++k) dst[k] += src[k];
        }
    };
    add(d_c, 0, C_);
    add(d_s, C_, H_);
    add(d_e, C_ + H_, E_);
}

void CopyGate::collect(const std::string& prefix, ParamList& out) {
    collect_params(linear.params, linear.grad, prefix, out);
}

}  // namespace nazar
