// `nazar average A B C -o M` / `nazar average --last K --run DIR -o M` /
// `nazar average --best K --run DIR -o M`: checkpoint averaging
// (nazar/train/average.h; docs/training.md, "Averaging, EMA and ensembles"). The output is a
// model file whose parameters are the element-wise mean of the inputs' (same configuration,
// vocabularies and tokenizers), written atomically.
#include "cli/command.h"
#include "nazar/core/check.h"
#include "nazar/train/average.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct AverageArgs {
    std::vector<std::string> inputs;
    std::string output, run;
    int last = 0, best = 0;
};

int run_average(AverageArgs& a) {
    const bool by_run = a.last > 0 || a.best > 0 || !a.run.empty();
    if (by_run && !a.inputs.empty())
        throw UsageError("give model files, or --last K / --best K with --run DIR, not both");
    if (a.last > 0 && a.best > 0) throw UsageError("--last and --best: choose one");
    if (by_run && ((a.last == 0 && a.best == 0) || a.run.empty()))
        throw UsageError("--run DIR goes with --last K or --best K");
    if (!by_run && a.inputs.empty())
        throw UsageError(
            "nothing to average: give model files, or --last K / --best K with --run DIR");
    std::vector<std::string> inputs = !by_run      ? a.inputs
                                      : a.last > 0 ? last_checkpoints(a.run, a.last)
                                                   : best_checkpoints(a.run, a.best);
    for (const auto& in : inputs) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(in, ec))
            throw UsageError(fmt::format("'{}' is not a file", in));
    }
    const AverageReport r = average_models(inputs, a.output);
    std::string names;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        names += (i ? ", " : "") + std::filesystem::path(inputs[i]).filename().string();
    std::fprintf(stderr, "averaged %d files (%s), %lld parameters each: wrote %s\n", r.files,
                 names.c_str(), static_cast<long long>(r.parameters), a.output.c_str());
    return 0;
}

void setup_average(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<AverageArgs>();
    app.add_option("models", a->inputs,
                   "Model files or checkpoints to average (same configuration and vocabularies)");
    app.add_option("-o,--output", a->output, "The averaged model file to write")->required();
    app.add_option("--last", a->last,
                   "Average the K latest checkpoint-<step>.safetensors of --run (keep_checkpoints)")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--best", a->best,
                   "Average the K best-<step>.safetensors of --run by their validation "
                   "(average_best)")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--run", a->run, "Training run directory (save_dir), with --last or --best");
    run = [a] { return run_average(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(
    average, "Average the parameters of model files, or of a run's last or best K checkpoints",
    setup_average);

}  // namespace nazar::cli
