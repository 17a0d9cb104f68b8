// Double-precision oracle for every attention variant, forward and backward (see naive.h).
#include "nazar/attention/naive.h"

#include "nazar/attention/naive_mocha.h"
#include "nazar/attention/naive_monotonic.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nazar::attn::naive {

namespace {
using Vec = std::vector<double>;

bool is_additive(const AttentionConfig& c) {
    return c.score == ScoreKind::additive || c.score == ScoreKind::concat;
}

double score_scale(const Attention& att) {  // s of dot/general
    if (att.cfg.scale == ScaleMode::inv_sqrt)
        return 1.0 / std::sqrt(static_cast<double>(att.cfg.context_size));
    if (att.cfg.scale == ScaleMode::learned) return att.params.scale[0];
    return 1.0;
}

// key = h (dot) or W_k h (general), H entries
Vec bilinear_key(const Attention& att, const float* h) {
    const int H = att.cfg.query_size, C = att.cfg.context_size;
    Vec key(H);
    for (int r = 0; r < H; ++r) {
        key[r] = h[r];
        if (att.cfg.score == ScoreKind::general) {
            key[r] = 0;
            for (int k = 0; k < C; ++k)
                key[r] += static_cast<double>(att.params.W_k.at(r, k)) * h[k];
        }
    }
    return key;
}

// pre_a = W_q[a] · q + W_k[a] · h  (additive)
double additive_pre(const Attention& att, int a, const float* q, const float* h) {
    double pre = 0;
    for (int k = 0; k < att.cfg.query_size; ++k)
        pre += static_cast<double>(att.params.W_q.at(a, k)) * q[k];
    for (int k = 0; k < att.cfg.context_size; ++k)
        pre += static_cast<double>(att.params.W_k.at(a, k)) * h[k];
    return pre;
}

// additive: e = Σ_a v_a tanh(pre_a);  dot/general: e = s q · key. chunk: MoChA's chunk energy
// u = Σ_a v_c tanh(pre_a) instead (additive only).
double score(const Attention& att, const float* q, const float* h, bool chunk = false) {
    double e = 0;
    if (is_additive(att.cfg)) {
        const Tensor& v = chunk ? att.params.v_c : att.params.v_a;
        for (int a = 0; a < att.cfg.attention_size; ++a)
            e += v[a] * std::tanh(additive_pre(att, a, q, h));
        return e;
    }
    const Vec key = bilinear_key(att, h);
    for (int r = 0; r < att.cfg.query_size; ++r) e += q[r] * key[r];
    return score_scale(att) * e;
}

// Gradients in double, indexed like the float tensors they end up in.
struct Grads {
    Vec q, h, W_q, W_k, v_a, W_p, v_p, v_c;
    double scale = 0, r = 0;
};

// d e of one score into d q (H), d h (C) and the score's parameters (chunk: of MoChA's u).
void score_backward(const Attention& att, const float* q, const float* h, double de, double* dq,
                    double* dh, Grads& g, bool chunk = false) {
    const int H = att.cfg.query_size, C = att.cfg.context_size;
    const AttentionParams& p = att.params;
    if (is_additive(att.cfg)) {
        // e = Σ_a v_a z_a, z_a = tanh(pre_a)  =>  d v_a += de z_a;  d pre_a = de v_a (1 − z_a²)
        const Tensor& v = chunk ? p.v_c : p.v_a;
        Vec& dv = chunk ? g.v_c : g.v_a;
        for (int a = 0; a < att.cfg.attention_size; ++a) {
            const double z = std::tanh(additive_pre(att, a, q, h));
            const double dpre = de * v[a] * (1 - z * z);
            dv[a] += de * z;
            for (int k = 0; k < H; ++k) {
                g.W_q[a * H + k] += dpre * q[k];
                dq[k] += dpre * p.W_q.at(a, k);
            }
            for (int k = 0; k < C; ++k) {
                g.W_k[a * C + k] += dpre * h[k];
                dh[k] += dpre * p.W_k.at(a, k);
            }
        }
        return;
    }
    // e = s r, r = q · key  =>  d s += de r;  d q += s de key;  d key = s de q
    const Vec key = bilinear_key(att, h);
    double r = 0;
    for (int i = 0; i < H; ++i) r += q[i] * key[i];
    g.scale += de * r;
    const double dr = score_scale(att) * de;
    for (int i = 0; i < H; ++i) {
        dq[i] += dr * key[i];
        const double dkey = dr * q[i];
        if (att.cfg.score == ScoreKind::dot) {
            dh[i] += dkey;
            continue;
        }
        for (int k = 0; k < C; ++k) {  // key = W_k h
            g.W_k[i * C + k] += dkey * h[k];
            dh[k] += dkey * p.W_k.at(i, k);
        }
    }
}

// One sentence at one step, from the definitions (docs/spec.md §3-5).
struct Row {
    int lo = 0, hi = -1;  // the window [lo, hi]
    double p = 0;         // p_t (local)
    double sig = 0;       // local-p: sigmoid(u), u = v_p · tanh(W_p q)
    Vec pos_tanh;         // local-p: tanh(W_p q)
    Vec pr, g, alpha;     // (S) by source position: softmax, Gaussian (1 without), α (MoChA: β)
    Vec mono, u;          // MoChA, (S_b): the monotonic α and the chunk energies
};

Row row_forward(const Attention& att, const float* q, const float* h, int Sb, int S, int t,
                const MonotonicStep* mono, int b);

// Monotonic (monotonic.h): p_i = σ(e_i + r + ε_i) in pr, α from α_{t−1} (the oracle's recursion,
// or the hard choice)
Row monotonic_row_forward(const Attention& att, const float* q, const float* h, int Sb, int S,
                          const MonotonicStep& mono, int b) {
    NZ_CHECK(mono.previous.ndim() == 2 && mono.previous.dim(1) == S,
             "naive monotonic: previous weights {} for S = {}", mono.previous.shape().str(), S);
    Row row;
    row.hi = Sb - 1;
    row.pr.assign(S, 0.0);
    row.g.assign(S, 1.0);
    row.alpha.assign(S, 0.0);
    Vec p(Sb), prev(Sb);
    int from = -1;
    for (int i = 0; i < Sb; ++i) {
        const double noise = mono.noise.numel() > 0 ? mono.noise.at(b, i) : 0.0;
        const double x = score(att, q, h + static_cast<int64_t>(i) * att.cfg.context_size) +
                         att.params.r[0] + noise;
        p[i] = row.pr[i] = 1 / (1 + std::exp(-x));
        prev[i] = mono.previous.at(b, i);
        if (prev[i] > (from < 0 ? 0.0 : prev[from])) from = i;
    }
    const int w = att.cfg.mocha_chunk;
    const int stop = mono.hard && from >= 0 ? hard_stop(p, from) : -1;
    if (mono.hard) {
        row.mono.assign(Sb, 0.0);
        if (stop >= 0) row.mono[stop] = 1;
    } else {
        row.mono = monotonic_alignment(p, prev);
    }
    Vec weights = row.mono;
    if (w > 0) {  // MoChA: β from α and the chunk energies u
        row.u.resize(Sb);
        for (int i = 0; i < Sb; ++i)
            row.u[i] = score(att, q, h + static_cast<int64_t>(i) * att.cfg.context_size, true);
        weights = mono.hard ? hard_chunk(row.u, stop, w) : chunkwise_weights(row.mono, row.u, w);
    }
    std::copy(weights.begin(), weights.end(), row.alpha.begin());
    if (mono.alpha.numel() > 0)
        for (int i = 0; i < S; ++i) mono.alpha.at(b, i) = i < Sb ? float(row.mono[i]) : 0.0f;
    return row;
}

Row row_forward(const Attention& att, const float* q, const float* h, int Sb, int S, int t,
                const MonotonicStep* mono, int b) {
    if (att.cfg.monotonic) {
        NZ_CHECK(mono != nullptr, "naive attention: monotonic attention needs its step inputs");
        return monotonic_row_forward(att, q, h, Sb, S, *mono, b);
    }
    const AttentionConfig& cfg = att.cfg;
    const int H = cfg.query_size, C = cfg.context_size, D = cfg.window;
    Row row;
    row.hi = Sb - 1;
    if (cfg.local == LocalMode::monotonic) row.p = std::min(t, Sb - 1);
    if (cfg.local == LocalMode::predictive) {
        const int P = att.params.W_p.dim(0);
        row.pos_tanh.assign(P, 0.0);
        double u = 0;
        for (int i = 0; i < P; ++i) {
            double pre = 0;
            for (int k = 0; k < H; ++k) pre += static_cast<double>(att.params.W_p.at(i, k)) * q[k];
            row.pos_tanh[i] = std::tanh(pre);
            u += att.params.v_p[i] * row.pos_tanh[i];
        }
        row.sig = 1 / (1 + std::exp(-u));
        row.p = Sb * row.sig;
    }
    if (cfg.local != LocalMode::global && Sb > 0) {
        const int c = std::min(static_cast<int>(std::floor(row.p + 0.5)), Sb - 1);
        row.lo = std::max(0, c - D);
        row.hi = std::min(Sb - 1, c + D);
    }
    row.pr.assign(S, 0.0);
    row.g.assign(S, 1.0);
    row.alpha.assign(S, 0.0);
    double mx = -1e300, sum = 0;
    for (int i = row.lo; i <= row.hi; ++i)
        mx = std::max(mx, row.pr[i] = score(att, q, h + static_cast<int64_t>(i) * C));
    for (int i = row.lo; i <= row.hi; ++i) sum += (row.pr[i] = std::exp(row.pr[i] - mx));
    const double sigma = D / 2.0;
    for (int i = row.lo; i <= row.hi; ++i) {
        row.pr[i] /= sum;
        if (cfg.local == LocalMode::predictive)
            row.g[i] = std::exp(-(i - row.p) * (i - row.p) / (2 * sigma * sigma));
        row.alpha[i] = row.pr[i] * row.g[i];
    }
    return row;
}

// p = S_b sigmoid(u), u = v_p · tanh(pre), pre = W_p q: d p into d q, d W_p, d v_p
void predictor_backward(const Attention& att, const float* q, const Row& row, int Sb, double dp,
                        double* dq, Grads& g) {
    const int H = att.cfg.query_size, P = att.params.W_p.dim(0);
    const double du = dp * Sb * row.sig * (1 - row.sig);
    for (int i = 0; i < P; ++i) {
        const double th = row.pos_tanh[i];
        g.v_p[i] += du * th;
        const double dpre = du * att.params.v_p[i] * (1 - th * th);
        for (int k = 0; k < H; ++k) {
            g.W_p[i * H + k] += dpre * q[k];
            dq[k] += dpre * att.params.W_p.at(i, k);
        }
    }
}

void store(const Vec& from, TensorView to) {
    NZ_CHECK(static_cast<int64_t>(from.size()) == to.numel(), "naive: {} values for {}",
             from.size(), to.shape().str());
    for (int64_t i = 0; i < to.numel(); ++i) to[i] = static_cast<float>(from[i]);
}
}  // namespace

void attention_forward(const Attention& att, ConstTensorView query, ConstTensorView enc_out,
                       std::span<const int> lengths, int t, TensorView weights, TensorView context,
                       const MonotonicStep* monotonic) {
    const AttentionConfig& cfg = att.cfg;
    const int B = query.dim(0), S = enc_out.dim(1), H = cfg.query_size, C = cfg.context_size;
    NZ_CHECK_SHAPE(weights, {B, S});
    NZ_CHECK_SHAPE(context, {B, C});
    for (int b = 0; b < B; ++b) {
        const float* h = enc_out.data() + static_cast<int64_t>(b) * S * C;
        const Row row = row_forward(att, query.data() + static_cast<int64_t>(b) * H, h, lengths[b],
                                    S, t, monotonic, b);
        for (int i = 0; i < S; ++i) weights.at(b, i) = static_cast<float>(row.alpha[i]);
        for (int k = 0; k < C; ++k) {  // c = Σ_i α_i h_i
            double c = 0;
            for (int i = row.lo; i <= row.hi; ++i) c += row.alpha[i] * enc_out.at(b, i, k);
            context.at(b, k) = static_cast<float>(c);
        }
    }
}

void attention_backward(const Attention& att, ConstTensorView query, ConstTensorView enc_out,
                        std::span<const int> lengths, int t, ConstTensorView d_context,
                        TensorView d_query, TensorView d_enc_out, AttentionParams& grad,
                        const MonotonicStep* monotonic) {
    const AttentionConfig& cfg = att.cfg;
    const int B = query.dim(0), S = enc_out.dim(1), H = cfg.query_size, C = cfg.context_size;
    NZ_CHECK_SHAPE(d_context, {B, C});
    NZ_CHECK_SHAPE(d_query, {B, H});
    NZ_CHECK_SHAPE(d_enc_out, {B, S, C});
    const AttentionParams& p = att.params;
    Grads g{Vec(d_query.numel()), Vec(d_enc_out.numel()), Vec(p.W_q.numel()), Vec(p.W_k.numel()),
            Vec(p.v_a.numel()),   Vec(p.W_p.numel()),     Vec(p.v_p.numel()), Vec(p.v_c.numel())};
    const double inv_var = 4.0 / (static_cast<double>(cfg.window) * cfg.window);  // 1/σ², σ = D/2
    for (int b = 0; b < B; ++b) {
        const float* q = query.data() + static_cast<int64_t>(b) * H;
        const float* h = enc_out.data() + static_cast<int64_t>(b) * S * C;
        const float* dc = d_context.data() + static_cast<int64_t>(b) * C;
        double* dq = g.q.data() + static_cast<int64_t>(b) * H;
        double* dh = g.h.data() + static_cast<int64_t>(b) * S * C;
        const Row row = row_forward(att, q, h, lengths[b], S, t, monotonic, b);
        // c = Σ_i α_i h_i  =>  d α_i = d c · h_i,  d h_i += α_i d c
        // α_i = pr_i g_i   =>  d pr_i = d α_i g_i,  d p += Σ_i d α_i pr_i g_i (i − p)/σ²
        Vec dpr(S, 0.0);
        double dp = 0, dot = 0;
        for (int i = row.lo; i <= row.hi; ++i) {
            double da = 0;
            for (int k = 0; k < C; ++k) {
                da += static_cast<double>(dc[k]) * h[static_cast<int64_t>(i) * C + k];
                dh[static_cast<int64_t>(i) * C + k] += row.alpha[i] * dc[k];
            }
            dpr[i] = da * row.g[i];
            dp += da * row.pr[i] * row.g[i] * (i - row.p) * inv_var;
            dot += row.pr[i] * dpr[i];
        }
        if (cfg.monotonic) {  // α = monotonic(p, α_{t−1}), p = σ(e + r + ε)
            NZ_CHECK(!monotonic->hard, "naive attention: hard monotonic steps have no backward");
            const int Sb = lengths[b];
            const Vec p(row.pr.begin(), row.pr.begin() + Sb);
            Vec da(dpr.begin(), dpr.begin() + Sb);
            if (cfg.mocha_chunk > 0) {  // β = chunkwise(α, u): d β => d α, d u
                const Vec d_beta = da;
                Vec du(Sb);
                chunkwise_weights_backward(row.mono, row.u, cfg.mocha_chunk, d_beta, da, du);
                for (int i = 0; i < Sb; ++i)
                    score_backward(att, q, h + static_cast<int64_t>(i) * C, du[i], dq,
                                   dh + static_cast<int64_t>(i) * C, g, true);
            }
            Vec prev(Sb), d_p(Sb), d_prev(Sb);
            for (int i = 0; i < Sb; ++i) prev[i] = monotonic->previous.at(b, i);
            monotonic_alignment_backward(p, prev, da, d_p, d_prev);
            for (int i = 0; i < Sb; ++i) {
                const double de = d_p[i] * p[i] * (1 - p[i]);
                g.r += de;
                score_backward(att, q, h + static_cast<int64_t>(i) * C, de, dq,
                               dh + static_cast<int64_t>(i) * C, g);
                if (monotonic->d_previous.numel() > 0) monotonic->d_previous.at(b, i) = d_prev[i];
            }
            if (monotonic->d_previous.numel() > 0)
                for (int i = Sb; i < S; ++i) monotonic->d_previous.at(b, i) = 0.0f;
            continue;
        }
        // pr = softmax(e)  =>  d e_i = pr_i (d pr_i − Σ_j pr_j d pr_j)
        for (int i = row.lo; i <= row.hi; ++i)
            score_backward(att, q, h + static_cast<int64_t>(i) * C, row.pr[i] * (dpr[i] - dot), dq,
                           dh + static_cast<int64_t>(i) * C, g);
        if (cfg.local == LocalMode::predictive)
            predictor_backward(att, q, row, lengths[b], dp, dq, g);
    }
    store(g.q, d_query);
    store(g.h, d_enc_out);
    store(g.W_q, grad.W_q);
    store(g.W_k, grad.W_k);
    store(g.v_a, grad.v_a);
    store(g.W_p, grad.W_p);
    store(g.v_p, grad.v_p);
    if (cfg.scale == ScaleMode::learned) store({g.scale}, grad.scale);
    if (cfg.monotonic) store({g.r}, grad.r);
    if (cfg.mocha_chunk > 0) store(g.v_c, grad.v_c);
}

}  // namespace nazar::attn::naive
