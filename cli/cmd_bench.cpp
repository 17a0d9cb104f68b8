// `nazar bench <what>`: throughput of training and decoding on a stated configuration
// (docs/design.md §6), the measurements behind `make bench-compare` (docs/performance.md).
//
//   nazar bench train  --preset standard|small --attention bahdanau|general|general-feed|local-p
//   nazar bench decode --preset ... --attention ... --beam K --batch N --sentences M
//   nazar bench gemm   [--size N]              sgemm peak + the preset's own GEMM shapes
//   nazar bench local  --lengths 50,100,...    per-step decoder time, global vs local-p
//   nazar bench epoch  --corpus 640,1280,...   training time per epoch vs corpus size
//   nazar bench cpu                            what runs: CPU features, GEMM paths, FMA peak
// Every report carries "cpu" (cli/bench_util.h, cpu_report): the CPU's feature bits, the path
// each GEMM shape class takes, the GEMM library and the FMA peak of a register-only loop.
// Data are synthetic and deterministic (--seed): source and target lengths uniform in
// [--min-len, --max-len], ids uniform over the non-special vocabulary. --dump-batches writes
// them (JSON) and --save-init the initial model, so bench/compare/torch_bench.py trains the
// same model from the same weights on the same batches. --json prints one JSON object.
#include "cli/bench_bf16.h"
#include "cli/bench_util.h"
#include "cli/command.h"
#include "cli/options.h"
#include "nazar/core/blas.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/core/threads.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/model_file.h"
#include "nazar/train/optim.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

using nlohmann::json;

struct BenchArgs {
    std::string what, preset = "standard", attention = "bahdanau", save_init, dump_batches;
    std::string precision =
        "fp32";  // train/gemm: bf16 products (bf16.h); decode: packed weights (packed.h)
    int threads = 0, steps = 10, warmup = 2, batches = 8, batch = 0, beam = 5, sentences = 64,
        max_length = 40;
    int min_len = 15, max_len = 35, size = 2048, seed = 1, chunk_rows = 256;
    std::vector<int> lengths{50, 100, 200, 400, 800}, corpus{640, 1280, 2560};
    bool json_out = false;
};

// ---- train ----
// What the bf16 products of a timed run did (share of the step's FLOPs, their rate) and the
// machine's bf16 GEMM peak measured now, the roofline the step's rate is set against.
json bf16_train_report(GemmPrecision p, const Bf16Counters& before, double flops, const Timing& t,
                       int size) {
    if (p != GemmPrecision::bf16) return nullptr;
    const Bf16Counters now = bf16_counters();
    const double f = now.flops - before.flops, s = now.seconds - before.seconds;
    json peak = bf16_gemm_peak(size);
    const double roof = peak["bf16_gflops"].get<double>(),
                 roof_cpu = peak["bf16_gflops_per_cpu_s"].get<double>();
    // flop_over_analytic: the bf16 products' FLOPs over the step's analytic count, which counts
    // real tokens only (the products also run over padding), so it may exceed 1
    return {{"kernel", bf16_description()},
            {"products", now.products - before.products},
            {"gflop", f / 1e9},
            {"flop_over_analytic", flops > 0 ? f / flops : 0.0},
            {"gemm_gflops", s > 0 ? f / s / 1e9 : 0.0},
            {"peak", peak},
            {"step_fraction_of_bf16_peak", roof > 0 ? flops / t.wall / 1e9 / roof : 0.0},
            {"step_fraction_of_bf16_peak_per_cpu_s",
             roof_cpu > 0 ? flops / t.cpu / 1e9 / roof_cpu : 0.0}};
}

json bench_train(const BenchArgs& a) {
    const Preset p = preset(a.preset);
    const ModelConfig cfg = model_config(p, a.attention);
    Seq2Seq model(cfg, static_cast<uint64_t>(a.seed));
    if (!a.save_init.empty()) save_model(a.save_init, model);
    Rng data_rng(static_cast<uint64_t>(a.seed), 11);
    std::vector<Batch> batches;
    std::vector<std::vector<std::vector<int32_t>>> srcs, tgts;
    for (int i = 0; i < a.batches; ++i) {
        auto [src, tgt] = synthetic_pairs(data_rng, a.batch > 0 ? a.batch : p.batch, p.src_vocab,
                                          p.tgt_vocab, a.min_len, a.max_len);
        batches.push_back(batch_from_ids(src, tgt));
        srcs.push_back(std::move(src));
        tgts.push_back(std::move(tgt));
    }
    if (!a.dump_batches.empty()) {
        json j = json::array();
        for (std::size_t i = 0; i < srcs.size(); ++i)
            j.push_back({{"src", srcs[i]}, {"tgt", tgts[i]}});
        std::ofstream(a.dump_batches) << j.dump();
    }
    ParamList params = model.parameters();
    Optimizer opt = Optimizer::adam(params, AdamOptions{.lr = 1e-3});
    Rng rng(static_cast<uint64_t>(a.seed), 7);
    const TrainOptions topt{.chunk_rows = a.chunk_rows};
    double first_loss = 0;
    int64_t tokens = 0, src_tokens = 0;
    double flops = 0;
    Stopwatch sw;
    const GemmPrecision precision = parse_gemm_precision(a.precision);
    Bf16Counters bf16_before;
    for (int s = 0; s < a.warmup + a.steps; ++s) {
        if (s == a.warmup) {
            sw.start();
            bf16_before = bf16_counters();
        }
        const Batch& b = batches[static_cast<std::size_t>(s) % batches.size()];
        zero_grads(params);
        LossStats st;
        {
            const GemmPrecisionScope scope(precision, constant_ranges(params));
            st = model.train_step(b, topt, rng);
        }
        opt.step();
        if (s == 0) first_loss = st.loss / std::max<int64_t>(st.tokens, 1);
        if (s >= a.warmup) {
            tokens += st.tokens;
            src_tokens += b.src_tokens();
            flops += train_flops(cfg, b);
        }
    }
    const Timing t = sw.stop();
    json bf16 = bf16_train_report(precision, bf16_before, flops, t, a.size);
    return {{"what", "train"},
            {"precision", a.precision},
            {"bf16", bf16},
            {"preset", a.preset},
            {"attention", a.attention},
            {"steps", a.steps},
            {"chunk_rows", a.chunk_rows},
            {"target_tokens", tokens},
            {"source_tokens", src_tokens},
            {"wall_s", t.wall},
            {"cpu_s", t.cpu},
            {"tokens_per_s", tokens / t.wall},
            {"gflop", flops / 1e9},
            {"gflops", flops / t.wall / 1e9},
            {"gflops_per_cpu_s", flops / t.cpu / 1e9},
            {"flop_per_token", flops / static_cast<double>(std::max<int64_t>(tokens, 1))},
            {"first_loss", first_loss},
            {"peak_rss_mb", peak_rss_mb()}};
}

// ---- decode ----
json bench_decode(const BenchArgs& a) {
    const Preset p = preset(a.preset);
    const ModelConfig cfg = model_config(p, a.attention);
    std::unique_ptr<Seq2Seq> model;
    if (!a.save_init.empty()) {
        save_model(a.save_init, *std::make_unique<Seq2Seq>(cfg, static_cast<uint64_t>(a.seed)));
        model = std::move(load_model(a.save_init).model);
    } else {
        model = std::make_unique<Seq2Seq>(cfg, static_cast<uint64_t>(a.seed));
    }
    const Precision precision = parse_precision(a.precision);
    model->set_precision(precision);
    Rng data_rng(static_cast<uint64_t>(a.seed), 13);
    auto [src, tgt] =
        synthetic_pairs(data_rng, a.sentences, p.src_vocab, p.tgt_vocab, a.min_len, a.max_len);
    if (!a.dump_batches.empty()) std::ofstream(a.dump_batches) << json(src).dump();
    const int batch = a.batch > 0 ? a.batch : 1;
    int64_t out_tokens = 0;
    // For the rooflines: FLOPs of the decoded sentences (K rows each, one step per output token
    // and one for </s>, up to the cap) and decoder steps per batch (its longest sentence).
    double flops = 0, batch_steps = 0;
    const auto count = [&](const std::vector<int32_t>& source, std::size_t out_len, double& most) {
        const double steps = std::min<double>(static_cast<double>(out_len) + 1, a.max_length);
        flops += decode_flops(cfg, static_cast<double>(source.size()), std::max(a.beam, 1), steps);
        most = std::max(most, steps);
    };
    auto run = [&, &src = src](bool timed) {
        for (std::size_t i = 0; i < src.size(); i += batch) {
            const std::size_t end = std::min(src.size(), i + batch);
            const std::span<const std::vector<int32_t>> part(src.data() + i, end - i);
            const Batch b = batch_from_ids(part, {});
            double most = 0;
            if (a.beam <= 1) {
                const auto out =
                    greedy_decode(*model, b.src, b.src_lengths, b.S, {.max_length = a.max_length});
                if (timed)
                    for (std::size_t r = 0; r < out.size(); ++r) {
                        out_tokens += static_cast<int64_t>(out[r].tokens.size());
                        count(src[i + r], out[r].tokens.size(), most);
                    }
            } else {
                const auto out = beam_search(*model, b.src, b.src_lengths, b.S,
                                             {.beam_size = a.beam, .max_length = a.max_length});
                if (timed)
                    for (std::size_t r = 0; r < out.size(); ++r) {
                        out_tokens += static_cast<int64_t>(out[r][0].tokens.size());
                        count(src[i + r], out[r][0].tokens.size(), most);
                    }
            }
            batch_steps += most;
            if (!timed) break;  // warm-up: one batch
        }
    };
    run(false);
    flops = batch_steps = 0;
    Stopwatch sw;
    sw.start();
    run(true);
    const Timing t = sw.stop();
    const double weight_bytes = decoder_step_weight_bytes(cfg), rss = peak_rss_mb();
    // the roofline of this precision's weight products: beam 5 at batch 64's generator product
    const PackedRate roof = measure_packed_rate(precision, 320, p.tgt_vocab, p.dec_hidden, 1.0);
    return {{"what", "decode"},
            {"preset", a.preset},
            {"attention", a.attention},
            {"beam", a.beam},
            {"batch", batch},
            {"precision", a.precision},
            {"kernel", packed_kernel(precision)},
            {"sentences", src.size()},
            {"output_tokens", out_tokens},
            {"wall_s", t.wall},
            {"cpu_s", t.cpu},
            {"sentences_per_s", static_cast<double>(src.size()) / t.wall},
            {"gflop", flops / 1e9},
            {"gflops", flops / t.wall / 1e9},
            {"steps", batch_steps},
            {"step_weight_mb", weight_bytes / 1e6},
            {"weight_gbs", weight_bytes * batch_steps / t.wall / 1e9},
            {"read_gbs_step_weights", read_bandwidth_gbs(weight_bytes)},
            {"gemm_roofline",
             {{"M", 320},
              {"N", p.tgt_vocab},
              {"K", p.dec_hidden},
              {"gflops", roof.gflops},
              {"gflops_per_cpu_s", roof.gflops_per_cpu_s}}},
            {"peak_rss_mb", rss}};
}

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
    app.add_option("--warmup", a->warmup, "train: untimed steps first")->capture_default_str();
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
                   "the large products (bf16: fp32 accumulation, and the machine's bf16 GEMM peak "
                   "measured too); gemm: bf16 kernels on the training shapes")
        ->check(CLI::IsMember({"fp32", "bf16", "int8"}))
        ->capture_default_str();
    app.add_flag("--json", a->json_out, "One JSON object on stdout");
    run = [a] {
        apply_threads_option(a->threads);
        if (a->precision == "int8" && a->what != "decode")
            throw UsageError(
                "bench: --precision int8 is for `bench decode` (train and gemm take "
                "fp32 or bf16)");
        json j;
        if (a->what == "train")
            j = bench_train(*a);
        else if (a->what == "decode")
            j = bench_decode(*a);
        else if (a->what == "gemm" && a->precision == "bf16")
            j = bench_bf16_gemm(preset(a->preset), a->size);
        else if (a->what == "gemm")
            j = bench_gemm_rates(preset(a->preset), a->size);
        else if (a->what == "cpu")
            j = {{"what", "cpu"}};
        else if (a->what == "local")
            j = bench_local_scaling(preset(a->preset), a->lengths, a->seed);
        else
            j = bench_epoch_scaling(preset(a->preset), a->corpus, a->seed, a->min_len, a->max_len);
        j["blas"] = blas_description();
        j["cpu"] = cpu_report();
        if (a->what == "gemm" &&
            a->precision == "fp32")  // the sgemm rate as a share of the FMA peak, per CPU-second
            j["peak"]["fraction_of_fma_peak"] =
                j["peak"]["gflops_per_cpu_s"].get<double>() /
                std::max(1e-9, j["cpu"]["fma_peak"].value("gflops_per_cpu_s", 0.0));
        j["threads"] = num_threads();
        j["load_avg"] = load_average();
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
