// Data pipeline benchmark: load + tokenize a generated 1 M-pair TSV corpus (written to /tmp,
// never committed) with the word, char and spm tokenizers; reports pairs/s and resident memory
// per stored token. Each measurement runs in a forked child, so one run's heap never hides in
// another's numbers. One greppable line per tokenizer:
//
//   bench_data: tokenizer=word pairs=1000000 tokens=... seconds=... cpu_seconds=... pairs_per_s=...
//               pairs_per_cpu_s=... rss_bytes_per_token=... peak_bytes_per_token=...
// (pairs_per_cpu_s is the figure to compare on a shared machine; loading is single-threaded.)
//
// rss = VmRSS after loading minus VmRSS before (what the loaded corpus + vocabularies hold);
// peak = VmHWM minus VmRSS before (the high-water mark while loading); corpus = the id and
// offset arrays alone (Corpus::memory_bytes).
// Before timing, the loader is validated against the generator: every pair of a 2,000-pair
// sample decodes back to the text it was generated from (the "naive oracle" here).
// A Google Benchmark case also times tokenization alone on in-memory sentences.
#include "nazar/core/rng.h"
#include "nazar/data/corpus.h"
#include "nazar/data/pipeline.h"

#include <benchmark/benchmark.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace nazar;

namespace {

// Synthetic text shaped like the l10n data: Zipf-distributed words from 30,000 types,
// 1-15 words a source (mean 8), the target 0.9-1.5 times as long, some accented letters.
struct Generator {
    std::vector<std::string> words;
    std::vector<double> cdf;
    Rng rng{2024};

    Generator() {
        const char* syllables[] = {"ka", "lo", "mi", "ré", "tu", "za", "pe",
                                   "no", "fi", "çu", "da", "si", "vo", "ën"};
        double total = 0;
        for (int i = 0; i < 30000; ++i) {
            std::string w;
            int x = i;
            do {
                w += syllables[x % 14];
                x /= 14;
            } while (x > 0);
            words.push_back(w);
            total += 1.0 / (i + 1);
            cdf.push_back(total);
        }
        for (double& c : cdf) c /= total;
    }
    const std::string& word() {
        const double u = rng.uniform_double();
        return words[std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin()];
    }
    std::string sentence(int n) {
        std::string s;
        for (int k = 0; k < n; ++k) {
            if (k) s += ' ';
            s += word();
        }
        return s;
    }
    std::pair<std::string, std::string> pair() {
        const int n = 1 + static_cast<int>(rng.below(8)) + static_cast<int>(rng.below(8));
        const int m = std::max(1, static_cast<int>(n * rng.uniform(0.9f, 1.5f)));
        return {sentence(n), sentence(m)};
    }
};

const char* kPath = "/tmp/nazar_bench_data_1m.tsv";
constexpr int64_t kPairs = 1'000'000;

void generate(const std::string& path, int64_t pairs) {
    Generator g;
    std::ofstream out(path, std::ios::binary);
    for (int64_t i = 0; i < pairs; ++i) {
        const auto [s, t] = g.pair();
        out << s << '\t' << t << '\n';
    }
    if (!out) {
        std::fprintf(stderr, "bench_data: cannot write %s\n", path.c_str());
        std::exit(1);
    }
}

int64_t status_kb(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::strlen(key));
    return 0;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void validate() {
    const std::string path = "/tmp/nazar_bench_data_check.tsv";
    generate(path, 2000);
    Generator g;  // same seed: regenerates the same pairs
    for (const Tokenizer& tok : {Tokenizer::word(), Tokenizer::character()}) {
        Vocab sv, tv;
        LoadSummary s;
        const Corpus c = load_corpus_building_vocabs({.tsv = path}, tok, tok, {},
                                                     {.print_summary = false}, sv, tv, &s);
        Generator again;
        bool ok = c.size() == 2000 && s.kept == 2000;
        for (int64_t i = 0; ok && i < c.size(); ++i) {
            const auto [src, tgt] = again.pair();
            ok = sv.decode(c.src(i), tok) == src && tv.decode(c.tgt(i), tok) == tgt;
        }
        if (!ok) {
            std::fprintf(stderr, "bench_data: validation failed for %s tokenizer\n",
                         std::string(to_string(tok.kind())).c_str());
            std::exit(1);
        }
    }
    std::remove(path.c_str());
}

// Loads the corpus in a child process and prints the greppable line.
void measure(TokenizerKind kind, const std::string& spm_proto) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        const Tokenizer tok = kind == TokenizerKind::spm ? Tokenizer::spm_from_proto(spm_proto)
                              : kind == TokenizerKind::character ? Tokenizer::character()
                                                                 : Tokenizer::word();
#ifdef __GLIBC__
        malloc_trim(0);  // the baseline must not hold the parent's freed heap
#endif
        const int64_t before = status_kb("VmRSS:");
        const auto t0 = std::chrono::steady_clock::now();
        const double cpu0 = cpu_seconds();
        Vocab sv, tv;
        LoadSummary s;
        const Corpus c = load_corpus_building_vocabs({.tsv = kPath}, tok, tok, {},
                                                     {.print_summary = false}, sv, tv, &s);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = cpu_seconds() - cpu0;
        const int64_t after = status_kb("VmRSS:"), peak = status_kb("VmHWM:");
        const double tokens = static_cast<double>(c.src_tokens() + c.tgt_tokens());
        std::printf(
            "bench_data: tokenizer=%s pairs=%lld tokens=%.0f seconds=%.2f cpu_seconds=%.2f "
            "pairs_per_s=%.0f pairs_per_cpu_s=%.0f rss_bytes_per_token=%.2f "
            "peak_bytes_per_token=%.2f "
            "corpus_bytes_per_token=%.2f vocab=%d/%d\n",
            std::string(to_string(kind)).c_str(), static_cast<long long>(c.size()), tokens, seconds,
            cpu, static_cast<double>(c.size()) / seconds, static_cast<double>(c.size()) / cpu,
            1024.0 * static_cast<double>(after - before) / tokens,
            1024.0 * static_cast<double>(peak - before) / tokens,
            static_cast<double>(c.memory_bytes()) / tokens, sv.size(), tv.size());
        std::fflush(stdout);
        std::_Exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "bench_data: %s measurement failed\n",
                     std::string(to_string(kind)).c_str());
        std::exit(1);
    }
}

std::vector<std::string> sample_sentences(int n) {
    Generator g;
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(g.pair().first);
    return out;
}

void BM_Tokenize(benchmark::State& state) {
    const auto sentences = sample_sentences(10000);
    const Tokenizer tok = state.range(0) == 0 ? Tokenizer::word() : Tokenizer::character();
    Pieces pieces;
    int64_t count = 0;
    for (auto _ : state) {
        for (const auto& s : sentences) {
            tok.encode(s, pieces);
            count += static_cast<int64_t>(pieces.size());
        }
        benchmark::DoNotOptimize(count);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(sentences.size()));
    state.SetLabel(state.range(0) == 0 ? "word" : "char");
}
BENCHMARK(BM_Tokenize)->Arg(0)->Arg(1);

}  // namespace

int main(int argc, char** argv) {
    validate();
    generate(kPath, kPairs);
    // spm: a model trained on the first 50,000 pairs (training time reported separately).
    const auto t0 = std::chrono::steady_clock::now();
    std::string spm_proto;
    {
        PairReader reader({.tsv = kPath}, false);
        RawPair p;
        int64_t n = 0;
        bool tgt = false;
        const Tokenizer spm = Tokenizer::train_spm(
            [&](std::string& out) {
                if (tgt) {
                    out.assign(p.tgt);
                    tgt = false;
                    return true;
                }
                if (n++ == 50000 || !reader.next(p)) return false;
                out.assign(p.src);
                tgt = true;
                return true;
            },
            {.vocab_size = 8000});
        spm_proto = spm.spm_model_proto();
    }
    std::printf("bench_data: spm training on 100000 sentences, vocab 8000: %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (TokenizerKind kind : {TokenizerKind::word, TokenizerKind::character, TokenizerKind::spm})
        measure(kind, spm_proto);
    std::remove(kPath);

    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
