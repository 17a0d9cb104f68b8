// `nazar attention --model M`: attention heatmaps for sentences read from stdin or --input
// (one per line). Each sentence is translated (greedy by default, --beam K for beam search) and
// its attention weights (one row per output token and </s>, one column per source token) are
// drawn in the terminal (ANSI colours on a TTY without NO_COLOR; plain characters otherwise),
// written as SVG (--svg: one sentence, chosen by --sentence) and/or as a self-contained HTML
// report (--html: every sentence, weights on hover).
#include "cli/command.h"
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/decode/translator.h"
#include "nazar/viz/heatmap.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>

namespace nazar::cli {
namespace {

struct AttentionArgs {
    std::string model, input, svg, html, color = "auto", title;
    int beam = 1, sentence = 1, threads = 0, batch = 32;
    bool no_terminal = false;
};

std::vector<std::string> read_lines(const std::string& path) {
    std::vector<std::string> lines;
    auto read = [&](std::istream& in) {
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            lines.push_back(line);
        }
    };
    if (path.empty() || path == "-") {
        read(std::cin);
    } else {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw UsageError(fmt::format("attention: cannot open --input '{}'", path));
        read(in);
    }
    return lines;
}

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
    m.source_text = source;
    m.target_text = h.text;
    m.caption = caption;
    return m;
}

int run_attention(const AttentionArgs& a) {
    if (a.no_terminal && a.svg.empty() && a.html.empty())
        throw UsageError("attention: --no-terminal without --svg or --html would draw nothing");
    set_num_threads(a.threads);
    const bool color = viz::use_color(viz::parse_color_mode(a.color), fileno(stdout));
    const std::vector<std::string> lines = read_lines(a.input);
    if (lines.empty())
        throw UsageError("attention: no input sentences (give them on stdin or with --input)");
    if (!a.svg.empty() && (a.sentence < 1 || a.sentence > static_cast<int>(lines.size())))
        throw UsageError(
            fmt::format("attention: --sentence {} is not in 1..{} (the number of input sentences)",
                        a.sentence, lines.size()));
    Translator tr(a.model);
    TranslationOptions opt;
    opt.beam_size = a.beam;
    opt.batch_size = a.batch;
    opt.attention = true;
    const std::vector<Translation> out = tr.translate(lines, opt);
    const std::string caption =
        fmt::format("{} · {}", a.model, a.beam == 1 ? "greedy" : fmt::format("beam {}", a.beam));
    std::vector<viz::Heatmap> maps;
    maps.reserve(out.size());
    for (std::size_t k = 0; k < out.size(); ++k)
        maps.push_back(to_heatmap(lines[k], out[k], caption));
    if (!a.no_terminal) {
        for (std::size_t k = 0; k < maps.size(); ++k) {
            fmt::print("{}{} -> {}\n", k ? "\n" : "", maps[k].source_text, maps[k].target_text);
            fmt::print("{}", viz::render_terminal(
                                 maps[k], {.color = color, .legend = k + 1 == maps.size()}));
        }
        std::fflush(stdout);
    }
    if (!a.svg.empty())
        atomic_write_file(a.svg, viz::render_svg(maps[static_cast<std::size_t>(a.sentence - 1)]));
    if (!a.html.empty()) {
        viz::HtmlOptions ho;
        ho.title = a.title.empty() ? "nazar attention: " + a.model : a.title;
        atomic_write_file(a.html, viz::render_html(maps, ho));
    }
    return 0;
}

void setup_attention(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<AttentionArgs>();
    app.add_option("--model,-m", a->model, "Model file (.safetensors)")->required();
    app.add_option("--input,-i", a->input, "Sentences, one per line (default: stdin)");
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
    app.add_option("--threads", a->threads, "Threads (0 = all cores)")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    app.add_flag("--no-terminal", a->no_terminal, "Do not draw heatmaps on stdout (files only)");
    run = [a] { return run_attention(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(attention, "Attention heatmaps (terminal, SVG, HTML) for sentences on stdin",
                    setup_attention);

}  // namespace nazar::cli
