// `nazar shortlist --model M --train pairs.tsv -o shortlist.tsv [--keep 100]`: the vocabulary
// shortlist table of a model (decode/shortlist.h), learned from a parallel corpus tokenized
// with the model's tokenizers; `nazar translate --shortlist` reads it.
#include "cli/command.h"
#include "cli/line_files.h"
#include "cli/options.h"
#include "cli/pair_input.h"
#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/decode/shortlist.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nazar::cli {
namespace {

struct ShortlistArgs {
    std::string model, train, output;
    int keep = 100;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

int run_shortlist(const ShortlistArgs& a) {
    const auto start = std::chrono::steady_clock::now();
    const TextModel tm = load_text_model(a.model, "build a shortlist for");
    std::vector<std::pair<std::string, std::string>> pairs;
    const std::vector<std::string> lines = read_lines(a.train, "training file", a.max_line_bytes);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        if (l.empty()) continue;
        const std::size_t tab = l.find('\t');
        if (tab == std::string::npos || l.find('\t', tab + 1) != std::string::npos)
            throw UsageError(fmt::format("'{}', line {}: expected 'source<TAB>target', got '{}'",
                                         a.train, i + 1, excerpt(l)));
        pairs.emplace_back(l.substr(0, tab), l.substr(tab + 1));
    }
    const ShortlistBuildStats st = build_shortlist(pairs, tm.src_tok, tm.src_vocab, tm.tgt_tok,
                                                   tm.tgt_vocab, a.keep, a.output);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "%s: %lld pairs, %lld source tokens seen, %lld with translations (up to %d "
                 "each), %d frequent target tokens; %.1f s\n",
                 a.output.c_str(), static_cast<long long>(st.pairs),
                 static_cast<long long>(st.source_tokens), static_cast<long long>(st.entries),
                 a.keep, a.keep, s);
    return 0;
}

void setup_shortlist(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<ShortlistArgs>();
    app.add_option("--model", a->model, "Model file whose tokenizers and vocabularies to use")
        ->required();
    app.add_option("--train", a->train,
                   "Parallel text, 'source<TAB>target' per line (the training data; gzip is "
                   "detected)")
        ->required();
    app.add_option("-o,--output", a->output, "The shortlist table to write")->required();
    app.add_option("--keep", a->keep,
                   "Translations kept per source token, and frequent target tokens")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    add_max_line_bytes_option(app, a->max_line_bytes);
    run = [a] { return run_shortlist(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(shortlist,
                    "Learn a vocabulary shortlist from parallel text for translate --shortlist",
                    setup_shortlist);

}  // namespace nazar::cli
