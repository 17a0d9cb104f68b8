// Batch-1 decoding against its bandwidth roofline, step by step (docs/performance-log.md,
// "Batch-1 decoding"). On the standard Bahdanau model (V 8000, E 256, bi-GRU 256 + 256, GRU 512,
// A 512) with a 25-token source, each iteration times, one after the other on nazar's pool:
//   read  one pass summing the step's own weights (25.3 MB: W_q, W_ih, W_hh and the generator)
//         where they live, split over the threads as the products are (the roofline: the same
//         bytes at the read bandwidth, in the same cache state as the step finds them);
//   step  one decoder step of `rows` rows: Seq2Seq::step (greedy: log-probs) at 1 row,
//         Seq2Seq::step_logits (beam search's path) at 5;
//   gemm  the step's four weight products alone, back to back, in the step's order.
// Interleaving the three keeps them under the same load; per-iteration times give
// distributions, and the counters are their minimum, 10th percentile and median (a machine
// shared with other work slows some iterations many times over: its quieter moments show in
// the low percentiles of all three alike). fraction_* = read time / step time at the same
// statistic: the share of the bandwidth roofline the step reaches; fraction_paired_med is the
// median over iterations of each read pass's time over the next step's.
// Before timing: the read pass's sum against a double-precision oracle, and each step's
// log-probabilities (greedy) summing to 1; exits 1 on a mismatch. Argument: rows (1 or 5).
#include "apps/bench/read_sum.h"
#include "nazar/core/blas.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/models/decode_session.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

using namespace nazar;

namespace {

constexpr int kV = 8000, kS = 25, kIters = 300;

std::unique_ptr<Seq2Seq> make_model() {
    ModelConfig c;
    c.src_vocab_size = kV;
    c.tgt_vocab_size = kV;
    c.embedding_size = 256;
    c.encoder = {.cell = CellType::gru, .hidden_size = 256, .num_layers = 1, .bidirectional = true};
    c.decoder.kind = DecoderKind::bahdanau;
    c.decoder.hidden_size = 512;
    c.attention.score = ScoreKind::additive;
    c.attention.attention_size = 512;
    return std::make_unique<Seq2Seq>(c, 2024);
}

// Σ of every float of the given matrices, each thread summing its contiguous share of each (as
// the products split their rows of B): the step's own weights, read where they live now.
float pooled_sum(std::span<const ConstTensorView> mats) {
    const int parts = num_threads();
    std::vector<float> part(static_cast<std::size_t>(parts));
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            float s = 0;
            for (const ConstTensorView& m : mats) {
                const int64_t n = m.numel(), b = n * p / parts, e = n * (p + 1) / parts;
                s += bench::sum_floats(m.data() + b, e - b);
            }
            part[static_cast<std::size_t>(p)] = s;
        }
    });
    float r = 0;
    for (float v : part) r += v;
    return r;
}

double seconds_of(const auto& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// The counters of BM_step from its per-iteration times.
void report(benchmark::State& st, const std::vector<double>& t_read,
            const std::vector<double>& t_step, const std::vector<double>& t_gemm, int64_t bytes,
            int R) {
    for (const auto& [tag, q] : {std::pair{"min", 0.0}, {"p10", 0.1}, {"med", 0.5}}) {
        const double r = quantile(t_read, q), s1 = quantile(t_step, q), g = quantile(t_gemm, q);
        st.counters[fmt::format("read_us_{}", tag)] = r * 1e6;
        st.counters[fmt::format("step_us_{}", tag)] = s1 * 1e6;
        st.counters[fmt::format("gemm_us_{}", tag)] = g * 1e6;
        st.counters[fmt::format("fraction_{}", tag)] = r / s1;
    }
    // the same ratio per iteration (a read pass and the step right after it share the moment's
    // load), then its median: the steadiest of the estimates under load
    std::vector<double> ratio, ratio_gemm;
    for (std::size_t i = 0; i < t_read.size(); ++i) {
        ratio.push_back(t_read[i] / t_step[i]);
        ratio_gemm.push_back(t_read[i] / t_gemm[i]);
    }
    st.counters["fraction_paired_med"] = quantile(ratio, 0.5);
    st.counters["fraction_gemm_paired_med"] = quantile(ratio_gemm, 0.5);
    st.counters["read_GBps_min"] = static_cast<double>(bytes) / quantile(t_read, 0) / 1e9;
    st.SetLabel(fmt::format("{} row(s), {} thread(s), {:.1f} MB of weights per step", R,
                            num_threads(), static_cast<double>(bytes) / 1e6));
}

void BM_step(benchmark::State& st) {
    set_num_threads(0);
    const int R = static_cast<int>(st.range(0));
    auto model = make_model();
    std::vector<int32_t> src;
    Rng rng(7);
    for (int i = 0; i < kS; ++i) src.push_back(4 + static_cast<int32_t>(rng.below(kV - 4)));
    const std::vector<int> len = {kS};
    DecodeSession session(*model);
    EncodedSource enc, rows;
    session.encode(src, len, kS, enc, R);
    session.select_rows(enc, std::vector<int>(static_cast<std::size_t>(R), 0), rows);
    DecoderState state;
    session.init_state(rows, state);
    const std::vector<int32_t> prev(static_cast<std::size_t>(R), 5);
    Tensor out({R, kV});
    // the step's weights: what a step streams
    const ConstTensorView gen = model->generator_weight(),
                          wih = model->decoder.gru[0].params.weight_ih,
                          whh = model->decoder.gru[0].params.weight_hh,
                          wq = model->attention.params.W_q;
    const int64_t bytes = 4 * (gen.numel() + wih.numel() + whh.numel() + wq.numel());
    const ConstTensorView mats[] = {wq, wih, whh, gen};
    double want = 0;
    for (const ConstTensorView& m : mats)
        for (int64_t i = 0; i < m.numel(); ++i) want += m.data()[i];
    const float got = pooled_sum(mats);
    double scale = 0;  // the sum's rounding bound: float lanes over 6.3M terms of |w| < 0.1
    for (const ConstTensorView& m : mats) scale += 1e-5 * static_cast<double>(m.numel());
    if (std::abs(got - want) > scale) {
        std::fprintf(stderr, "bench_step_roofline: sum %g, oracle %g\n", double(got), want);
        std::exit(1);
    }
    Tensor s({R, 512}), x0({R, 768}), logits({R, kV}), gi({R, 1536}), gh({R, 1536}), u({R, 512});
    rng.fill_uniform(s, -1, 1);
    rng.fill_uniform(x0, -1, 1);
    std::vector<double> t_read, t_step, t_gemm;
    for (auto _ : st) {
        t_read.clear(), t_step.clear(), t_gemm.clear();
        for (int it = 0; it < kIters; ++it) {
            t_read.push_back(seconds_of([&] { benchmark::DoNotOptimize(pooled_sum(mats)); }));
            t_step.push_back(seconds_of([&] {
                if (R == 1)
                    session.step(prev, rows, state, out, {});
                else
                    session.step_logits(prev, rows, state, out, {});
            }));
            t_gemm.push_back(seconds_of([&] {
                gemm(s, false, wq, true, u);
                gemm(x0, false, wih, true, gi);
                gemm(s, false, whh, true, gh);
                gemm(s, false, gen, true, logits);
            }));
            if (R == 1) {  // log-probabilities: Σ exp = 1
                double z = 0;
                for (int v = 0; v < kV; ++v) z += std::exp(static_cast<double>(out.at(0, v)));
                if (std::abs(z - 1) > 1e-3) {
                    std::fprintf(stderr, "bench_step_roofline: Σ p = %g\n", z);
                    std::exit(1);
                }
            }
        }
    }
    report(st, t_read, t_step, t_gemm, bytes, R);
}

}  // namespace

BENCHMARK(BM_step)->Arg(1)->Arg(5)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
