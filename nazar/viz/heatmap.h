// Attention heatmaps (docs/spec.md §8: the weights are how a user sees what the model looked at —
// "highlighting", docs/spec.md §11): one row per output token, one column per source token, the
// cell's colour encodes the weight α[t, i] in [0, 1].
//
//   terminal  ANSI 24-bit background colours, two columns per cell, source tokens written
//             vertically above their column; plain mode (not a TTY, NO_COLOR set, or asked)
//             draws the weight with the ramp " .:-=+*#%@" instead. Long inputs are shown whole:
//             the terminal scrolls.
//   svg       one self-contained SVG: labelled axes (source tokens along the top, output tokens
//             down the left), one <rect class="cell"> per (target, source) pair whose fill is
//             colour(weight) and whose data-w / <title> carry the value, and a colour scale with
//             its legend. Cells are at least 14 px, so 60 × 60 tokens stay readable.
//   html      a self-contained page (inline CSS, JS and SVG; nothing is fetched): for every
//             sentence its source, translation and heatmap; hovering a cell shows the source and
//             output tokens and the weight. The page sets data-heatmaps="N" on <body> once its
//             script ran, and records script errors in data-errors (what the browser test reads).
// The colour scale is one sequential palette (light for 0 → dark red for 1; luminance falls
// monotonically), shared by all three renderers.
#pragma once

#include "nazar/core/tensor.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::viz {

struct Heatmap {
    std::vector<std::string> source;  // column labels (S): the source tokens
    std::vector<std::string>
        target;               // row labels (T): the output tokens (conventionally ending "</s>")
    Tensor weights;           // (T, S) attention weights in [0, 1]
    std::string source_text;  // shown above the heatmap (html) / in the title (svg)
    std::string target_text;
    std::string caption;  // e.g. the model and attention kind, or "reference: ..."
};
// Checks weights is (T, S) with T = target.size(), S = source.size() (Error naming the shapes).
void check_heatmap(const Heatmap& h);

struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb&) const = default;
};
Rgb colour(float weight);  // the palette; weight clamped to [0, 1] (NaN -> 0)
std::string hex(Rgb c);    // "#rrggbb"
double luminance(Rgb c);   // relative luminance (sRGB, WCAG), for contrast and tests

// Token as drawn in a label: " " -> "␣", "\t" -> "⇥", other control characters -> "·",
// empty -> "∅"; everything else unchanged.
std::string display_token(std::string_view token);
std::string xml_escape(std::string_view text);  // & < > " '

enum class ColorMode { automatic, always, never };
ColorMode parse_color_mode(std::string_view name);  // "auto" | "always" | "never"; UsageError
// automatic: colour when `fd` is a TTY and the NO_COLOR environment variable is unset or empty.
bool use_color(ColorMode mode, int fd);

struct TerminalOptions {
    bool color = true;
    int max_label_rows = 8;  // source tokens longer than this are cut (with "…") in the header
    bool legend = true;
};
std::string render_terminal(const Heatmap& h, const TerminalOptions& opt = {});

struct SvgOptions {
    int cell = 0;            // cell size in px; 0 = 22 for up to 30 columns/rows, else 16
    bool standalone = true;  // <?xml ...?> prologue (false: embeddable in HTML)
    std::string id;          // id attribute of the <svg> element (html: "hm3")
};
std::string render_svg(const Heatmap& h, const SvgOptions& opt = {});

struct HtmlOptions {
    std::string title = "nazar attention";
    std::string intro;  // paragraph under the title (plain text; escaped)
    // Extra sections before the heatmaps, as (heading, preformatted text) pairs (escaped).
    std::vector<std::pair<std::string, std::string>> sections;
};
std::string render_html(std::span<const Heatmap> maps, const HtmlOptions& opt = {});

}  // namespace nazar::viz
