// `nazar align --model M --src F --tgt F` (or `--tsv F`): word alignments of given sentence
// pairs under forced decoding (teacher forcing through the step API; decode/alignment.h).
// One line per pair, in input order: hard = Pharaoh "i-j" links (source token i, target token j,
// 0-based; argmax of each target token's attention), soft = the JSON weight matrix (one row per
// target token). The </s> row is left out. --scores prefixes "log p ||| ". A copy-attention
// model's lines end with " ||| p_gen g_1 ... g_n", p_gen of each target token (models/copy.h).
#include "cli/command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/pair_input.h"
#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/data/pipeline.h"
#include "nazar/data/reader.h"
#include "nazar/decode/alignment.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct AlignArgs {
    std::string model, src, tgt, tsv, alignment = "hard";
    int batch = 32;
    int threads = -1;
    bool scores = false;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

int run_align(const AlignArgs& a) {
    apply_threads_option(a.threads);
    const CorpusFiles files = pair_files(a.src, a.tgt, a.tsv);
    const AlignmentFormat format = parse_alignment_format(a.alignment);
    if (format == AlignmentFormat::none)
        throw UsageError("--alignment must be hard or soft for align");
    const TextModel tm = load_text_model(a.model, "align");
    DecodeSession model(*tm.loaded.model);  // its buffers reused by every batch
    const int32_t pad = model.config().special_ids.pad;

    PairReader reader(files, false, a.max_line_bytes);
    OutputSink out("-", {a.src, a.tgt, a.tsv, a.model});
    for_each_pair_batch(
        reader, tm, a.batch, [&](const IdRows& src, const IdRows& tgt, const CopyRows& copy) {
            int S = 0;
            for (const auto& s : src) S = std::max(S, static_cast<int>(s.size()));
            std::vector<int32_t> ids(src.size() * static_cast<std::size_t>(S), pad);
            std::vector<int32_t> copy_ids(copy.src.empty() ? 0 : ids.size(), pad);  // copy models
            std::vector<int> lengths;
            for (std::size_t b = 0; b < src.size(); ++b) {
                std::copy(src[b].begin(), src[b].end(),
                          ids.begin() + static_cast<std::ptrdiff_t>(b * S));
                if (!copy.src.empty())
                    std::copy(copy.src[b].begin(), copy.src[b].end(),
                              copy_ids.begin() + static_cast<std::ptrdiff_t>(b * S));
                lengths.push_back(static_cast<int>(src[b].size()));
            }
            const auto res = forced_alignment(model, ids, lengths, S,
                                              copy.src.empty() ? tgt : copy.tgt, copy_ids);
            std::string text;
            for (std::size_t b = 0; b < res.size(); ++b) {
                const int n_tgt = static_cast<int>(tgt[b].size());
                if (a.scores)
                    fmt::format_to(std::back_inserter(text), "{:.6f} ||| ", res[b].log_prob);
                text += format == AlignmentFormat::hard
                            ? format_hard_alignment(hard_alignment(res[b].attention, n_tgt))
                            : format_soft_alignment(res[b].attention, n_tgt);
                if (!res[b].p_gen.empty()) {  // copy attention: p_gen of each target token
                    text += " ||| p_gen";
                    for (int j = 0; j < n_tgt; ++j)
                        fmt::format_to(std::back_inserter(text), " {:.3f}", res[b].p_gen[j]);
                }
                text += '\n';
            }
            out.write(text);
        });
    out.close();
    return 0;
}

void setup_align(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<AlignArgs>();
    app.add_option("--model", a->model, "Model file (model.safetensors or a checkpoint)")
        ->required();
    app.add_option("--src", a->src, "Source sentences, one per line ('-' = stdin)");
    app.add_option("--tgt", a->tgt, "Target sentences, line-aligned with --src");
    app.add_option("--tsv", a->tsv,
                   "Pairs as source<TAB>target, instead of --src/--tgt ('-' = stdin)");
    app.add_option("--alignment", a->alignment, "hard (Pharaoh i-j) or soft (JSON matrix)")
        ->check(CLI::IsMember({"hard", "soft"}))
        ->capture_default_str();
    app.add_option("--batch", a->batch, "Sentence pairs per batch")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_flag("--scores", a->scores, "Prefix each line with log p(target | source) and ' ||| '");
    add_max_line_bytes_option(app, a->max_line_bytes);
    add_threads_option(app, a->threads);
    run = [a] { return run_align(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(
    align, "Word alignments of given sentence pairs from the model's attention (forced decoding)",
    setup_align);

}  // namespace nazar::cli
