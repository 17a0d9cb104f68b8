// `nazar quantize --model M --precision int8|bf16 -o M8`: a model file whose weight matrices (and
// embeddings) are stored in reduced precision (nazar/models/quantized_file.h; README "Formats"),
// for translate / score / attention, which run it in that precision. Written atomically.
#include "cli/command.h"
#include "nazar/core/check.h"
#include "nazar/models/model_file.h"
#include "nazar/models/quantized_file.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace nazar::cli {
namespace {

struct QuantizeArgs {
    std::string model, precision, output;
};

int run_quantize(const QuantizeArgs& a) {
    const Precision p = parse_precision(a.precision);
    if (p == Precision::fp32)
        throw UsageError("--precision must be int8 or bf16 (an fp32 file is the model itself)");
    const SafeTensors in = load_safetensors(a.model);
    if (const auto fp = file_precision(in))
        throw Error(fmt::format("'{}' is already quantized ({}): quantize its fp32 model", a.model,
                                precision_name(*fp)));
    model_from_safetensors(in);  // every model-file check, before anything is written
    const SafeTensors out = quantize_model_file(in, p);
    save_safetensors(a.output, out);
    std::fprintf(
        stderr, "%s: %zu matrices and embeddings in %s, %zu tensors kept F32; %.1f MB -> %.1f MB\n",
        a.output.c_str(), out.raw().size(), precision_name(p),
        out.tensors().size() - (p == Precision::int8 ? out.raw().size() : 0),
        static_cast<double>(std::filesystem::file_size(a.model)) / 1e6,
        static_cast<double>(std::filesystem::file_size(a.output)) / 1e6);
    return 0;
}

void setup_quantize(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<QuantizeArgs>();
    app.add_option("--model", a->model, "fp32 model file (model.safetensors or a checkpoint)")
        ->required();
    app.add_option("--precision", a->precision,
                   "int8 (per-row scales) or bf16 (README \"Formats\", docs/performance.md)")
        ->required()
        ->check(CLI::IsMember({"int8", "bf16"}));
    app.add_option("-o,--output", a->output, "Quantized model file to write")->required();
    run = [a] { return run_quantize(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(quantize,
                    "Store a model's weight matrices and embeddings in int8 or bf16 for inference",
                    setup_quantize);

}  // namespace nazar::cli
