// `nazar average A B C -o M` / `nazar average --last K --run DIR -o M`: checkpoint averaging
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
    int last = 0;
};

int run_average(AverageArgs& a) {
    const bool by_run = a.last > 0 || !a.run.empty();
    if (by_run && !a.inputs.empty())
        throw UsageError("give model files, or --last K --run DIR, not both");
    if (by_run && (a.last == 0 || a.run.empty()))
        throw UsageError("--last K and --run DIR go together");
    if (!by_run && a.inputs.empty())
        throw UsageError("nothing to average: give model files, or --last K --run DIR");
    std::vector<std::string> inputs = by_run ? last_checkpoints(a.run, a.last) : a.inputs;
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
    app.add_option("--run", a->run, "Training run directory (save_dir), with --last");
    run = [a] { return run_average(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(average,
                    "Average the parameters of model files or of a run's last K checkpoints",
                    setup_average);

}  // namespace nazar::cli
