// One GRU layer (nazar/nn/rnn.h), forward + backward, B = 64 sentences × T = 30 steps,
// I = 256, H = 512, unidirectional, all sentences full length (so the FLOP count is exact).
// Before timing, the forward output and final state of two sentences of the same batch are
// validated against a naive float64 GRU (plain loops, libm σ/tanh); exits 1 on a mismatch.
// Counter GFLOP (shown as a rate, GFLOP/s) over the GEMMs (forward 2·B·T·3H·(I + H), backward twice
// that).
#include "nazar/core/blas.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/nn/rnn.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <vector>

using namespace nazar;

namespace {

constexpr int kB = 64, kT = 30, kI = 256, kH = 512;

struct Problem {
    Rng rng{2024};
    RNN rnn{RNN::Config{.cell = CellType::gru, .input_size = kI, .hidden_size = kH}, rng};
    Tensor x{Shape{kB, kT, kI}}, out{Shape{kB, kT, kH}}, d_out{Shape{kB, kT, kH}},
        d_x{Shape{kB, kT, kI}};
    std::vector<int> lengths = std::vector<int>(kB, kT);
    RNNState final, d_init;
    RNNCache cache;
    Problem() {
        rng.fill_uniform(x, -1, 1);
        rng.fill_uniform(d_out, -1, 1);
    }
    void forward() { rnn.forward(x, lengths, {}, out, final, cache, rng, Mode::train); }
    void backward() { rnn.backward(d_out, {}, cache, d_x, d_init); }
};

Problem& problem() {
    static Problem p;
    return p;
}

// Naive float64 GRU over sentence b; returns max |nazar − naive| / max |naive| over outputs.
double naive_error(const Problem& p, int b) {
    const RNNCellParams& P = p.rnn.params.cells[0];
    std::vector<double> h(kH, 0.0), hn(kH);
    double err = 0, ref_max = 0;
    for (int t = 0; t < kT; ++t) {
        const float* x = p.x.data() + (static_cast<int64_t>(b) * kT + t) * kI;
        for (int j = 0; j < kH; ++j) {
            double a[3], u[3];
            for (int g = 0; g < 3; ++g) {
                const int row = g * kH + j;
                a[g] = P.bias_ih[row];
                u[g] = P.bias_hh[row];
                for (int k = 0; k < kI; ++k) a[g] += double(P.weight_ih.at(row, k)) * x[k];
                for (int k = 0; k < kH; ++k) u[g] += double(P.weight_hh.at(row, k)) * h[k];
            }
            const double r = 1 / (1 + std::exp(-(a[0] + u[0]))),
                         z = 1 / (1 + std::exp(-(a[1] + u[1])));
            const double n = std::tanh(a[2] + r * u[2]);
            hn[j] = (1 - z) * n + z * h[j];
        }
        h = hn;
        for (int j = 0; j < kH; ++j) {
            err = std::max(err, std::abs(p.out.at(b, t, j) - h[j]));
            ref_max = std::max(ref_max, std::abs(h[j]));
        }
    }
    for (int j = 0; j < kH; ++j) err = std::max(err, std::abs(p.final.h.at(0, b, j) - h[j]));
    return err / std::max(ref_max, 1e-30);
}

bool validate() {
    Problem& p = problem();
    p.forward();
    p.backward();
    double worst = 0;
    for (const int b : {0, kB - 1}) worst = std::max(worst, naive_error(p, b));
    bool finite = true;
    for (int64_t i = 0; i < p.d_x.numel(); ++i) finite = finite && std::isfinite(p.d_x[i]);
    fmt::print(
        "validate gru B={} T={} I={} H={}: forward vs naive float64 rel err {:.2e} (tol 1e-4), d_x "
        "{}\n",
        kB, kT, kI, kH, worst, finite ? "finite" : "NOT FINITE");
    return worst < 1e-4 && finite;
}

double gemm_flops_forward() {
    return 2.0 * kB * kT * 3.0 * kH * (kI + kH);
}

void BM_gru_forward(benchmark::State& state) {
    Problem& p = problem();
    for (auto _ : state) {
        p.forward();
        benchmark::DoNotOptimize(p.out.data());
    }
    state.counters["GFLOP"] = benchmark::Counter(gemm_flops_forward() * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_gru_forward_backward(benchmark::State& state) {
    Problem& p = problem();
    for (auto _ : state) {
        p.forward();
        p.d_x.zero();
        p.backward();
        benchmark::DoNotOptimize(p.d_x.data());
    }
    state.counters["GFLOP"] = benchmark::Counter(3 * gemm_flops_forward() * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_gru_forward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_gru_forward_backward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

int main(int argc, char** argv) {
    fmt::print("{}, {} threads\n", blas_description(), num_threads());
    if (!validate()) {
        fmt::print("VALIDATION FAILED: GRU layer disagrees with the naive float64 GRU\n");
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
