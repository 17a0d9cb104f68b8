// One decoder step of every attention mechanism at B=64, S=50, d_s=d_h=512, d_a=256 (SPEC §9):
// precompute (keys once per batch), forward, and forward+backward. Before timing, each
// mechanism's forward is validated against a naive double-precision computation written
// straight from SPEC §3-5 (window, Gaussian, masking), with padded sentences in the batch.
// Output: Google Benchmark's table; each line carries the shapes as its label and GFLOP/s from
// the multiply-add count of attention_cost (the same model `nazar explain` prints).
// Threads: NAZAR_THREADS (default 1, so numbers from a shared machine stay comparable).
#include "nazar/attention/attention.h"
#include "nazar/core/blas.h"
#include "nazar/core/threads.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace nazar;

namespace {

constexpr int kB = 64, kS = 50, kH = 512, kC = 512, kA = 256, kD = 10, kStep = 20;

struct Mech {
    std::string name;
    AttentionConfig cfg;
};

std::vector<Mech> mechanisms() {
    const AttentionConfig add{.score = ScoreKind::additive, .query_size = kH, .context_size = kC, .attention_size = kA};
    const AttentionConfig gen{.score = ScoreKind::general, .query_size = kH, .context_size = kC};
    AttentionConfig dot = gen, cat = add, sgen = gen, lm = gen, lp = gen, lpa = add;
    dot.score = ScoreKind::dot;
    cat.score = ScoreKind::concat;
    sgen.scale = ScaleMode::inv_sqrt;
    lm.local = LocalMode::monotonic;
    lp.local = lpa.local = LocalMode::predictive;
    lm.window = lp.window = lpa.window = kD;
    return {{"bahdanau", add}, {"dot", dot},        {"general", gen},        {"concat", cat},
            {"scaled-general", sgen}, {"local-m", lm}, {"local-p", lp}, {"local-p-additive", lpa}};
}

struct Inputs {
    Tensor q, h, d_ctx;
    std::vector<int> len;
};

Inputs make_inputs() {
    Rng rng(99);
    Inputs in{Tensor({kB, kH}), Tensor({kB, kS, kC}), Tensor({kB, kC}), std::vector<int>(kB)};
    rng.fill_uniform(in.q, -1, 1);
    rng.fill_uniform(in.h, -1, 1);
    rng.fill_uniform(in.d_ctx, -1, 1);
    for (int b = 0; b < kB; ++b) in.len[b] = b % 4 == 0 ? kS : 5 + static_cast<int>(rng.below(kS - 5));
    return in;
}

// Naive attention (double): every score from the parameters directly, no precomputed keys.
double naive_score(const Attention& att, const Inputs& in, int b, int i) {
    const auto& p = att.params;
    const float* q = in.q.data() + static_cast<int64_t>(b) * kH;
    const float* h = in.h.data() + (static_cast<int64_t>(b) * kS + i) * kC;
    const AttentionConfig& c = att.cfg;
    double e = 0;
    if (c.score == ScoreKind::additive || c.score == ScoreKind::concat) {
        for (int a = 0; a < kA; ++a) {
            double pre = 0;
            for (int k = 0; k < kH; ++k) pre += static_cast<double>(p.W_q.at(a, k)) * q[k];
            for (int k = 0; k < kC; ++k) pre += static_cast<double>(p.W_k.at(a, k)) * h[k];
            e += p.v_a[a] * std::tanh(pre);
        }
        return e;
    }
    for (int r = 0; r < kH; ++r) {
        double key = h[r];
        if (c.score == ScoreKind::general) {
            key = 0;
            for (int k = 0; k < kC; ++k) key += static_cast<double>(p.W_k.at(r, k)) * h[k];
        }
        e += q[r] * key;
    }
    return c.scale == ScaleMode::inv_sqrt ? e / std::sqrt(double(kC)) : e;
}

// Returns the max abs difference of weights (dense) and contexts against nazar's forward.
double validate(const Mech& m, const Inputs& in) {
    Rng rng(5);
    Attention att(m.cfg, rng);
    AttentionKeys keys;
    AttentionStepCache cache;
    Tensor ctx({kB, kC}), dense({kB, kS});
    att.precompute(in.h, keys);
    att.forward(in.q, keys, in.h, in.len, kStep, ctx, cache);
    dense_weights(cache, dense);
    double err = 0;
    for (int b = 0; b < kB; ++b) {
        const int Sb = in.len[b];
        double p = 0;
        int lo = 0, hi = Sb - 1;
        if (m.cfg.local == LocalMode::monotonic) p = std::min(kStep, Sb - 1);
        if (m.cfg.local == LocalMode::predictive) {
            const int P = att.params.W_p.dim(0);
            double u = 0;
            for (int i = 0; i < P; ++i) {
                double pre = 0;
                for (int k = 0; k < kH; ++k) pre += static_cast<double>(att.params.W_p.at(i, k)) * in.q.at(b, k);
                u += att.params.v_p[i] * std::tanh(pre);
            }
            p = Sb / (1 + std::exp(-u));
        }
        if (m.cfg.local != LocalMode::global) {
            const int c = std::min(static_cast<int>(std::floor(p + 0.5)), Sb - 1);
            lo = std::max(0, c - kD);
            hi = std::min(Sb - 1, c + kD);
        }
        std::vector<double> a(kS, 0.0);
        double mx = -1e300, sum = 0;
        for (int i = lo; i <= hi; ++i) mx = std::max(mx, a[i] = naive_score(att, in, b, i));
        for (int i = lo; i <= hi; ++i) sum += (a[i] = std::exp(a[i] - mx));
        const double sigma = kD / 2.0;
        for (int i = lo; i <= hi; ++i) {
            a[i] /= sum;
            if (m.cfg.local == LocalMode::predictive) a[i] *= std::exp(-(i - p) * (i - p) / (2 * sigma * sigma));
        }
        for (int i = 0; i < kS; ++i) err = std::max(err, std::abs(a[i] - dense.at(b, i)));
        for (int k = 0; k < kC; ++k) {
            double c = 0;
            for (int i = lo; i <= hi; ++i) c += a[i] * in.h.at(b, i, k);
            err = std::max(err, std::abs(c - ctx.at(b, k)));
        }
    }
    return err;
}

std::string label(const Mech& m) {
    return fmt::format("{}: B={} S={} H={} C={} A={}{}", m.name, kB, kS, kH, kC, kA,
                       m.cfg.local == LocalMode::global ? "" : fmt::format(" D={}", kD));
}

void set_rate(benchmark::State& st, int64_t macs) {
    st.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(macs) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void bm_precompute(benchmark::State& st, const Mech& m, const Inputs& in) {
    Rng rng(5);
    Attention att(m.cfg, rng);
    AttentionKeys keys;
    for (auto _ : st) {
        att.precompute(in.h, keys);
        benchmark::DoNotOptimize(keys.keys.data());
    }
    set_rate(st, kB * attention_cost(m.cfg, kS).keys);
    st.SetLabel(label(m));
}

void bm_step(benchmark::State& st, const Mech& m, const Inputs& in, bool backward) {
    Rng rng(5);
    Attention att(m.cfg, rng);
    AttentionKeys keys;
    AttentionStepCache cache;
    Tensor ctx({kB, kC}), d_q({kB, kH}), d_h({kB, kS, kC});
    att.precompute(in.h, keys);
    Tensor d_keys = Tensor::like(keys.keys);
    for (auto _ : st) {
        att.forward(in.q, keys, in.h, in.len, kStep, ctx, cache);
        if (backward) att.backward(in.d_ctx, in.q, keys, in.h, in.len, cache, d_q, d_keys, d_h);
        benchmark::DoNotOptimize(ctx.data());
    }
    const AttentionCost c = attention_cost(m.cfg, kS);
    const int64_t fwd = c.query + c.scores + c.context;
    set_rate(st, kB * (backward ? 3 * fwd : fwd));  // backward ≈ 2× forward multiply-adds
    st.SetLabel(label(m));
}

}  // namespace

int main(int argc, char** argv) {
    // NAZAR_THREADS (default 1): one setting for BLAS and nazar's loops, stated in the output
    const char* env = std::getenv("NAZAR_THREADS");
    set_num_threads(env ? std::atoi(env) : 1);
    std::printf("threads %d, %s\n", num_threads(), blas_description().c_str());
    const Inputs in = make_inputs();
    const auto mechs = mechanisms();
    bool ok = true;
    for (const auto& m : mechs) {
        const double err = validate(m, in);
        std::printf("validate %-18s max |nazar - naive| = %.2e %s\n", m.name.c_str(), err, err < 1e-4 ? "ok" : "FAILED");
        ok = ok && err < 1e-4;
    }
    if (!ok) return 1;
    for (const auto& m : mechs) {
        benchmark::RegisterBenchmark(("precompute/" + m.name).c_str(), bm_precompute, m, in)->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("forward/" + m.name).c_str(), bm_step, m, in, false)->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("forward_backward/" + m.name).c_str(), bm_step, m, in, true)
            ->Unit(benchmark::kMicrosecond);
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
