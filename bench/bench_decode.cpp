// Decoding throughput: greedy and beam search (K = 5) at batch 1 and 64 on a random model of the
// standard size: V_src = V_tgt = 8000, E = 256, bidirectional GRU encoder 256 + 256 (C = 512),
// Bahdanau GRU decoder H = 512, attention A = 512. Sources are 20 random tokens.
// Output length is fixed at 40 tokens so runs compare: beam search forbids </s> before token 41
// (min_length) with a 40-token cap; greedy is capped at 40 (an untrained model almost never
// emits </s>; tokens/s counts what was emitted). Encoding is included in the time.
// Before timing: beam search with K = 1 must equal greedy token for token on all 64 sentences,
// and beam-5 scores must equal the sum of the step log-probabilities of their tokens
// (greedy_decode is the oracle); exits 1 on a mismatch.
// Counters: sentences/s and tokens/s (output tokens, every hypothesis of the beam counted once).
#include "nazar/core/blas.h"
#include "nazar/core/rng.h"
#include "nazar/core/threads.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

using namespace nazar;

namespace {

constexpr int kV = 8000, kS = 20, kMaxB = 64, kLen = 40;

struct Problem {
    std::unique_ptr<Seq2Seq> model;
    std::vector<int32_t> src;  // (64, S)
    std::vector<int> lengths = std::vector<int>(kMaxB, kS);
    Problem() {
        ModelConfig c;
        c.src_vocab_size = kV;
        c.tgt_vocab_size = kV;
        c.embedding_size = 256;
        c.encoder = {.cell = CellType::gru,
                     .hidden_size = 256,
                     .num_layers = 1,
                     .bidirectional = true,
                     .dropout = 0};
        c.decoder.kind = DecoderKind::bahdanau;
        c.decoder.hidden_size = 512;
        c.attention.score = ScoreKind::additive;
        c.attention.attention_size = 512;
        model = std::make_unique<Seq2Seq>(c, 2024);
        Rng rng(7);
        for (int i = 0; i < kMaxB * kS; ++i)
            src.push_back(4 + static_cast<int32_t>(rng.below(kV - 4)));
    }
    std::span<const int32_t> batch_src(int B) const {
        return std::span(src).first(static_cast<std::size_t>(B) * kS);
    }
    std::span<const int> batch_lengths(int B) const { return std::span(lengths).first(B); }
};

Problem& problem() {
    static Problem p;
    return p;
}

const GreedyOptions kGreedy{.max_length_ratio = 0, .max_length_extra = kLen, .max_length = kLen};
const BeamOptions kBeam{.beam_size = 5,
                        .max_length_ratio = 0,
                        .max_length_extra = kLen,
                        .max_length = kLen,
                        .min_length = kLen + 1};

bool validate() {
    Problem& p = problem();
    const auto g = greedy_decode(*p.model, p.batch_src(kMaxB), p.batch_lengths(kMaxB), kS, kGreedy);
    BeamOptions one = kBeam;
    one.beam_size = 1;
    one.min_length = 0;
    const auto b = beam_search(*p.model, p.batch_src(kMaxB), p.batch_lengths(kMaxB), kS, one);
    int same = 0;
    for (int i = 0; i < kMaxB; ++i) same += b[i][0].tokens == g[i].tokens;
    // beam-5 scores against a replay through greedy's step API (sentence 0)
    const auto b5 = beam_search(*p.model, p.batch_src(1), p.batch_lengths(1), kS, kBeam);
    DecodeSession session(*p.model);
    EncodedSource enc;
    session.encode(p.batch_src(1), p.batch_lengths(1), kS, enc);
    DecoderState st;
    session.init_state(enc, st);
    Tensor lp({1, kV});
    int32_t prev = p.model->config().special_ids.bos;
    double sum = 0;
    for (int32_t y : b5[0][0].tokens) {
        session.step(std::span<const int32_t>(&prev, 1), enc, st, lp, {});
        sum += lp.at(0, y);
        prev = y;
    }
    const double err = std::abs(sum - b5[0][0].log_prob) / std::max(1.0, std::abs(sum));
    fmt::print(
        "validate decode V={} E=256 C=512 H=512 A=512 S={}: beam 1 == greedy on {}/{} sentences; "
        "beam-5 log p vs step replay rel err {:.1e} (tol 1e-4); beam-5 length {}\n",
        kV, kS, same, kMaxB, err, b5[0][0].tokens.size());
    return same == kMaxB && err < 1e-4 && static_cast<int>(b5[0][0].tokens.size()) == kLen;
}

void report(benchmark::State& state, int B, int64_t tokens) {
    state.counters["sentences/s"] =
        benchmark::Counter(static_cast<double>(B), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tokens/s"] =
        benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

void BM_greedy(benchmark::State& state) {
    Problem& p = problem();
    const int B = static_cast<int>(state.range(0));
    int64_t tokens = 0;
    DecodeSession session(*p.model);  // outside the timed loop: its buffers are reused
    for (auto _ : state) {
        const auto r = greedy_decode(session, p.batch_src(B), p.batch_lengths(B), kS, kGreedy);
        for (const auto& x : r) tokens += static_cast<int64_t>(x.tokens.size());
    }
    report(state, B, tokens);
}

void BM_beam5(benchmark::State& state) {
    Problem& p = problem();
    const int B = static_cast<int>(state.range(0));
    int64_t tokens = 0;
    DecodeSession session(*p.model);  // outside the timed loop: its buffers are reused
    for (auto _ : state) {
        const auto r = beam_search(session, p.batch_src(B), p.batch_lengths(B), kS, kBeam);
        for (const auto& x : r) tokens += static_cast<int64_t>(x[0].tokens.size());
    }
    report(state, B, tokens);
}

}  // namespace

BENCHMARK(BM_greedy)->Arg(1)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_greedy)->Arg(64)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_beam5)->Arg(1)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_beam5)->Arg(64)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
    fmt::print("{}, {} threads\n", blas_description(), num_threads());
    if (!validate()) {
        fmt::print(
            "VALIDATION FAILED: beam search disagrees with greedy decoding / the step API\n");
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
