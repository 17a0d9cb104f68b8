// The runners of `nazar bench <what>` (cli/cmd_bench.cpp is the command: options, --threads,
// printing): throughput of training and decoding on a stated configuration (docs/design.md §6),
// the measurements behind `make bench-compare` (bench/compare/run.py, docs/performance.md).
//
//   train   --preset standard|small --attention bahdanau|general|general-feed|local-p
//   decode  --preset ... --attention ... --beam K --batch N --sentences M
//   gemm    [--size N]              sgemm peak + the preset's own GEMM shapes
//   local   --lengths 50,100,...    per-step decoder time, global vs local-p
//   epoch   --corpus 640,1280,...   training time per epoch vs corpus size
//   cpu                             what runs: CPU features, GEMM paths, FMA peak
// Every report carries "cpu" (util.h, cpu_report): the CPU's feature bits, the path each GEMM
// shape class takes, the GEMM library and the FMA peak of a register-only loop.
// Data are synthetic and deterministic (seed): source and target lengths uniform in
// [min_len, max_len], ids uniform over the non-special vocabulary. dump_batches writes them
// (JSON) and save_init the initial model, so bench/compare/torch_bench.py trains the same model
// from the same weights on the same batches.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace nazar::bench {

// What to measure and on what (the options of `nazar bench`, defaults included).
struct BenchSettings {
    std::string what, preset = "standard", attention = "bahdanau", save_init, dump_batches;
    std::string precision =
        "fp32";  // train/gemm: bf16 products (bf16.h); decode: packed weights (packed.h)
    int steps = 10, warmup = -1, batches = 8, batch = 0, beam = 5, sentences = 64, max_length = 40;
    int min_len = 15, max_len = 35, size = 2048, seed = 1, chunk_rows = 256;
    std::vector<int> lengths{50, 100, 200, 400, 800}, corpus{640, 1280, 2560};
};

// Timed training steps on synthetic batches: tokens/s, GFLOP/s, first-step loss, peak RSS.
nlohmann::json bench_train(const BenchSettings& a);
// Greedy (beam 1) or beam-search decoding of synthetic sentences: sentences/s and the rooflines.
nlohmann::json bench_decode(const BenchSettings& a);
// The report of `nazar bench <a.what>` on the current thread pool: the measurement of `what`
// plus "blas", "cpu", "threads" and "load_avg".
nlohmann::json run_bench(const BenchSettings& a);

}  // namespace nazar::bench
