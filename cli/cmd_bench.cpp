// `nazar bench <what>`: throughput of training and decoding on a stated configuration
// (docs/design.md §6), the measurements behind `make bench-compare` (docs/performance.md). This
// file is the command (options, --threads, printing); the runners and what they measure are in
// apps/bench/ (runners.h). --json prints one JSON object.
#include "apps/bench/runners.h"
#include "cli/command.h"
#include "cli/options.h"
#include "nazar/core/check.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace nazar::cli {
namespace {

struct BenchArgs : bench::BenchSettings {
    int threads = 0;
    bool json_out = false;
};

void setup_bench(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<BenchArgs>();
    app.add_option("what", a->what, "train | decode | gemm | local | epoch | cpu")
        ->required()
        ->check(CLI::IsMember({"train", "decode", "gemm", "local", "epoch", "cpu"}));
    app.add_option("--preset", a->preset,
                   "standard (V 8000, E 256, bi-GRU 256+256, GRU 512, A 512, B 64) | small "
                   "(V 1000, E 128, bi-GRU 128+128, GRU 256, A 256, B 32)")
        ->check(CLI::IsMember({"standard", "small"}))
        ->capture_default_str();
    app.add_option("--attention", a->attention, "bahdanau | general | general-feed | local-p")
        ->check(CLI::IsMember({"bahdanau", "general", "general-feed", "local-p"}))
        ->capture_default_str();
    add_threads_option(app, a->threads);  // not given: the global --threads
    app.add_option("--steps", a->steps, "train: timed steps")->capture_default_str();
    app.add_option("--warmup", a->warmup,
                   "train: untimed steps first (-1 = one pass over the distinct batches)")
        ->check(CLI::Range(-1, 1000000))
        ->capture_default_str();
    app.add_option("--batches", a->batches, "train: distinct synthetic batches (cycled)")
        ->capture_default_str();
    app.add_option("--batch", a->batch, "Sentences per batch (0 = the preset's; decode: 1)")
        ->capture_default_str();
    app.add_option("--beam", a->beam, "decode: beam size (1 = greedy)")->capture_default_str();
    app.add_option("--sentences", a->sentences, "decode: sentences timed")->capture_default_str();
    app.add_option("--max-length", a->max_length, "decode: output length cap")
        ->capture_default_str();
    app.add_option("--min-len", a->min_len, "Shortest synthetic sentence")->capture_default_str();
    app.add_option("--max-len", a->max_len, "Longest synthetic sentence")->capture_default_str();
    app.add_option("--size", a->size, "gemm: square size of the peak measurement")
        ->capture_default_str();
    app.add_option("--lengths", a->lengths, "local: source lengths")->delimiter(',');
    app.add_option("--corpus", a->corpus, "epoch: corpus sizes (sentence pairs)")->delimiter(',');
    app.add_option("--chunk-rows", a->chunk_rows,
                   "train: output-layer rows per fused chunk (SoftmaxXent)")
        ->capture_default_str();
    app.add_option("--seed", a->seed, "Weights and data seed")->capture_default_str();
    app.add_option("--save-init", a->save_init, "Write the initial model file here (for PyTorch)");
    app.add_option("--dump-batches", a->dump_batches, "Write the synthetic data here (JSON)");
    app.add_option("--precision", a->precision,
                   "decode: weight products in fp32, bf16 or int8 (packed once); train: inputs of "
                   "the large products as `nazar train --precision` runs them (bf16: fp32 "
                   "accumulation where this CPU's bf16 products pay, else fp32; bf16-always: on "
                   "any CPU; the machine's bf16 GEMM peak measured too); gemm: bf16 kernels on "
                   "the training shapes")
        ->check(CLI::IsMember({"fp32", "bf16", "bf16-always", "int8"}))
        ->capture_default_str();
    app.add_flag("--json", a->json_out, "One JSON object on stdout");
    run = [a] {
        apply_threads_option(a->threads);
        if (a->precision == "int8" && a->what != "decode")
            throw UsageError(
                "bench: --precision int8 is for `bench decode` (train and gemm take "
                "fp32 or bf16)");
        if (a->precision == "bf16-always" && a->what != "train")
            throw UsageError(
                "bench: --precision bf16-always is for `bench train` (decode and gemm take "
                "bf16)");
        const nlohmann::json j = bench::run_bench(*a);
        if (a->json_out)
            fmt::print("{}\n", j.dump());
        else
            fmt::print("{}\n", j.dump(2));
        return 0;
    };
}

}  // namespace

NZ_REGISTER_COMMAND(bench, "Throughput of training and decoding on a stated configuration",
                    setup_bench);

}  // namespace nazar::cli
