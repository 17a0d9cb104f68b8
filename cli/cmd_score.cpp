// `nazar score --model M --src F --tgt F` (or `--tsv F`): the log-probability of each target
// given its source under forced decoding, log p(y | x) = Σ_t log p(y_t | y_<t, x) including </s>
// (models/train_pass.h TrainPass::score), one number per line in input order (docs/design.md §6).
// This is what the PyTorch parity check compares. Sentences are scored in batches of --batch, in
// input order; a sentence's score does not depend on its batch (up to BLAS summation order).
// Several --model files score as an ensemble (decode/ensemble.h): the per-step log-probabilities
// are averaged, so a sentence's score is the mean of the members' scores (summed in double,
// divided by the member count); members must share vocabularies and tokenizers.
#include "cli/command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/pair_input.h"
#include "nazar/core/check.h"
#include "nazar/data/extended_vocab.h"
#include "nazar/data/pipeline.h"
#include "nazar/data/reader.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nazar::cli {
namespace {

struct ScoreArgs {
    std::vector<std::string> models;
    std::string src, tgt, tsv, precision;
    int batch = 32;
    int digits = 6;
    bool skip_bad_lines = false;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

int run_score(const ScoreArgs& a) {
    const CorpusFiles files = pair_files(a.src, a.tgt, a.tsv);
    std::vector<TextModel> members;
    for (const auto& path : a.models) {
        members.push_back(load_text_model(path, "score"));
        const TextModel &first = members.front(), &tm = members.back();
        const std::pair<const char*, bool> same[] = {
            {"source tokenizer", tm.src_tok.to_string() == first.src_tok.to_string()},
            {"target tokenizer", tm.tgt_tok.to_string() == first.tgt_tok.to_string()},
            {"source vocabulary", tm.src_vocab.to_json() == first.src_vocab.to_json()},
            {"target vocabulary", tm.tgt_vocab.to_json() == first.tgt_vocab.to_json()}};
        if (tm.loaded.model->config().copy_attention != first.loaded.model->config().copy_attention)
            throw UsageError(
                fmt::format("ensemble: '{}' and '{}' differ in copy attention: "
                            "members must all have it or all lack it",
                            path, a.models.front()));
        for (const auto& [what, ok] : same)
            if (!ok)
                throw Error(
                    fmt::format("ensemble: '{}' has another {} than '{}': members must "
                                "share the source and target vocabularies and tokenizers",
                                path, what, a.models.front()));
    }
    if (const auto p = parse_precision_option(a.precision))
        for (TextModel& m : members) m.loaded.model->set_precision(*p);
    PairReader reader(files, a.skip_bad_lines, a.max_line_bytes);
    std::vector<std::string> inputs = {a.src, a.tgt, a.tsv};
    inputs.insert(inputs.end(), a.models.begin(), a.models.end());
    OutputSink out("-", inputs);
    std::vector<double> scores, member;
    std::vector<std::unique_ptr<TrainPass>> passes;  // one forward's buffers per member
    for (const TextModel& m : members)
        passes.push_back(std::make_unique<TrainPass>(std::as_const(*m.loaded.model)));
    std::string text;
    for_each_pair_batch(reader, members.front(), a.batch,
                        [&](const IdRows& src, const IdRows& tgt, const CopyRows& copy) {
                            Batch b = batch_from_ids(src, tgt);
                            if (!copy.src.empty()) set_copy_ids(b, copy.src, copy.tgt);
                            scores.assign(src.size(), 0.0);
                            passes.front()->score(b, scores);
                            for (std::size_t m = 1; m < members.size(); ++m) {
                                member.assign(src.size(), 0.0);
                                passes[m]->score(b, member);
                                for (std::size_t i = 0; i < scores.size(); ++i)
                                    scores[i] += member[i];
                            }
                            if (members.size() > 1)
                                for (double& s : scores) s /= static_cast<double>(members.size());
                            text.clear();
                            for (double s : scores)
                                fmt::format_to(std::back_inserter(text), "{:.{}f}\n", s, a.digits);
                            out.write(text);
                        });
    out.close();
    return 0;
}

void setup_score(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<ScoreArgs>();
    app.add_option("--model", a->models,
                   "Model file (model.safetensors or a checkpoint); repeat for an ensemble (the "
                   "mean of the members' scores)")
        ->required()
        ->take_all()
        ->allow_extra_args(false);
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
