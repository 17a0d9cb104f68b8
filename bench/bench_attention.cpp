// One decoder step of every attention mechanism, B=64 S=50 d_s=d_h=512 d_a=256 (docs/spec.md §9):
// precompute (keys once per batch), forward, and forward+backward. Before timing, each
// mechanism's forward is validated against a naive double-precision computation written
// straight from docs/spec.md §3-5 (attention/naive.h), with padded sentences in the batch.
// Output: Google Benchmark's table; each line carries the shapes as its label and GFLOP/s from
// the multiply-add count of attention_cost (the same model `nazar explain` prints).
// Threads: NAZAR_THREADS (default 1, so numbers from a shared machine stay comparable).
#include "nazar/attention/attention.h"
#include "nazar/attention/naive.h"
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
    const AttentionConfig add{
        .score = ScoreKind::additive, .query_size = kH, .context_size = kC, .attention_size = kA};
    const AttentionConfig gen{.score = ScoreKind::general, .query_size = kH, .context_size = kC};
    AttentionConfig dot = gen, cat = add, sgen = gen, lm = gen, lp = gen, lpa = add;
    dot.score = ScoreKind::dot;
    cat.score = ScoreKind::concat;
    sgen.scale = ScaleMode::inv_sqrt;
    lm.local = LocalMode::monotonic;
    lp.local = lpa.local = LocalMode::predictive;
    lm.window = lp.window = lpa.window = kD;
    return {{"bahdanau", add},        {"dot", dot},    {"general", gen}, {"concat", cat},
            {"scaled-general", sgen}, {"local-m", lm}, {"local-p", lp},  {"local-p-additive", lpa}};
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
    for (int b = 0; b < kB; ++b)
        in.len[b] = b % 4 == 0 ? kS : 5 + static_cast<int>(rng.below(kS - 5));
    return in;
}

// Max abs difference of weights (dense) and contexts between nazar's forward and the oracle.
double validate(const Mech& m, const Inputs& in) {
    Rng rng(5);
    Attention att(m.cfg, rng);
    AttentionKeys keys;
    AttentionStepCache cache;
    Tensor ctx({kB, kC}), dense({kB, kS}), ctx_ref({kB, kC}), dense_ref({kB, kS});
    att.precompute(in.h, keys);
    att.forward(in.q, keys, in.h, in.len, kStep, ctx, cache);
    dense_weights(cache, dense);
    attn::naive::attention_forward(att, in.q, in.h, in.len, kStep, dense_ref, ctx_ref);
    return std::max(max_abs_diff(dense, dense_ref), max_abs_diff(ctx, ctx_ref));
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

// The notes' accounting (docs/spec.md §9, first column): keys recomputed at every step.
void bm_keys_per_step(benchmark::State& st, const Mech& m, const Inputs& in) {
    Rng rng(5);
    Attention att(m.cfg, rng);
    AttentionKeys keys;
    AttentionStepCache cache;
    Tensor ctx({kB, kC});
    for (auto _ : st) {
        att.precompute(in.h, keys);
        att.forward(in.q, keys, in.h, in.len, kStep, ctx, cache);
        benchmark::DoNotOptimize(ctx.data());
    }
    const AttentionCost c = attention_cost(m.cfg, kS);
    set_rate(st, kB * (c.keys + c.query + c.scores + c.context));
    st.SetLabel(label(m) + " (keys recomputed every step)");
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
        std::printf("validate %-18s max |nazar - naive| = %.2e %s\n", m.name.c_str(), err,
                    err < 1e-4 ? "ok" : "FAILED");
        ok = ok && err < 1e-4;
    }
    if (!ok) return 1;
    // median of 5 repetitions (the aggregate lines); pass --benchmark_repetitions to change
    auto tune = [](benchmark::internal::Benchmark* b) {
        b->Unit(benchmark::kMicrosecond)->Repetitions(5)->ReportAggregatesOnly(true)->MinTime(0.05);
    };
    tune(benchmark::RegisterBenchmark("forward_keys_per_step/bahdanau", bm_keys_per_step, mechs[0],
                                      in));
    for (const auto& m : mechs) {
        tune(benchmark::RegisterBenchmark(("precompute/" + m.name).c_str(), bm_precompute, m, in));
        tune(benchmark::RegisterBenchmark(("forward/" + m.name).c_str(), bm_step, m, in, false));
        tune(benchmark::RegisterBenchmark(("forward_backward/" + m.name).c_str(), bm_step, m, in,
                                          true));
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
