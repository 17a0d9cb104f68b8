// `nazar tune --model M --dev dev.tsv --metric exact [--write]`: chooses the beam size, length
// penalty and coverage penalty on a dev set (decode/search_tuning.h: one search per beam size,
// every penalty pair by re-ranking) and stores them in the model file, where translate, the
// Python Translator and `nazar serve` take them as their defaults (decode/decode_defaults.h).
//
//   dev: 5304 sources, 5309 references; exact (higher is better); 1 model
//   beam   search s  best lp  best cp     exact    cut
//   1           2.1        -        -     74.92      0
//   5           6.2      0.6        0     74.94      0
//   ...
//   chosen: beam 5, length penalty 0.6, coverage penalty 0: exact 74.94
//   translate's defaults (beam 5, length penalty 0.6, coverage penalty 0): exact 74.94
#include "cli/command.h"
#include "cli/line_files.h"
#include "cli/options.h"
#include "nazar/core/check.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/text_limits.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/search_tuning.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct TuneArgs {
    std::vector<std::string> models, refs;
    std::string dev, src, metric = "bleu", output, grid_file, precision;
    bool write = false;
    TuningGrid grid;
    TranslationOptions opt;  // the length limits and batch size
    int threads = -1;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
    CLI::App* app = nullptr;
};

// The distinct dev sources and their reference streams (eval/references.h).
struct DevSet {
    std::vector<std::string> sources;
    std::vector<std::vector<std::string>> refs;
    int64_t references = 0;
};

// dev.tsv: "source<TAB>target" per line; a source on several lines has several references (as
// training's validation reads it).
DevSet read_dev_tsv(const std::string& path, std::size_t max_line_bytes) {
    const std::vector<std::string> lines = read_lines(path, "dev file", max_line_bytes);
    std::map<std::string, std::size_t, std::less<>> index;
    std::vector<std::vector<std::string>> targets;
    DevSet d;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        if (line.empty()) continue;
        const std::size_t tab = line.find('\t');
        if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos)
            throw UsageError(fmt::format(
                "dev file '{}', line {}: expected 'source<TAB>target' (one tab), got '{}'", path,
                i + 1, excerpt(line)));
        if (tab + 1 == line.size())
            throw UsageError(
                fmt::format("dev file '{}', line {}: the target is empty", path, i + 1));
        auto [it, fresh] = index.try_emplace(line.substr(0, tab), d.sources.size());
        if (fresh) {
            d.sources.push_back(it->first);
            targets.emplace_back();
        }
        targets[it->second].push_back(line.substr(tab + 1));
        ++d.references;
    }
    std::size_t streams = 0;
    for (const auto& t : targets) streams = std::max(streams, t.size());
    d.refs.assign(streams, std::vector<std::string>(d.sources.size()));
    for (std::size_t i = 0; i < targets.size(); ++i)
        for (std::size_t k = 0; k < targets[i].size(); ++k) d.refs[k][i] = targets[i][k];
    return d;
}

// --src with one --ref per reference stream (empty line: fewer references, as `nazar eval`).
DevSet read_dev_streams(const TuneArgs& a) {
    DevSet d;
    d.sources = read_lines(a.src, "source file", a.max_line_bytes);
    for (const std::string& path : a.refs) {
        d.refs.push_back(read_lines(path, "reference file", a.max_line_bytes));
        if (d.refs.back().size() != d.sources.size())
            throw UsageError(fmt::format("reference file '{}' has {} lines, source file '{}' {}",
                                         path, d.refs.back().size(), a.src, d.sources.size()));
        for (const std::string& r : d.refs.back()) d.references += r.empty() ? 0 : 1;
    }
    return d;
}

std::string penalty(float p, int beam) {
    return beam == 1 ? std::string("-") : fmt::format("{:g}", p);
}

void write_grid(const std::string& path, const TuningResult& r) {
    std::ofstream f(path);
    if (!f) throw UsageError(fmt::format("cannot write the grid to '{}'", path));
    f << "beam\tlength_penalty\tcoverage_penalty\t" << to_string(r.metric) << '\n';
    for (const TuningPoint& p : r.points)
        f << fmt::format("{}\t{:g}\t{:g}\t{:.4f}\n", p.beam, p.length_penalty, p.coverage_penalty,
                         p.score);
    if (!f.flush()) throw Error(fmt::format("writing '{}' failed", path));
}

// The model file again, with `defaults` under kDecodeDefaultsKey (atomically: a crash leaves
// the old file or the new one).
void store_defaults(const std::string& model, const std::string& out,
                    const DecodeDefaults& defaults) {
    SafeTensors st = load_safetensors(model);
    st.metadata[kDecodeDefaultsKey] = to_json(defaults);
    save_safetensors(out, st);
}

// --write / --output: the chosen settings and the length limits they were measured with, into
// the model file.
void store_choice(const TuneArgs& a, const TuningResult& r, int64_t sources) {
    const TuningPoint& b = r.best;
    const std::string name(to_string(r.metric));
    DecodeDefaults d{.beam_size = b.beam,
                     .length_penalty = std::nullopt,
                     .coverage_penalty = std::nullopt,
                     .max_length_ratio = a.opt.max_length_ratio,
                     .max_length_extra = a.opt.max_length_extra,
                     .max_length = a.opt.max_length,
                     .tuned = TuningRecord{.metric = name,
                                           .score = b.score,
                                           .default_score = r.defaults.score,
                                           .dev = a.dev.empty() ? a.src : a.dev,
                                           .sources = sources}};
    if (b.beam > 1) {
        d.length_penalty = b.length_penalty;
        d.coverage_penalty = b.coverage_penalty;
    }
    const std::string out = a.write ? a.models[0] : a.output;
    store_defaults(a.models[0], out, d);
    std::printf(
        "stored in '%s': translate, the Python Translator and nazar serve use these "
        "unless told otherwise\n",
        out.c_str());
}

int run_tune(TuneArgs& a) {
    apply_threads_option(a.threads);
    const TuneMetric metric = parse_tune_metric(a.metric);
    validate(a.grid);
    if (a.dev.empty() == a.src.empty())
        throw UsageError(
            "give the dev set as --dev FILE (source<TAB>target) or as --src FILE "
            "with --ref FILE");
    if (!a.src.empty() && a.refs.empty()) throw UsageError("--src needs at least one --ref");
    if (!a.dev.empty() && !a.refs.empty()) throw UsageError("--ref goes with --src, not --dev");
    if ((a.write || !a.output.empty()) && a.models.size() > 1)
        throw UsageError(
            "an ensemble's settings cannot be stored in one member's file: pass "
            "them to translate as flags (or tune each model alone)");
    if (a.write && !a.output.empty()) throw UsageError("give --write or --output, not both");

    const DevSet dev = a.dev.empty() ? read_dev_streams(a) : read_dev_tsv(a.dev, a.max_line_bytes);
    if (dev.sources.empty())
        throw UsageError(
            fmt::format("the dev set '{}' has no sentences", a.dev.empty() ? a.src : a.dev));
    const Translator translator(a.models, {.precision = parse_precision_option(a.precision)});
    // The length limits translate would use: the model's stored ones unless given here.
    ExplicitOptions given;  // beam and penalties are what is searched: never taken
    given.beam_size = given.length_penalty = given.coverage_penalty = true;
    given.max_length_ratio = a.app->count("--max-length-ratio") > 0;
    given.max_length_extra = a.app->count("--max-length-extra") > 0;
    given.max_length = a.app->count("--max-length") > 0;
    apply_decode_defaults(translator.decode_defaults(), given, a.opt);

    std::printf("dev: %zu sources, %lld references; %s (%s is better); %zu model%s\n",
                dev.sources.size(), static_cast<long long>(dev.references),
                std::string(to_string(metric)).c_str(),
                higher_is_better(metric) ? "higher" : "lower", a.models.size(),
                a.models.size() == 1 ? "" : "s");
    std::printf("%-5s %9s %8s %8s %9s %6s\n", "beam", "search s", "best lp", "best cp",
                std::string(to_string(metric)).c_str(), "cut");
    std::fflush(stdout);
    const TuningResult r = tune_search(
        translator, dev.sources, dev.refs, metric, a.grid, a.opt, [](const BeamSummary& b) {
            std::printf("%-5d %9.1f %8s %8s %9.2f %6lld\n", b.beam, b.seconds,
                        penalty(b.best.length_penalty, b.beam).c_str(),
                        penalty(b.best.coverage_penalty, b.beam).c_str(), b.best.score,
                        static_cast<long long>(b.unfinished));
            std::fflush(stdout);
        });
    if (!a.grid_file.empty()) write_grid(a.grid_file, r);

    const TuningPoint& b = r.best;
    const std::string name(to_string(metric));
    std::printf("chosen: beam %d, length penalty %s, coverage penalty %s: %s %.2f\n", b.beam,
                penalty(b.length_penalty, b.beam).c_str(),
                penalty(b.coverage_penalty, b.beam).c_str(), name.c_str(), b.score);
    std::printf(
        "translate's defaults (beam %d, length penalty %g, coverage penalty %g): %s "
        "%.2f\n",
        r.defaults.beam, r.defaults.length_penalty, r.defaults.coverage_penalty, name.c_str(),
        r.defaults.score);
    for (const BeamSummary& s : r.beams)
        if (s.beam == b.beam && s.unfinished > 0)
            std::printf(
                "note: %lld outputs reached the length limit (max length ratio %g, extra "
                "%d, max length %d): raise --max-length-ratio if they should be longer\n",
                static_cast<long long>(s.unfinished), a.opt.max_length_ratio,
                a.opt.max_length_extra, a.opt.max_length);

    if (a.write || !a.output.empty()) store_choice(a, r, static_cast<int64_t>(dev.sources.size()));
    return 0;
}

void setup_tune(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<TuneArgs>();
    a->app = &app;
    app.add_option("--model", a->models,
                   "Model file; repeat for an ensemble (its settings are printed, not stored)")
        ->required()
        ->take_all()
        ->allow_extra_args(false);
    app.add_option("--dev", a->dev,
                   "Dev set, 'source<TAB>target' per line (a source on several lines has several "
                   "references; gzip is detected)");
    app.add_option("--src", a->src, "Dev sources, one per line (with --ref instead of --dev)");
    app.add_option("--ref", a->refs,
                   "Reference file, one line per source (repeat for several references; an "
                   "empty line: this source has fewer)")
        ->take_all()
        ->allow_extra_args(false);
    app.add_option("--metric", a->metric,
                   "What to maximise (exact, bleu, chrf) or minimise (wer, "
                   "cer, per)")
        ->check(CLI::IsMember({"exact", "bleu", "chrf", "wer", "cer", "per"}))
        ->capture_default_str();
    app.add_option("--beams", a->grid.beams, "Beam sizes to search (comma-separated)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--length-penalties", a->grid.length_penalties,
                   "GNMT length normalisation alphas to try (comma-separated)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--coverage-penalties", a->grid.coverage_penalties,
                   "GNMT coverage penalty betas to try (comma-separated)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_flag("--write", a->write, "Store the chosen settings in the model file (atomically)");
    app.add_option("-o,--output", a->output,
                   "Write a copy of the model file with the chosen settings instead");
    app.add_option("--grid", a->grid_file, "Write every point's score as TSV to this file");
    add_precision_option(app, a->precision);
    auto& o = a->opt;
    app.add_option("--batch", o.batch_size,
                   "Sentences per decoder batch, at most (fewer where a long sentence would pad "
                   "the batch to more than twice its tokens)")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--max-length-ratio", o.max_length_ratio,
                   "Output length limit relative to the source (as translate; stored with the "
                   "settings; default: the model's stored one, else translate's)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--max-length-extra", o.max_length_extra,
                   "Added to ratio * source length (as translate; stored with the settings)")
        ->capture_default_str();
    app.add_option("--max-length", o.max_length,
                   "Absolute output length limit (as translate; stored with the settings)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    add_max_line_bytes_option(app, a->max_line_bytes);
    add_threads_option(app, a->threads);
    run = [a] { return run_tune(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(tune,
                    "Choose beam size and length/coverage penalties on a dev set and store them "
                    "in the model",
                    setup_tune);

}  // namespace nazar::cli
