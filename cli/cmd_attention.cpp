// `nazar attention --model M`: attention heatmaps for sentences read from stdin or --input
// (one per line). Each sentence is translated (greedy by default, --beam K for beam search) and
// its attention weights (one row per output token and </s>, one column per source token) are
// drawn in the terminal (ANSI colours on a TTY without NO_COLOR; plain characters otherwise),
// written as SVG (--svg: one sentence, chosen by --sentence) and/or as a self-contained HTML
// report (--html: every sentence, weights on hover). Input is read like translate's: a terminal
// or a pipe is answered sentence by sentence, a file up to 1024 sentences at a time.
#include "cli/command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/data/reader.h"
#include "nazar/decode/translator.h"
#include "nazar/viz/heatmap.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

constexpr std::size_t kChunk = 1024;  // most sentences translated at a time

struct AttentionArgs {
    std::string model, input = "-", svg, html, color = "auto", title, precision;
    int beam = 1, sentence = 1, threads = -1, batch = 32;
    bool no_terminal = false;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
};

viz::Heatmap to_heatmap(const std::string& source, const Translation& tr,
                        const std::string& caption) {
    const TranslationHypothesis& h = tr.hypotheses.at(0);
    viz::Heatmap m;
    m.source = tr.source_tokens;
    m.target = h.tokens;
    if (h.attention.ndim() == 2 && h.attention.dim(0) > static_cast<int64_t>(h.tokens.size()))
        m.target.emplace_back("</s>");
    const int T = static_cast<int>(m.target.size()), S = static_cast<int>(m.source.size());
    m.weights = Tensor({T, S});
    m.weights.zero();
    if (h.attention.ndim() == 2)  // rows may be wider than S_b (padding columns are 0)
        for (int t = 0; t < T && t < h.attention.dim(0); ++t)
            for (int i = 0; i < S && i < h.attention.dim(1); ++i)
                m.weights.at(t, i) = h.attention.at(t, i);
    // copy attention: each output row's label carries its p_gen (models/copy.h), in every
    // renderer (terminal, SVG, HTML)
    for (int t = 0; t < T && t < static_cast<int>(h.p_gen.size()); ++t)
        m.target[t] += fmt::format(" (p_gen {:.2f})", h.p_gen[t]);
    m.source_text = source;
    m.target_text = h.text;
    m.caption = caption;
    return m;
}

int run_attention(const AttentionArgs& a) {
    if (a.no_terminal && a.svg.empty() && a.html.empty())
        throw UsageError("attention: --no-terminal without --svg or --html would draw nothing");
    apply_threads_option(a.threads);
    const bool color = viz::use_color(viz::parse_color_mode(a.color), fileno(stdout));
    const std::string& input = a.input;
    const std::vector<std::string> inputs = {input, a.model};
    if (!a.svg.empty()) refuse_same_file(a.svg, inputs);
    if (!a.html.empty()) refuse_same_file(a.html, inputs);
    if (!a.svg.empty() && !a.html.empty()) {
        std::error_code ec1, ec2;
        const auto svg = std::filesystem::weakly_canonical(a.svg, ec1);
        const auto html = std::filesystem::weakly_canonical(a.html, ec2);
        if (a.svg == a.html || (!ec1 && !ec2 && svg == html))
            throw UsageError(fmt::format(
                "attention: --svg and --html name the same file '{}': one would overwrite the "
                "other (give two files)",
                a.html));
    }
    Translator tr(a.model, {.precision = parse_precision_option(a.precision)});
    std::unique_ptr<LineReader> reader;
    try {
        reader = std::make_unique<LineReader>(input, a.max_line_bytes);
    } catch (const Error& e) {
        throw UsageError(fmt::format("attention: cannot open --input: {}", e.what()));
    }
    std::unique_ptr<OutputSink> out;
    if (!a.no_terminal) out = std::make_unique<OutputSink>("-", inputs);
    TranslationOptions opt;
    opt.beam_size = a.beam;
    opt.batch_size = a.batch;
    opt.attention = true;
    const std::string caption =
        fmt::format("{} · {}", a.model, a.beam == 1 ? "greedy" : fmt::format("beam {}", a.beam));
    const bool keep = !a.svg.empty() || !a.html.empty();  // the maps are needed at the end
    std::vector<viz::Heatmap> maps;
    std::vector<std::string> lines;
    std::string_view line;
    int64_t n = 0;
    bool more = true;
    while (more) {
        // Like translate: the lines there already, so a terminal or a pipe is answered line
        // by line; a file is read kChunk lines at a time.
        lines.clear();
        while (lines.size() < kChunk && (lines.empty() || reader->ready()) &&
               (more = reader->next(line)))
            lines.emplace_back(line);
        if (lines.empty()) break;
        const std::vector<Translation> res = tr.translate(lines, opt);
        std::string text;
        for (std::size_t k = 0; k < res.size(); ++k, ++n) {
            viz::Heatmap m = to_heatmap(lines[k], res[k], caption);
            if (out) {
                fmt::format_to(std::back_inserter(text), "{}{} -> {}\n", n ? "\n" : "",
                               m.source_text, m.target_text);
                text += viz::render_terminal(m, {.color = color, .legend = k + 1 == res.size()});
            }
            if (keep) maps.push_back(std::move(m));
        }
        if (out) out->write(text);
    }
    if (out) out->close();
    if (n == 0)
        throw UsageError("attention: no input sentences (give them on stdin or with --input)");
    if (!a.svg.empty() && (a.sentence < 1 || a.sentence > n))
        throw UsageError(
            fmt::format("attention: --sentence {} is not in 1..{} (the number of input sentences)",
                        a.sentence, n));
    if (!a.svg.empty())
        atomic_write_file(a.svg, viz::render_svg(maps[static_cast<std::size_t>(a.sentence - 1)]));
    if (!a.html.empty()) {
        viz::HtmlOptions ho;
        ho.title = a.title.empty() ? fmt::format("nazar attention: {}", a.model) : a.title;
        atomic_write_file(a.html, viz::render_html(maps, ho));
    }
    return 0;
}

void setup_attention(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<AttentionArgs>();
    app.add_option("--model,-m", a->model, "Model file (.safetensors)")->required();
    add_precision_option(app, a->precision);
    app.add_option("--input,-i", a->input,
                   "Sentences, one per line ('-' = stdin; gzip is detected)")
        ->capture_default_str();
    app.add_option("--svg", a->svg, "Write the heatmap of one sentence (--sentence) as SVG");
    app.add_option("--sentence", a->sentence, "Which input sentence --svg draws (1-based)")
        ->capture_default_str();
    app.add_option("--html", a->html, "Write a self-contained HTML report of every sentence");
    app.add_option("--title", a->title, "Title of the HTML report");
    app.add_option("--color", a->color,
                   "auto | always | never (auto: colour on a TTY unless NO_COLOR is set)")
        ->capture_default_str();
    app.add_option("--beam", a->beam, "Beam size (1 = greedy)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--batch", a->batch, "Sentences per decoder batch")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    add_threads_option(app, a->threads);
    add_max_line_bytes_option(app, a->max_line_bytes);
    app.add_flag("--no-terminal", a->no_terminal, "Do not draw heatmaps on stdout (files only)");
    run = [a] { return run_attention(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(attention, "Attention heatmaps (terminal, SVG, HTML) for sentences on stdin",
                    setup_attention);

}  // namespace nazar::cli
