// The runners of `nazar bench` (runners.h): train, decode, and the report every one carries.
#include "apps/bench/runners.h"

#include "apps/bench/bf16.h"
#include "apps/bench/util.h"
#include "nazar/core/blas.h"
#include "nazar/core/gemm/bf16.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/core/threads.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/optim.h"
#include "nazar/train/trainer.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace nazar::bench {

using nlohmann::json;

namespace {

// The sgemm peak measured now, right after the timed work (sgemm_peak_now), and the flops done in
// t as a share of it, per wall second and per CPU second. Called after peak_rss_mb() is read.
void add_sgemm_peak_after(json& j, double flops, const Timing& t) {
    const json peak = sgemm_peak_now(2048, 1.0);
    const double g = peak["gflops"].get<double>(), gc = peak["gflops_per_cpu_s"].get<double>();
    j["sgemm_peak_after"] = peak;
    j["of_sgemm_peak_after"] = {
        {"wall", g > 0 ? flops / t.wall / 1e9 / g : 0.0},
        {"per_cpu_s", gc > 0 && t.cpu > 0 ? flops / t.cpu / 1e9 / gc : 0.0}};
}

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

// The timed run's distinct synthetic batches, also written to --dump-batches (for PyTorch).
std::vector<Batch> train_batches(const BenchSettings& a, const Preset& p) {
    Rng data_rng(static_cast<uint64_t>(a.seed), 11);
    std::vector<Batch> batches;
    json dump = json::array();
    for (int i = 0; i < a.batches; ++i) {
        auto [src, tgt] = synthetic_pairs(data_rng, a.batch > 0 ? a.batch : p.batch, p.src_vocab,
                                          p.tgt_vocab, a.min_len, a.max_len);
        batches.push_back(batch_from_ids(src, tgt));
        if (!a.dump_batches.empty()) dump.push_back({{"src", src}, {"tgt", tgt}});
    }
    if (!a.dump_batches.empty()) std::ofstream(a.dump_batches) << dump.dump();
    return batches;
}

}  // namespace

json bench_train(const BenchSettings& a) {
    const Preset p = preset(a.preset);
    const ModelConfig cfg = model_config(p, a.attention);
    Seq2Seq model(cfg, static_cast<uint64_t>(a.seed));
    if (!a.save_init.empty()) save_model(a.save_init, model);
    const std::vector<Batch> batches = train_batches(a, p);
    ParamList params = model.parameters();
    TrainPass pass(model);  // its buffers grow in the warm-up pass and are reused
    Optimizer opt = Optimizer::adam(params, AdamOptions{.lr = 1e-3});
    Rng rng(static_cast<uint64_t>(a.seed), 7);
    const TrainOptions topt{.chunk_rows = a.chunk_rows};
    double first_loss = 0;
    int64_t tokens = 0, src_tokens = 0;
    double flops = 0;
    Stopwatch sw;
    // what `nazar train --precision` runs: bf16 only where it pays on this CPU (bf16_verdict)
    const GemmPrecision precision = training_gemm_precision(a.precision);
    Bf16Counters bf16_before;
    // every step's rate, the warm-up's included: shows where the steady state begins
    json step_gflops = json::array();
    // default: one pass over the distinct batches, so that every buffer has grown to the longest
    // batch before the clock starts (the first pass runs up to 3x slower: docs/performance.md)
    const int warmup = a.warmup < 0 ? a.batches : a.warmup;
    for (int s = 0; s < warmup + a.steps; ++s) {
        if (s == warmup) {
            sw.start();
            bf16_before = bf16_counters();
        }
        Stopwatch step_sw;
        step_sw.start();
        const Batch& b = batches[static_cast<std::size_t>(s) % batches.size()];
        zero_grads(params);
        LossStats st;
        {
            const GemmPrecisionScope scope(precision, constant_ranges(params));
            st = pass.train_step(b, topt, rng);
        }
        opt.step();
        const double step_flops = train_flops(cfg, b);
        step_gflops.push_back(step_flops / 1e9 / step_sw.stop().wall);
        if (s == 0) first_loss = st.loss / std::max<int64_t>(st.tokens, 1);
        if (s >= warmup) {
            tokens += st.tokens;
            src_tokens += b.src_tokens();
            flops += step_flops;
        }
    }
    const Timing t = sw.stop();
    json bf16 = bf16_train_report(precision, bf16_before, flops, t, a.size);
    const Bf16Verdict verdict = bf16_verdict();
    json j = {{"what", "train"},
              {"precision", a.precision},
              {"products", precision_name(precision)},
              {"bf16_pays", verdict.pays},
              {"bf16_verdict", verdict.why},
              {"bf16", bf16},
              {"preset", a.preset},
              {"attention", a.attention},
              {"steps", a.steps},
              {"warmup", warmup},
              {"step_gflops", step_gflops},
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
    if (precision == GemmPrecision::fp32) add_sgemm_peak_after(j, flops, t);
    return j;
}

// ---- decode ----
namespace {

// The roofline of this precision's weight products, measured now: beam 5 at batch 64's
// generator product (320 rows).
json packed_roofline(Precision precision, const Preset& p) {
    const int M = 320;
    const PackedRate roof = measure_packed_rate(precision, M, p.tgt_vocab, p.dec_hidden, 1.0);
    return {{"M", M},
            {"kernel", packed_kernel(precision, M)},
            {"N", p.tgt_vocab},
            {"K", p.dec_hidden},
            {"gflops", roof.gflops},
            {"gflops_per_cpu_s", roof.gflops_per_cpu_s}};
}

// The model `bench decode` runs: initialised from the seed, or written to --save-init and read
// back (what PyTorch then loads).
std::unique_ptr<Seq2Seq> decode_model(const BenchSettings& a, const ModelConfig& cfg) {
    if (a.save_init.empty()) return std::make_unique<Seq2Seq>(cfg, static_cast<uint64_t>(a.seed));
    save_model(a.save_init, *std::make_unique<Seq2Seq>(cfg, static_cast<uint64_t>(a.seed)));
    return std::move(load_model(a.save_init).model);
}

// Batch 1's bandwidth roofline: a step's weight bytes at the read bandwidth measured now (same
// process, same threads, a working set of the same size), against the run's mean step and its
// fastest batch's step.
void add_bandwidth_roofline(json& j, double weight_bytes, double steps, double best_step,
                            const Timing& t) {
    const double read_gbs = read_bandwidth_gbs(weight_bytes),
                 weight_gbs = weight_bytes * steps / t.wall / 1e9;
    j["step_weight_mb"] = weight_bytes / 1e6;
    j["step_us"] = steps > 0 ? t.wall / steps * 1e6 : 0.0;
    j["weight_gbs"] = weight_gbs;
    j["read_gbs_step_weights"] = read_gbs;
    j["step_us_at_read_bandwidth"] = read_gbs > 0 ? weight_bytes / read_gbs / 1e3 : 0.0;
    j["fraction_of_bandwidth_roofline"] = read_gbs > 0 ? weight_gbs / read_gbs : 0.0;
    j["step_us_best_batch"] = best_step * 1e6;
    j["fraction_of_bandwidth_roofline_best_batch"] =
        read_gbs > 0 && best_step > 0 ? weight_bytes / best_step / 1e9 / read_gbs : 0.0;
}

}  // namespace

json bench_decode(const BenchSettings& a) {
    const Preset p = preset(a.preset);
    const ModelConfig cfg = model_config(p, a.attention);
    std::unique_ptr<Seq2Seq> model = decode_model(a, cfg);
    const Precision precision = parse_precision(a.precision);
    model->set_precision(precision);
    Rng data_rng(static_cast<uint64_t>(a.seed), 13);
    auto [src, tgt] =
        synthetic_pairs(data_rng, a.sentences, p.src_vocab, p.tgt_vocab, a.min_len, a.max_len);
    if (!a.dump_batches.empty()) std::ofstream(a.dump_batches) << json(src).dump();
    const int batch = a.batch > 0 ? a.batch : 1;
    int64_t out_tokens = 0;
    // For the rooflines: FLOPs of the decoded sentences (K rows each, one per decoder step the
    // sentence ran) and decoder steps per batch (its longest sentence), counted, not inferred:
    // greedy runs one step per emitted token (</s> included), beam search as many as its
    // sentence ran (Hypothesis::steps; beams may go on after the best hypothesis ended).
    // best_step: the fastest batch's wall time per step, the counterpart of the read bandwidth's
    // best of 20 passes (on a machine shared with other work, both see its quieter moments).
    double flops = 0, batch_steps = 0, best_step = 0;
    const auto count = [&](const std::vector<int32_t>& source, int steps, double& most) {
        flops += decode_flops(cfg, static_cast<double>(source.size()), std::max(a.beam, 1), steps);
        most = std::max<double>(most, steps);
    };
    DecodeSession session(*model);  // outside the timed loop: its buffers are reused
    auto run = [&, &src = src](bool timed) {
        for (std::size_t i = 0; i < src.size(); i += batch) {
            const std::size_t end = std::min(src.size(), i + batch);
            const std::span<const std::vector<int32_t>> part(src.data() + i, end - i);
            const Batch b = batch_from_ids(part, {});
            double most = 0;
            Stopwatch batch_sw;
            batch_sw.start();
            if (a.beam <= 1) {
                const auto out =
                    greedy_decode(session, b.src, b.src_lengths, b.S, {.max_length = a.max_length});
                if (timed)
                    for (std::size_t r = 0; r < out.size(); ++r) {
                        out_tokens += static_cast<int64_t>(out[r].tokens.size());
                        count(src[i + r], static_cast<int>(out[r].tokens.size()), most);
                    }
            } else {
                const auto out = beam_search(session, b.src, b.src_lengths, b.S,
                                             {.beam_size = a.beam, .max_length = a.max_length});
                if (timed)
                    for (std::size_t r = 0; r < out.size(); ++r) {
                        out_tokens += static_cast<int64_t>(out[r][0].tokens.size());
                        count(src[i + r], out[r][0].steps, most);
                    }
            }
            batch_steps += most;
            const double per_step = batch_sw.stop().wall / std::max(most, 1.0);
            if (timed && (best_step == 0 || per_step < best_step)) best_step = per_step;
            if (!timed) break;  // warm-up: one batch
        }
    };
    run(false);
    flops = batch_steps = best_step = 0;
    Stopwatch sw;
    sw.start();
    run(true);
    const Timing t = sw.stop();
    json j = {{"what", "decode"},
              {"preset", a.preset},
              {"attention", a.attention},
              {"beam", a.beam},
              {"batch", batch},
              {"precision", a.precision},
              {"kernel", packed_kernel(precision, batch * std::max(1, a.beam))},
              {"sentences", src.size()},
              {"output_tokens", out_tokens},
              {"wall_s", t.wall},
              {"cpu_s", t.cpu},
              {"sentences_per_s", static_cast<double>(src.size()) / t.wall},
              {"gflop", flops / 1e9},
              {"gflops", flops / t.wall / 1e9},
              {"steps", batch_steps},
              {"peak_rss_mb", peak_rss_mb()},  // before the rooflines' own buffers
              {"gemm_roofline", packed_roofline(precision, p)}};
    if (precision == Precision::fp32) add_sgemm_peak_after(j, flops, t);
    add_bandwidth_roofline(j, decoder_step_weight_bytes(cfg), batch_steps, best_step, t);
    return j;
}

json run_bench(const BenchSettings& a) {
    json j;
    if (a.what == "train")
        j = bench_train(a);
    else if (a.what == "decode")
        j = bench_decode(a);
    else if (a.what == "gemm" && a.precision == "bf16")
        j = bench_bf16_gemm(preset(a.preset), a.size);
    else if (a.what == "gemm")
        j = bench_gemm_rates(preset(a.preset), a.size);
    else if (a.what == "cpu")
        j = {{"what", "cpu"}};
    else if (a.what == "local")
        j = bench_local_scaling(preset(a.preset), a.lengths, a.seed);
    else
        j = bench_epoch_scaling(preset(a.preset), a.corpus, a.seed, a.min_len, a.max_len);
    j["blas"] = blas_description();
    j["cpu"] = cpu_report();
    if (a.what == "gemm" &&
        a.precision == "fp32")  // the sgemm rate as a share of the FMA peak, per CPU-second
        j["peak"]["fraction_of_fma_peak"] =
            j["peak"]["gflops_per_cpu_s"].get<double>() /
            std::max(1e-9, j["cpu"]["fma_peak"].value("gflops_per_cpu_s", 0.0));
    if (a.what == "decode" && j["steps"].get<double>() > 0) {
        // The FLOP floor of a step beside its bandwidth floor: at beam 5 a step's products do
        // 2.5 FLOP per weight byte, so at the FMA peak they may take as long as the reading.
        const double peak = j["cpu"]["fma_peak"].value("gflops", 0.0);
        j["step_us_at_fma_peak"] =
            peak > 0 ? j["gflop"].get<double>() / j["steps"].get<double>() / peak * 1e6 : 0.0;
    }
    j["threads"] = num_threads();
    j["load_avg"] = load_average();
    return j;
}

}  // namespace nazar::bench
