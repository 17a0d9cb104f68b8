// Helpers of `nazar bench` (see util.h; method in docs/performance.md).
#include "apps/bench/util.h"

#include "apps/bench/read_sum.h"
#include "nazar/core/blas.h"
#include "nazar/core/check.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/core/threads.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/optim.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace nazar::bench {

using nlohmann::json;

Preset preset(const std::string& name) {
    if (name == "standard") return {"standard", 8000, 8000, 256, 256, 512, 512, 64};
    if (name == "small") return {"small", 1000, 1000, 128, 128, 256, 256, 32};
    throw UsageError(fmt::format("unknown preset '{}' (standard, small)", name));
}

ModelConfig model_config(const Preset& p, const std::string& attention) {
    json j = {
        {"src_vocab_size", p.src_vocab},
        {"tgt_vocab_size", p.tgt_vocab},
        {"embedding_size", p.emb},
        {"encoder", {{"cell", "gru"}, {"hidden_size", p.enc_hidden}, {"bidirectional", true}}},
        {"decoder", {{"cell", "gru"}, {"hidden_size", p.dec_hidden}}},
        {"attention", {{"attention_size", p.att}}}};
    if (attention == "bahdanau") {
        j["decoder"]["kind"] = "bahdanau";
        j["attention"]["score"] = "additive";
    } else if (attention == "general" || attention == "general-feed" || attention == "local-p") {
        j["decoder"]["kind"] = "luong";
        j["attention"]["score"] = "general";
        if (attention == "general-feed") j["decoder"]["input_feeding"] = true;
        if (attention == "local-p") j["attention"]["local"] = "local-p";
    } else {
        throw UsageError(fmt::format(
            "unknown attention '{}' (bahdanau, general, general-feed, local-p)", attention));
    }
    return model_config_from_json(j);
}

std::pair<std::vector<std::vector<int32_t>>, std::vector<std::vector<int32_t>>> synthetic_pairs(
    Rng& rng, int n, int src_vocab, int tgt_vocab, int min_len, int max_len) {
    NZ_CHECK(min_len >= 1 && max_len >= min_len, "bench: lengths [{}, {}]", min_len, max_len);
    std::vector<std::vector<int32_t>> src(n), tgt(n);
    auto fill = [&](std::vector<int32_t>& v, int V) {
        v.resize(min_len + rng.below(static_cast<uint64_t>(max_len - min_len + 1)));
        for (auto& x : v) x = 4 + static_cast<int32_t>(rng.below(static_cast<uint64_t>(V - 4)));
    };
    for (int i = 0; i < n; ++i) {
        fill(src[i], src_vocab);
        fill(tgt[i], tgt_vocab);
    }
    return {std::move(src), std::move(tgt)};
}

static double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void Stopwatch::start() {
    wall0_ = std::chrono::steady_clock::now();
    cpu0_ = cpu_seconds();
}

Timing Stopwatch::stop() const {
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count(),
            cpu_seconds() - cpu0_};
}

double peak_rss_mb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
    return 0;
}

double load_average() {
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : -1;
}

namespace {

// The sizes the FLOP and byte counts below are made of (docs/performance.md, docs/shapes.md).
struct CostDims {
    double E, Hs, H, V, G, Gd, dirs, C, D, A, P, F;
    bool additive, luong, dot, predictive;
    LocalMode local;
    int window;
};

CostDims cost_dims(const ModelConfig& cfg) {
    const AttentionConfig ac = attention_config(cfg);
    CostDims d{};
    d.E = cfg.embedding_size;
    d.Hs = cfg.encoder.hidden_size;
    d.H = cfg.decoder.hidden_size;
    d.V = cfg.tgt_vocab_size;
    d.G = cfg.encoder.cell == CellType::gru ? 3 : 4;
    d.Gd = cfg.decoder.cell == CellType::gru ? 3 : 4;
    d.dirs = cfg.encoder.bidirectional ? 2 : 1;
    d.C = d.dirs * d.Hs;
    d.D = generator_input_size(cfg);
    d.A = ac.attention_size;
    d.P = ac.position_size;
    d.additive = ac.score == ScoreKind::additive || ac.score == ScoreKind::concat;
    d.dot = ac.score == ScoreKind::dot;
    d.luong = cfg.decoder.kind == DecoderKind::luong;
    d.predictive = ac.local == LocalMode::predictive;
    d.local = ac.local;
    d.window = ac.window;
    d.F = d.luong ? (cfg.decoder.input_feeding ? d.H : 0) : d.C;
    return d;
}

// Multiply-adds of the encoder over S source tokens (both directions, keys once).
double encoder_macs(const CostDims& d, double S) {
    return S * d.dirs * (d.E * d.G * d.Hs + d.Hs * d.G * d.Hs) +
           S * d.C * (d.dot ? 0 : (d.additive ? d.A : d.H));
}

// Multiply-adds of one decoder step of one row over S source positions.
double decoder_step_macs(const CostDims& d, double S) {
    const double n = d.local == LocalMode::global ? S : std::min<double>(2 * d.window + 1, S);
    double step = (d.E + d.F) * d.Gd * d.H + d.H * d.Gd * d.H;  // decoder cell
    step += d.additive ? d.H * d.A + n * d.A : n * d.H;         // query / scores
    if (d.predictive) step += d.H * d.P + d.P;                  // position predictor
    step += n * d.C;                                            // context
    if (d.luong) step += (d.H + d.C) * d.H;                     // combine W_c
    return step + d.D * d.V;                                    // generator
}

}  // namespace

double train_flops(const ModelConfig& cfg, const Batch& b) {
    const CostDims d = cost_dims(cfg);
    double fwd = 0;  // multiply-adds of the forward pass
    for (int i = 0; i < b.B; ++i)
        fwd += encoder_macs(d, b.src_lengths[i]) +
               b.tgt_lengths[i] * decoder_step_macs(d, b.src_lengths[i]);
    return 2.0 * 3.0 * fwd;
}

double decode_flops(const ModelConfig& cfg, double S, double rows, double steps) {
    const CostDims d = cost_dims(cfg);
    return 2.0 * (encoder_macs(d, S) + rows * steps * decoder_step_macs(d, S));
}

double decoder_step_weight_bytes(const ModelConfig& cfg) {
    const CostDims d = cost_dims(cfg);
    double w = (d.E + d.F) * d.Gd * d.H + d.H * d.Gd * d.H + d.D * d.V;
    if (d.additive) w += d.H * d.A;
    if (d.predictive) w += d.H * d.P;
    if (d.luong) w += (d.H + d.C) * d.H;
    return 4.0 * w;
}

namespace {

// Best of 3 repetitions: GFLOP per wall second and per CPU second (process CPU time of all
// threads: what a loaded machine cannot inflate).
// weight_t: A Bᵀ through B's per-batch packed transpose (gemm_xwt), as the recurrences' steps.
std::pair<double, double> time_gemm(bool ta, bool tb, int M, int N, int K, double min_seconds,
                                    bool weight_t = false) {
    Tensor a({ta ? K : M, ta ? M : K}), bm({tb ? N : K, tb ? K : N}), c({M, N});
    Rng rng(3);
    rng.fill_uniform(a, -1, 1);
    rng.fill_uniform(bm, -1, 1);
    WeightT wt;
    if (weight_t) refresh_weight_t(wt, bm);
    const auto gemm = [&](TensorView x, bool tx, TensorView y, bool ty, TensorView z) {
        if (weight_t)
            gemm_xwt(M, N, K, 1.0f, x.data(), K, y.data(), K, weight_t_rows(wt), 0.0f, z.data(), N);
        else
            nazar::gemm(x, tx, y, ty, z);
    };
    gemm(a, ta, bm, tb, c);  // warm-up
    double best = 0, best_cpu = 0;
    for (int rep = 0; rep < 3; ++rep) {
        int iters = 0;
        Stopwatch sw;
        sw.start();
        Timing t;
        do {
            gemm(a, ta, bm, tb, c);
            ++iters;
            t = sw.stop();
        } while (t.wall < min_seconds / 3);
        const double flop = 2.0 * M * N * K * iters;
        best = std::max(best, flop / t.wall / 1e9);
        best_cpu = std::max(best_cpu, flop / t.cpu / 1e9);
    }
    return {best, best_cpu};
}

}  // namespace

json sgemm_peak_now(int size, double seconds) {
    const auto [g, gc] = time_gemm(false, false, size, size, size, seconds);
    return {{"M", size}, {"N", size}, {"K", size}, {"gflops", g}, {"gflops_per_cpu_s", gc}};
}

json bench_gemm_rates(const Preset& p, int size) {
    json j;
    j["what"] = "gemm";
    j["peak"] = sgemm_peak_now(size, 1.5);
    const int B = p.batch, S = 35, H = p.dec_hidden, C = 2 * p.enc_hidden, V = p.tgt_vocab,
              E = p.emb;
    struct Shape {
        const char* name;
        bool ta, tb;
        int M, N, K;
        bool weight_t = false;
    };
    const Shape shapes[] = {
        {"generator logits X Wt (256-row chunk)", false, true, 256, V, H},
        {"generator d_X = dZ W", false, false, 256, H, V},
        {"generator d_W += dZt X", true, false, V, H, 256},
        {"encoder input projection (B*S rows)", false, true, B * S, 3 * p.enc_hidden, E},
        {"encoder recurrent h W_hh^T", false, true, B, 3 * p.enc_hidden, p.enc_hidden},
        {"decoder input [e;c] W_ih^T (per step)", false, true, B, 3 * H, E + C},
        {"decoder recurrent h W_hh^T", false, true, B, 3 * H, H},
        // what the steps run: x (W^T) with W^T made once per batch (blas.h gemm_xwt), and d_h = d_a
        // W
        {"decoder recurrent h W_hh^T, per-batch packed W^T", false, true, B, 3 * H, H, true},
        {"decoder recurrent d_h = d_a W_hh", false, false, B, H, 3 * H},
        {"attention keys (B*S rows)", false, true, B * S, H, C},
    };
    json rows = json::array();
    for (const Shape& s : shapes) {
        const auto [g, gc] = time_gemm(s.ta, s.tb, s.M, s.N, s.K, 0.6, s.weight_t);
        rows.push_back({{"name", s.name},
                        {"M", s.M},
                        {"N", s.N},
                        {"K", s.K},
                        {"gflops", g},
                        {"gflops_per_cpu_s", gc}});
    }
    j["shapes"] = rows;
    return j;
}

json bench_local_scaling(const Preset& p, const std::vector<int>& lengths, int seed) {
    json rows = json::array();
    const int N = 16, steps = 20;
    for (const char* att : {"general", "local-p"}) {
        Seq2Seq model(model_config(p, att), static_cast<uint64_t>(seed));
        for (int S : lengths) {
            Rng rng(static_cast<uint64_t>(seed), 17);
            std::vector<int32_t> src(static_cast<std::size_t>(N) * S);
            for (auto& x : src)
                x = 4 + static_cast<int32_t>(rng.below(static_cast<uint64_t>(p.src_vocab - 4)));
            const std::vector<int> len(N, S);
            DecodeSession session(model);
            EncodedSource enc;
            session.encode(src, len, S, enc);
            DecoderState st;
            session.init_state(enc, st);
            Tensor lp({N, p.tgt_vocab});
            std::vector<int32_t> prev(N, 2);
            session.step(prev, enc, st, lp, TensorView());  // warm-up
            // full decoder step (cell + attention + generator) and the attention alone
            Stopwatch sw;
            sw.start();
            for (int t = 0; t < steps; ++t) session.step(prev, enc, st, lp, TensorView());
            const Timing full = sw.stop();
            Tensor q({N, p.dec_hidden}), ctx({N, 2 * p.enc_hidden});
            rng.fill_uniform(q, -1, 1);
            AttentionStepCache cache;
            sw.start();
            for (int t = 0; t < steps * 10; ++t)
                model.attention.forward(q, enc.keys, enc.enc_out, enc.lengths, t, ctx, cache);
            const Timing attn = sw.stop();
            rows.push_back({{"attention", att},
                            {"S", S},
                            {"rows", N},
                            {"step_ms", 1e3 * full.wall / steps},
                            {"step_cpu_ms", 1e3 * full.cpu / steps},
                            {"attention_ms", 1e3 * attn.wall / (steps * 10)},
                            {"attention_cpu_ms", 1e3 * attn.cpu / (steps * 10)}});
        }
    }
    return {{"what", "local"}, {"preset", p.name}, {"rows", rows}};
}

json bench_epoch_scaling(const Preset& p, const std::vector<int>& corpus, int seed, int min_len,
                         int max_len) {
    json rows = json::array();
    for (int n : corpus) {
        const ModelConfig cfg = model_config(p, "bahdanau");
        Seq2Seq model(cfg, static_cast<uint64_t>(seed));
        ParamList params = model.parameters();
        Optimizer opt = Optimizer::adam(params, AdamOptions{});
        Rng data_rng(static_cast<uint64_t>(seed), 19), rng(static_cast<uint64_t>(seed), 7);
        auto [src, tgt] = synthetic_pairs(data_rng, n, p.src_vocab, p.tgt_vocab, min_len, max_len);
        std::vector<Batch> batches;
        for (int i = 0; i < n; i += p.batch) {
            const int e = std::min(n, i + p.batch);
            batches.push_back(
                batch_from_ids(std::span(src.data() + i, e - i), std::span(tgt.data() + i, e - i)));
        }
        int64_t tokens = 0;
        TrainPass pass(model);
        pass.train_step(batches[0], {}, rng);  // warm-up (first-touch allocations), not timed
        Stopwatch sw;
        sw.start();
        for (const Batch& b : batches) {
            zero_grads(params);
            tokens += pass.train_step(b, {}, rng).tokens;
            opt.step();
        }
        const Timing t = sw.stop();
        rows.push_back({{"pairs", n},
                        {"target_tokens", tokens},
                        {"epoch_s", t.wall},
                        {"epoch_cpu_s", t.cpu},
                        {"ms_per_pair", 1e3 * t.wall / n},
                        {"cpu_ms_per_pair", 1e3 * t.cpu / n}});
    }
    return {{"what", "epoch"}, {"preset", p.name}, {"rows", rows}};
}

}  // namespace nazar::bench

// ---- what ran: features, paths, FMA peak (apps/bench/util.h) ----
namespace nazar::bench {
namespace {

// iters x R independent FMA chains of one vector each; returns a value that depends on all of
// them (so nothing is optimised away). The chains are independent: the loop is bound by the FMA
// ports' throughput, not by the FMA latency.
#if defined(__AVX2__) && defined(__FMA__)
float fma_chains8(int64_t iters) {
    constexpr int R = 12;
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_set1_ps(1e-3f * static_cast<float>(r));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(acc[r], a, b);
    for (int r = 1; r < R; ++r) acc[0] = _mm256_add_ps(acc[0], acc[r]);
    return _mm256_cvtss_f32(acc[0]);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) float fma_chains16(int64_t iters) {
    constexpr int R = 24;
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(1e-3f * static_cast<float>(r));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 24
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(acc[r], a, b);
    for (int r = 1; r < R; ++r) acc[0] = _mm512_add_ps(acc[0], acc[r]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    float s = 0;
    for (float x : lanes) s += x;
    return s;
}
#pragma GCC diagnostic pop
#endif

// The peak measurement's clock; without AVX2 (aarch64) nothing measures a peak.
[[maybe_unused]] double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

double read_bandwidth_gbs(double bytes) {
    const auto n = static_cast<int64_t>(std::max(bytes, 4096.0) / 4);
    std::vector<float> buf(static_cast<std::size_t>(n), 1.0f);
    const int parts = num_threads();
    std::vector<float> sums(static_cast<std::size_t>(parts));
    const auto pass = [&] {
        parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
            for (int64_t p = p0; p < p1; ++p)
                sums[static_cast<std::size_t>(p)] =
                    sum_floats(buf.data() + n * p / parts, n * (p + 1) / parts - n * p / parts);
        });
    };
    pass();  // warm: the working set in cache as far as it fits, as a decoder's weights are
    double best = 0;
    for (int rep = 0; rep < 20; ++rep) {
        Stopwatch sw;
        sw.start();
        pass();
        best = std::max(best, 4.0 * static_cast<double>(n) / std::max(sw.stop().wall, 1e-9) / 1e9);
    }
    volatile float sink = sums[0];
    (void)sink;
    return best;
}

json fma_peak() {
#if defined(__AVX2__) && defined(__FMA__)
    const bool wide = avx512_allowed();
    const int lanes = wide ? 16 : 8, chains = wide ? 24 : 12;
    const auto run = [&](int64_t iters) { return wide ? fma_chains16(iters) : fma_chains8(iters); };
    const double flop_per_iter = 2.0 * lanes * chains;
    // calibrate to ~0.1 s per thread
    Stopwatch sw;
    sw.start();
    volatile float sink = run(1 << 16);
    const double t = std::max(sw.stop().cpu, 1e-6);
    const auto iters = static_cast<int64_t>(std::clamp(0.1 / t * (1 << 16), 1e5, 1e9));
    const int threads = num_threads();
    double best = 0, best_cpu = 0;
    for (int rep = 0; rep < 3; ++rep) {
        std::vector<double> per_cpu(static_cast<std::size_t>(threads), 0.0);
        sw.start();
        parallel_for(threads, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const double c0 = thread_cpu_seconds();
                sink = sink + run(iters);
                per_cpu[static_cast<std::size_t>(i)] =
                    flop_per_iter * static_cast<double>(iters) / (thread_cpu_seconds() - c0);
            }
        });
        const double wall = sw.stop().wall;
        best = std::max(best, flop_per_iter * static_cast<double>(iters) * threads / wall / 1e9);
        for (double r : per_cpu) best_cpu = std::max(best_cpu, r / 1e9);
    }
    return {
        {"lanes", lanes}, {"threads", threads}, {"gflops", best}, {"gflops_per_cpu_s", best_cpu}};
#else
    return {{"lanes", 1}, {"note", "built without AVX2/FMA: no FMA peak measured"}};
#endif
}

// The kernels of reduced-precision weight products (decoding a bf16 / int8 model) at beam 5,
// batch 1 and batch 64.
json packed_kernels() {
    json out = json::object();
    for (const Precision p : {Precision::bf16, Precision::int8}) {
        json rows = json::object();
        for (const int M : {5, 320}) rows[std::to_string(M) + " rows"] = packed_kernel(p, M);
        out[precision_name(p)] = rows;
    }
    out["amx_from_rows"] = packed_amx_min_rows(Precision::int8);
    return out;
}

json cpu_report() {
    const CpuFeatures& f = cpu_features();
    json paths = json::array();
    for (const GemmPathRow& r : gemm_paths())
        paths.push_back({{"class", r.shape_class},
                         {"M", r.M},
                         {"N", r.N},
                         {"K", r.K},
                         {"kernel", r.path.kernel},
                         {"isa", r.path.isa},
                         {"detail", r.path.detail}});
    return {{"vendor", f.vendor},
            {"brand", f.brand},
            {"family", f.family},
            {"model", f.model},
            {"features", f.names()},
            {"amx", f.amx_note.empty() ? "usable" : f.amx_note},
            {"switches", switches().set},
            {"gemm_library", blas_description()},
            {"gemm_expected_isa", gemm_expected_isa()},
            {"gemm_paths", paths},
            {"packed_kernels", packed_kernels()},
            {"fma_peak", fma_peak()}};
}

}  // namespace nazar::bench
