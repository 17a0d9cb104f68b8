// `nazar score --model M --src F --tgt F` (or `--tsv F`): the log-probability of each target
// given its source under forced decoding, log p(y | x) = Σ_t log p(y_t | y_<t, x) including </s>
// (models/seq2seq.h Seq2Seq::score), one number per line in input order (docs/design.md §6). This
// is what the PyTorch parity check compares. Sentences are scored in batches of --batch, in input
// order; a sentence's score does not depend on its batch (up to BLAS summation order).
#include "cli/command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/pair_input.h"
#include "nazar/core/check.h"
#include "nazar/data/pipeline.h"
#include "nazar/data/reader.h"
#include "nazar/models/model_file.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct ScoreArgs {
    std::string model, src, tgt, tsv, precision;
    int batch = 32;
    int digits = 6;
    bool skip_bad_lines = false;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

int run_score(const ScoreArgs& a) {
    const CorpusFiles files = pair_files(a.src, a.tgt, a.tsv);
    const TextModel tm = load_text_model(a.model, "score");
    if (const auto p = parse_precision_option(a.precision)) tm.loaded.model->set_precision(*p);
    PairReader reader(files, a.skip_bad_lines, a.max_line_bytes);
    OutputSink out("-", {a.src, a.tgt, a.tsv, a.model});
    std::vector<double> scores;
    std::string text;
    for_each_pair_batch(reader, tm, a.batch, [&](const IdRows& src, const IdRows& tgt) {
        const Batch b = batch_from_ids(src, tgt);
        scores.assign(src.size(), 0.0);
        tm.loaded.model->score(b, scores);
        text.clear();
        for (double s : scores) fmt::format_to(std::back_inserter(text), "{:.{}f}\n", s, a.digits);
        out.write(text);
    });
    out.close();
    return 0;
}

void setup_score(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<ScoreArgs>();
    app.add_option("--model", a->model, "Model file (model.safetensors or a checkpoint)")
        ->required();
    add_precision_option(app, a->precision);
    app.add_option("--src", a->src, "Source sentences, one per line ('-' = stdin)");
    app.add_option("--tgt", a->tgt, "Target sentences, line-aligned with --src");
    app.add_option("--tsv", a->tsv,
                   "Pairs as source<TAB>target, instead of --src/--tgt ('-' = stdin)");
    app.add_option("--batch", a->batch, "Sentences per batch")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--digits", a->digits, "Digits after the decimal point")
        ->check(CLI::Range(0, 17))
        ->capture_default_str();
    add_max_line_bytes_option(app, a->max_line_bytes);
    app.add_flag("--skip-bad-lines", a->skip_bad_lines,
                 "Skip malformed lines instead of stopping (they get no score)");
    run = [a] { return run_score(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(
    score, "Log-probability of each target given its source (forced decoding), one per line",
    setup_score);

}  // namespace nazar::cli
