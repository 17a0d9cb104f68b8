// Fused chunked output layer + cross-entropy (nazar/nn/softmax_xent.h), forward + backward,
// against the unfused composition (Linear over all rows, log_softmax, NLL, its gradient, two
// gemms for d_X/d_W) that holds the (N, V) logits, log-probs and gradient at once.
// Shapes: N = 64 sentences × 30 target positions (15% padding), H = 512, V = 8000.
// Validates the fused result against the unfused one (loss and every gradient) before timing;
// exits 1 on a mismatch. Counters: GFLOP/s over the three gemms (6·N_real·H·V flops), MB of
// logit-sized scratch.
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/nn/softmax_xent.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <vector>

using namespace nazar;

namespace {

constexpr int kN = 64 * 30, kH = 512, kV = 8000, kPad = 0;

struct Problem {
    Tensor X{Shape{kN, kH}}, W{Shape{kV, kH}}, b{Shape{kV}};
    std::vector<int> y;
    Problem() {
        Rng rng(2024);
        rng.fill_uniform(X, -1, 1);
        rng.fill_uniform(W, -0.05f, 0.05f);
        rng.fill_uniform(b, -0.1f, 0.1f);
        y.resize(kN);
        for (int n = 0; n < kN; ++n) {
            const int pos = n % 30;  // sentence n / 30, position pos: lengths vary from 20 to 30
            const int len = 20 + static_cast<int>((n / 30) * 7 % 11);
            y[n] = pos < len ? 1 + static_cast<int>(rng.below(kV - 1)) : kPad;
        }
    }
    int64_t tokens() const { return count_targets(y, kPad); }
};

Problem& problem() {
    static Problem p;
    return p;
}

// The unfused composition: logits for every row, log_softmax, NLL, then the gradient.
struct Unfused {
    Tensor z{Shape{kN, kV}}, lp{Shape{kN, kV}};
    double run(const Problem& p, float scale, Tensor& d_X, Tensor& d_W, Tensor& d_b) {
        gemm(p.X, false, p.W, true, z, 1.0f, 0.0f);  // Linear
        kernels::add_bias_rows(z, p.b);
        kernels::log_softmax(z, lp);
        double loss = 0;
        // d z = scale (exp(lp) − onehot), zero on padded rows (written over z)
        for (int n = 0; n < kN; ++n) {
            float* dz = z.data() + static_cast<int64_t>(n) * kV;
            const float* l = lp.data() + static_cast<int64_t>(n) * kV;
            if (p.y[n] == kPad) {
                std::fill(dz, dz + kV, 0.0f);
                continue;
            }
            loss -= l[p.y[n]];
            kernels::exp(l, dz, kV);
            for (int v = 0; v < kV; ++v) dz[v] *= scale;
            dz[p.y[n]] -= scale;
        }
        gemm(z, false, p.W, false, d_X, 1.0f, 1.0f);
        gemm(z, true, p.X, false, d_W, 1.0f, 1.0f);
        kernels::sum_rows_into(z, d_b);
        return loss;
    }
};

bool validate() {
    const Problem& p = problem();
    const float scale = 1.0f / static_cast<float>(p.tokens());
    Tensor fx({kN, kH}), fw({kV, kH}), fb({kV}), ux({kN, kH}), uw({kV, kH}), ub({kV});
    SoftmaxXent xent({.ignore_index = kPad});
    const XentStats s = xent.forward_backward(p.X, p.W, p.b, p.y, scale, fx, fw, fb);
    Unfused u;
    const double loss = u.run(p, scale, ux, uw, ub);
    // Both are float32 with different summation orders over V = 8000: 1e-4 is ~100 ulps of slack.
    const double e_loss = std::abs(s.loss - loss) / loss;
    const double e_x = max_rel_error(fx, ux), e_w = max_rel_error(fw, uw),
                 e_b = max_rel_error(fb, ub);
    fmt::print(
        "validate softmax_xent N={} H={} V={} tokens={}: loss {:.6f} vs {:.6f} (rel {:.2e}), "
        "d_X {:.2e}, d_W {:.2e}, d_b {:.2e}\n",
        kN, kH, kV, s.tokens, s.loss, loss, e_loss, e_x, e_w, e_b);
    return e_loss < 1e-4 && e_x < 1e-4 && e_w < 1e-4 && e_b < 1e-4 && s.tokens == p.tokens();
}

void set_counters(benchmark::State& state, double logit_mb) {
    const double flops = 6.0 * static_cast<double>(problem().tokens()) * kH * kV;
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["scratch_MB"] = logit_mb;
}

void BM_fused(benchmark::State& state) {
    const Problem& p = problem();
    const int chunk = static_cast<int>(state.range(0));
    set_num_threads(static_cast<int>(state.range(1)));
    SoftmaxXent xent({.ignore_index = kPad, .chunk_rows = chunk});
    Tensor d_X({kN, kH}), d_W({kV, kH}), d_b({kV});
    const float scale = 1.0f / static_cast<float>(p.tokens());
    for (auto _ : state) {
        const XentStats s = xent.forward_backward(p.X, p.W, p.b, p.y, scale, d_X, d_W, d_b);
        benchmark::DoNotOptimize(s.loss);
    }
    set_counters(state, chunk * static_cast<double>(kV) * 4 / 1e6);
}

void BM_unfused(benchmark::State& state) {
    const Problem& p = problem();
    set_num_threads(static_cast<int>(state.range(0)));
    Unfused u;
    Tensor d_X({kN, kH}), d_W({kV, kH}), d_b({kV});
    const float scale = 1.0f / static_cast<float>(p.tokens());
    for (auto _ : state) benchmark::DoNotOptimize(u.run(p, scale, d_X, d_W, d_b));
    set_counters(state, 2.0 * kN * kV * 4 / 1e6);
}

}  // namespace

// Arguments: {chunk_rows, threads} and {threads}. "CPU" is process CPU time (all threads), which
// stays meaningful on a shared machine where wall time does not.
BENCHMARK(BM_fused)
    ->ArgsProduct({{128, 256, 512}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_unfused)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

int main(int argc, char** argv) {
    fmt::print("{}, {} threads\n", blas_description(), num_threads());
    if (!validate()) {
        fmt::print(
            "VALIDATION FAILED: fused softmax_xent disagrees with the unfused composition\n");
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
