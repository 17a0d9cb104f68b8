// `nazar eval`: corpus metrics of a hypothesis file against one or more reference files
// (nazar/eval, docs/metrics.md). One segment per line; --ref may be repeated (one file per
// reference stream). Prints sacreBLEU's score line, e.g.
//   BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
//   signature: nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:nazar-0.1.0
// or one JSON object with --json, or only the number with --score-only.
#include "cli/command.h"
#include "cli/line_files.h"
#include "cli/options.h"
#include "cli/output.h"
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/data/reader.h"
#include "nazar/eval/aer.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/wer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct EvalOptions {
    std::string metric = "bleu";
    std::vector<std::string> refs;
    std::string hyp = "-";
    std::string possible;
    bool json = false;
    bool score_only = false;
    // BLEU
    std::string tokenize = "13a";
    std::string smooth_method = "exp";
    double smooth_value = -1;  // < 0: the method's default
    int max_ngram_order = 4;
    bool lowercase = false;
    // chrF
    int chrf_char_order = 6;
    int chrf_word_order = 0;
    int chrf_beta = 2;
    bool chrf_whitespace = false;
    bool chrf_eps_smoothing = false;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

std::string display(const std::string& path) {
    return path == "-" ? std::string("<stdin>") : path;
}

void check_count(const std::string& hyp_path, std::size_t hyp_n, std::string_view what,
                 const std::string& path, std::size_t n) {
    if (n != hyp_n)
        throw UsageError(fmt::format(
            "line-count mismatch: hypothesis file '{}' has {} lines but {} '{}' has {} lines",
            display(hyp_path), hyp_n, what, display(path), n));
}

// The result, written through the output sink (every write and the close checked).
void emit(OutputSink& sink, const EvalOptions& o, double score, const std::string& line,
          const std::string& signature, nlohmann::json details) {
    std::string text;
    auto out = std::back_inserter(text);
    if (o.json) {
        details["score"] = score;
        details["verbose_score"] = line;
        if (!signature.empty()) details["signature"] = signature;
        fmt::format_to(out, "{}\n", details.dump(1));
    } else if (o.score_only) {
        fmt::format_to(out, "{:.2f}\n", score);
    } else {
        fmt::format_to(out, "{}\n", line);
        if (!signature.empty()) fmt::format_to(out, "signature: {}\n", signature);
    }
    sink.write(text);
}

// Scores the hypotheses with the chosen metric and writes the result.
void score_and_emit(OutputSink& sink, const EvalOptions& o, const std::vector<std::string>& hyps,
                    const std::vector<std::vector<std::string>>& refs) {
    if (o.metric == "bleu") {
        BleuOptions opt{.smooth_method = parse_bleu_smooth(o.smooth_method),
                        .tokenize = parse_bleu_tokenize(o.tokenize),
                        .lowercase = o.lowercase,
                        .max_ngram_order = o.max_ngram_order};
        if (o.smooth_value >= 0) opt.smooth_value = o.smooth_value;
        const BleuScore s = corpus_bleu(hyps, refs, opt);
        emit(sink, o, s.score, s.format(), s.signature,
             {{"name", "BLEU"},
              {"counts", s.counts},
              {"totals", s.totals},
              {"precisions", s.precisions},
              {"bp", s.bp},
              {"ratio", s.ratio},
              {"hyp_len", s.hyp_len},
              {"ref_len", s.ref_len}});
    } else if (o.metric == "chrf") {
        const ChrfOptions opt{.char_order = o.chrf_char_order,
                              .word_order = o.chrf_word_order,
                              .beta = o.chrf_beta,
                              .lowercase = o.lowercase,
                              .whitespace = o.chrf_whitespace,
                              .eps_smoothing = o.chrf_eps_smoothing};
        const ChrfScore s = corpus_chrf(hyps, refs, opt);
        emit(sink, o, s.score, s.format(), s.signature, {{"name", s.name()}});
    } else if (o.metric == "wer" || o.metric == "cer" || o.metric == "per") {
        const ErrorMetric m = o.metric == "wer"   ? ErrorMetric::wer
                              : o.metric == "cer" ? ErrorMetric::cer
                                                  : ErrorMetric::per;
        const ErrorRate s = corpus_error_rate(hyps, refs, m);
        emit(sink, o, s.score, s.format(), "",
             {{"name", s.name()},
              {"errors", s.errors},
              {"substitutions", s.substitutions},
              {"deletions", s.deletions},
              {"insertions", s.insertions},
              {"hyp_len", s.hyp_len},
              {"ref_len", s.ref_len},
              {"segments", s.segments}});
    } else if (o.metric == "exact") {
        const ExactMatch s = exact_match(hyps, refs);
        emit(sink, o, s.score, s.format(), "",
             {{"name", "Exact"}, {"correct", s.correct}, {"segments", s.segments}});
    } else {  // aer
        std::vector<std::string> possible;
        if (!o.possible.empty()) {
            possible = read_lines(o.possible, "possible-links file", o.max_line_bytes);
            if (possible.size() != refs[0].size())
                throw UsageError(fmt::format(
                    "line-count mismatch: gold alignment file '{}' has {} lines but "
                    "possible-links file '{}' has {} lines",
                    display(o.refs[0]), refs[0].size(), display(o.possible), possible.size()));
        }
        const AerScore s = corpus_aer(hyps, refs[0], possible);
        emit(sink, o, s.score, s.format(), "",
             {{"name", "AER"},
              {"precision", s.precision},
              {"recall", s.recall},
              {"hyp_links", s.hyp_links},
              {"sure_links", s.sure_links},
              {"possible_links", s.possible_links},
              {"hyp_and_sure", s.hyp_and_sure},
              {"hyp_and_possible", s.hyp_and_possible},
              {"segments", s.segments}});
    }
}

int run_eval(const EvalOptions& o) {
    if (!o.possible.empty() && o.metric != "aer")
        throw UsageError(
            fmt::format("--possible is only used with --metric aer (got --metric {})", o.metric));
    if (o.metric == "aer" && o.refs.size() != 1)
        throw UsageError(fmt::format(
            "--metric aer takes exactly one --ref (the gold alignments), got {}", o.refs.size()));
    int stdin_users = (o.hyp == "-");
    for (const auto& r : o.refs) stdin_users += (r == "-");
    if (stdin_users > 1) throw UsageError("only one of --hyp / --ref may read stdin ('-')");
    std::vector<std::string> inputs = o.refs;
    inputs.push_back(o.hyp);
    inputs.push_back(o.possible);
    OutputSink sink("-", inputs);

    const std::vector<std::string> hyps = read_lines(o.hyp, "hypothesis file", o.max_line_bytes);
    std::vector<std::vector<std::string>> refs;
    for (const auto& path : o.refs) {
        refs.push_back(read_lines(
            path, o.metric == "aer" ? "gold alignment file" : "reference file", o.max_line_bytes));
        check_count(o.hyp, hyps.size(),
                    o.metric == "aer" ? "gold alignment file" : "reference file", path,
                    refs.back().size());
    }

    score_and_emit(sink, o, hyps, refs);
    sink.close();
    return 0;
}

void setup_eval(CLI::App& app, std::function<int()>& run) {
    auto o = std::make_shared<EvalOptions>();
    app.add_option("--metric,-m", o->metric, "Metric")
        ->check(CLI::IsMember({"bleu", "chrf", "wer", "cer", "per", "exact", "aer"}))
        ->capture_default_str();
    app.add_option("--ref,-r", o->refs,
                   "Reference file (repeat for several references); gold alignments for aer")
        ->required()
        ->take_all();
    app.add_option("--hyp,-i", o->hyp, "Hypothesis file, one segment per line ('-' = stdin)")
        ->capture_default_str();
    app.add_option("--possible", o->possible,
                   "aer: file of possible gold links, one line per gold line");
    app.add_flag("--json", o->json, "Print one JSON object with the score and its breakdown");
    app.add_flag("--score-only,-b", o->score_only, "Print only the score");
    app.add_option("--tokenize", o->tokenize, "bleu: tokenizer")
        ->check(CLI::IsMember({"13a", "none", "char"}))
        ->capture_default_str();
    app.add_option("--smooth-method", o->smooth_method, "bleu: smoothing")
        ->check(CLI::IsMember({"exp", "floor", "add-k", "none"}))
        ->capture_default_str();
    app.add_option("--smooth-value", o->smooth_value,
                   "bleu: value for floor (default 0.1) / add-k (default 1)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--max-ngram-order", o->max_ngram_order, "bleu: highest n-gram order")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_flag("--lowercase", o->lowercase, "bleu, chrf: compare lowercased text");
    app.add_option("--chrf-char-order", o->chrf_char_order, "chrf: character n-gram order")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--chrf-word-order", o->chrf_word_order, "chrf: word n-gram order (2 = chrF++)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--chrf-beta", o->chrf_beta, "chrf: recall weight beta")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_flag("--chrf-whitespace", o->chrf_whitespace,
                 "chrf: keep whitespace in character n-grams");
    app.add_flag("--chrf-eps-smoothing", o->chrf_eps_smoothing,
                 "chrf: chrF++.py-style epsilon smoothing");
    add_max_line_bytes_option(app, o->max_line_bytes);
    run = [o] { return run_eval(*o); };
}

}  // namespace

NZ_REGISTER_COMMAND(
    eval, "Score hypotheses against references: BLEU, chrF, WER, CER, PER, exact match, AER",
    setup_eval);

}  // namespace nazar::cli
