// Corpus BLEU / chrF / WER throughput on a synthetic 100k-segment corpus (about 25 words per
// segment, one reference). Before timing, BLEU's statistics on the first segments are checked
// against a naive std::map n-gram count (the oracle).
#include "nazar/core/rng.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/text.h"
#include "nazar/eval/wer.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace nazar;

struct Corpus {
    std::vector<std::string> hyps;
    std::vector<std::vector<std::string>> refs;  // one stream
};

const Corpus& corpus() {
    static const Corpus c = [] {
        Rng rng(2002);
        std::vector<std::string> vocab;
        for (int i = 0; i < 5000; ++i)
            vocab.push_back(fmt::format("w{}{}", i, i % 7 == 0 ? "," : ""));
        Corpus out;
        out.refs.resize(1);
        const int n = 100000;
        for (int s = 0; s < n; ++s) {
            const int len = 15 + static_cast<int>(rng.below(20));
            std::string ref, hyp;
            for (int t = 0; t < len; ++t) {
                // Skewed word choice so that n-grams repeat across and within segments.
                const auto u = rng.uniform();
                const int w = static_cast<int>(u * u * u * 5000) % 5000;
                ref += (t ? " " : "") + vocab[w];
                const bool keep = rng.uniform() < 0.7f;
                hyp += (t ? " " : "") + (keep ? vocab[w] : vocab[rng.below(5000)]);
            }
            out.refs[0].push_back(ref + ".");
            out.hyps.push_back(hyp + ".");
        }
        return out;
    }();
    return c;
}

// Oracle: clipped n-gram matches with std::map, straight from Papineni et al.
BleuStats naive_bleu_stats(const Corpus& c, std::size_t segments) {
    BleuStats st{.correct = std::vector<int64_t>(4, 0), .total = std::vector<int64_t>(4, 0)};
    for (std::size_t i = 0; i < segments; ++i) {
        const std::string h = tokenize_13a(c.hyps[i]), r = tokenize_13a(c.refs[0][i]);
        const auto ht = split_whitespace(h), rt = split_whitespace(r);
        for (int n = 1; n <= 4; ++n) {
            std::map<std::vector<std::string_view>, int64_t> hc, rc;
            for (std::size_t k = 0; k + n <= ht.size(); ++k)
                ++hc[{ht.begin() + k, ht.begin() + k + n}];
            for (std::size_t k = 0; k + n <= rt.size(); ++k)
                ++rc[{rt.begin() + k, rt.begin() + k + n}];
            for (const auto& [g, cnt] : hc) {
                st.correct[n - 1] += std::min(cnt, rc.count(g) ? rc.at(g) : int64_t{0});
                st.total[n - 1] += cnt;
            }
        }
        st.hyp_len += static_cast<int64_t>(ht.size());
        st.ref_len += static_cast<int64_t>(rt.size());
    }
    return st;
}

void validate() {
    const Corpus& c = corpus();
    const std::size_t n = 2000;
    const std::vector<std::string> hyps(c.hyps.begin(), c.hyps.begin() + n);
    const std::vector<std::vector<std::string>> refs = {{c.refs[0].begin(), c.refs[0].begin() + n}};
    const BleuStats fast = corpus_bleu_stats(hyps, refs), slow = naive_bleu_stats(c, n);
    if (fast.correct != slow.correct || fast.total != slow.total || fast.hyp_len != slow.hyp_len ||
        fast.ref_len != slow.ref_len) {
        std::fprintf(stderr, "bench_eval: BLEU statistics differ from the naive oracle\n");
        std::exit(1);
    }
}

void BM_CorpusBleu100k(benchmark::State& state) {
    const Corpus& c = corpus();
    for (auto _ : state) benchmark::DoNotOptimize(corpus_bleu(c.hyps, c.refs).score);
    state.counters["segments/s"] = benchmark::Counter(
        static_cast<double>(c.hyps.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CorpusChrf100k(benchmark::State& state) {
    const Corpus& c = corpus();
    for (auto _ : state) benchmark::DoNotOptimize(corpus_chrf(c.hyps, c.refs).score);
    state.counters["segments/s"] = benchmark::Counter(
        static_cast<double>(c.hyps.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CorpusWer100k(benchmark::State& state) {
    const Corpus& c = corpus();
    for (auto _ : state) benchmark::DoNotOptimize(corpus_wer(c.hyps, c.refs).score);
    state.counters["segments/s"] = benchmark::Counter(
        static_cast<double>(c.hyps.size()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_CorpusBleu100k)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CorpusChrf100k)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CorpusWer100k)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
    validate();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
