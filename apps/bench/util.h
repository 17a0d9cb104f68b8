// Helpers of `nazar bench` (apps/bench/runners.h): presets, synthetic data, timing, memory, the
// analytic FLOP count (docs/performance.md) and the GEMM / scaling measurements.
#pragma once

#include "nazar/core/rng.h"
#include "nazar/data/batcher.h"
#include "nazar/models/config.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nazar::bench {

// The configurations of the performance issue (README, docs/performance.md).
struct Preset {
    std::string name;
    int src_vocab = 0, tgt_vocab = 0, emb = 0, enc_hidden = 0, dec_hidden = 0, att = 0, batch = 0;
};
Preset preset(const std::string& name);  // "standard" | "small"
// attention: "bahdanau" | "general" | "general-feed" (Luong general + input feeding) | "local-p"
// (Luong general, local-p, D = 10); global variants use global attention.
ModelConfig model_config(const Preset& p, const std::string& attention);

// n pairs, lengths uniform in [min_len, max_len], ids uniform in [4, V) (no specials).
std::pair<std::vector<std::vector<int32_t>>, std::vector<std::vector<int32_t>>> synthetic_pairs(
    Rng& rng, int n, int src_vocab, int tgt_vocab, int min_len, int max_len);

struct Timing {
    double wall = 0, cpu = 0;  // seconds; cpu = process CPU time (all threads)
};
class Stopwatch {
public:
    void start();
    Timing stop() const;

private:
    std::chrono::steady_clock::time_point wall0_{};
    double cpu0_ = 0;
};

double peak_rss_mb();   // VmHWM of this process
double load_average();  // 1-minute load average

// Multiply-add FLOPs (2 per multiply-add) of one training step (forward + backward = 3 x the
// forward's matrix products) on the batch's real tokens: docs/performance.md.
double train_flops(const ModelConfig& cfg, const Batch& b);

// Multiply-add FLOPs of decoding one sentence of S source tokens: the encoder once, then `steps`
// decoder steps of `rows` rows (beam size K: every hypothesis row runs every step).
double decode_flops(const ModelConfig& cfg, double S, double rows, double steps);
// Bytes of weights one decoder step reads (fp32): the cell's input and recurrent matrices, the
// attention query (additive), position predictor (local-p), W_c (Luong) and the generator. At
// batch 1 a step streams all of them for a few rows: decoding's bandwidth roofline.
double decoder_step_weight_bytes(const ModelConfig& cfg);
// Read bandwidth in GB/s over nazar's pool for a working set of `bytes` (summed repeatedly, one
// contiguous part per thread, as gemm() splits a product; best of several passes).
double read_bandwidth_gbs(double bytes);

nlohmann::json bench_gemm_rates(const Preset& p, int size);
// The square sgemm peak (size³, best of 3 over ~`seconds` in all) measured now: `bench gemm`'s
// peak, and the one train and decode report right after their timed work, so that the fraction
// of peak compares two measurements seconds apart, not a workload with a peak taken minutes
// earlier on a shared machine whose speed drifts. {"M", "N", "K", "gflops", "gflops_per_cpu_s"}.
nlohmann::json sgemm_peak_now(int size, double seconds);

// The machine's FMA peak from a register-only loop (no memory traffic: the physical limit of
// any sgemm), at the widest vectors nazar's kernels may use: {"lanes", "gflops" (all pool
// threads, wall), "gflops_per_cpu_s" (one thread's per CPU-second, best thread)}.
nlohmann::json fma_peak();
// What ran: CPU identity and usable feature bits, the environment switches set, the path each
// GEMM shape class takes, the GEMM library, and fma_peak() (every `nazar bench` report has it).
nlohmann::json cpu_report();
nlohmann::json bench_local_scaling(const Preset& p, const std::vector<int>& lengths, int seed);
nlohmann::json bench_epoch_scaling(const Preset& p, const std::vector<int>& corpus, int seed,
                                   int min_len, int max_len);

}  // namespace nazar::bench
