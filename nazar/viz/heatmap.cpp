#include "nazar/viz/heatmap.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace nazar::viz {

void check_heatmap(const Heatmap& h) {
    const int64_t T = static_cast<int64_t>(h.target.size()),
                  S = static_cast<int64_t>(h.source.size());
    NZ_CHECK(h.weights.ndim() == 2 && h.weights.dim(0) == T && h.weights.dim(1) == S,
             "heatmap: weights have shape {} but there are {} output and {} source tokens",
             h.weights.shape().str(), T, S);
}

namespace {
// Sequential palette, light -> dark (ColorBrewer YlOrRd/YlOrBr family); luminance decreases.
constexpr std::array<Rgb, 5> kAnchors = {Rgb{255, 255, 229}, Rgb{254, 227, 145}, Rgb{254, 153, 41},
                                         Rgb{204, 76, 2}, Rgb{102, 37, 2}};

double srgb_to_linear(uint8_t c) {
    const double v = c / 255.0;
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
}

int cps(std::string_view s) {  // code points
    int n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// The first `n` code points of s as separate strings.
std::vector<std::string> split_cps(std::string_view s) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i + 1;
        while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
        out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string pad_left(const std::string& s, int width) {
    return std::string(static_cast<std::size_t>(std::max(0, width - cps(s))), ' ') + s;
}

std::string cut(const std::string& s, int max_cps) {
    auto parts = split_cps(s);
    if (static_cast<int>(parts.size()) <= max_cps) return s;
    std::string out;
    for (int i = 0; i < max_cps - 1; ++i) out += parts[i];
    return out + "…";
}

// A title line of at most `max_cps` code points: cut at the last space that keeps at least half
// of it (a word is never split unless it alone is that long), then "…".
std::string ellipsize_words(const std::string& s, int max_cps) {
    auto parts = split_cps(s);
    const int n = static_cast<int>(parts.size());
    if (n <= max_cps) return s;
    int end = std::max(max_cps - 1, 1);
    for (int i = end; i >= (max_cps + 1) / 2; --i)
        if (parts[static_cast<std::size_t>(i)] == " ") {
            end = i;
            break;
        }
    while (end > 1 && parts[static_cast<std::size_t>(end - 1)] == " ") --end;
    std::string out;
    for (int i = 0; i < end; ++i) out += parts[static_cast<std::size_t>(i)];
    return out + "…";
}

constexpr std::string_view kRamp = " .:-=+*#%@";
char ramp(float w) {
    const float c = std::isfinite(w) ? std::clamp(w, 0.0f, 1.0f) : 0.0f;
    return kRamp[static_cast<std::size_t>(std::min(9.0f, std::floor(c * 10.0f)))];
}

std::string bg(Rgb c) {
    return fmt::format("\x1b[48;2;{};{};{}m", c.r, c.g, c.b);
}
}  // namespace

Rgb colour(float w) {
    const float c = std::isfinite(w) ? std::clamp(w, 0.0f, 1.0f) : 0.0f;
    const float x = c * static_cast<float>(kAnchors.size() - 1);
    const int k = std::min(static_cast<int>(x), static_cast<int>(kAnchors.size()) - 2);
    const float f = x - static_cast<float>(k);
    auto mix = [&](uint8_t a, uint8_t b) {
        return static_cast<uint8_t>(std::lround(a + (b - a) * f));
    };
    const Rgb &a = kAnchors[k], &b = kAnchors[k + 1];
    return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

std::string hex(Rgb c) {
    return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b);
}

double luminance(Rgb c) {
    return 0.2126 * srgb_to_linear(c.r) + 0.7152 * srgb_to_linear(c.g) +
           0.0722 * srgb_to_linear(c.b);
}

std::string display_token(std::string_view t) {
    if (t.empty()) return "∅";
    if (t == " ") return "␣";
    if (t == "\t") return "⇥";
    std::string out;
    for (char ch : t)
        out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? std::string("·")
                                                                   : std::string(1, ch);
    return out;
}

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                // Control characters other than tab/newline are not allowed in XML 1.0.
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                    out += "&#xfffd;";
                else
                    out += c;
        }
    }
    return out;
}

ColorMode parse_color_mode(std::string_view s) {
    if (s == "auto") return ColorMode::automatic;
    if (s == "always") return ColorMode::always;
    if (s == "never") return ColorMode::never;
    throw UsageError(fmt::format("--color: '{}' is not one of auto, always, never", excerpt(s)));
}

bool use_color(ColorMode mode, int fd) {
    if (mode != ColorMode::automatic) return mode == ColorMode::always;
    const char* no = std::getenv("NO_COLOR");
    if (no && *no) return false;
    return isatty(fd) != 0;
}

std::string render_terminal(const Heatmap& h, const TerminalOptions& opt) {
    check_heatmap(h);
    const int T = static_cast<int>(h.target.size()), S = static_cast<int>(h.source.size());
    int label_w = 1, rows = 1;
    std::vector<std::vector<std::string>> cols(static_cast<std::size_t>(S));
    for (int i = 0; i < S; ++i) {
        cols[i] = split_cps(cut(display_token(h.source[i]), opt.max_label_rows));
        rows = std::max(rows, static_cast<int>(cols[i].size()));
    }
    std::vector<std::string> labels(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) {
        labels[t] = cut(display_token(h.target[t]), 12);
        label_w = std::max(label_w, cps(labels[t]));
    }
    std::string out;
    for (int r = 0; r < rows; ++r) {  // source tokens written top-down, bottom-aligned
        out += std::string(static_cast<std::size_t>(label_w + 1), ' ');
        for (int i = 0; i < S; ++i) {
            const int k = r - (rows - static_cast<int>(cols[i].size()));
            out += (k >= 0 ? cols[i][k] : std::string(" ")) + " ";
        }
        out += "\n";
    }
    const ConstTensorView w = h.weights;
    for (int t = 0; t < T; ++t) {
        out += pad_left(labels[t], label_w) + " ";
        for (int i = 0; i < S; ++i) {
            const float v = w.at(t, i);
            if (opt.color)
                out += bg(colour(v)) + "  ";
            else
                out += std::string(1, ramp(v)) + " ";
        }
        if (opt.color) out += "\x1b[0m";
        out += "\n";
    }
    if (opt.legend) {
        out += std::string(static_cast<std::size_t>(label_w + 1), ' ');
        if (opt.color) {
            out += "0 ";
            for (int k = 0; k <= 10; ++k) out += bg(colour(static_cast<float>(k) / 10.0f)) + " ";
            out += "\x1b[0m 1  attention weight\n";
        } else {
            out += fmt::format("weight: '{}' = 0-0.1 ... '{}' = 0.9-1 (ramp \"{}\")\n",
                               kRamp.front(), kRamp.back(), kRamp);
        }
    }
    return out;
}

namespace {

// Sizes and positions of an SVG heatmap, and its cut labels.
struct SvgLayout {
    int c = 0, font = 0;  // cell size, label font size (px)
    std::vector<std::string> src, tgt;
    int src_len = 1, tgt_len = 1;  // longest label (code points)
    int title_h = 44;
    int x0 = 0, y0 = 0;  // top left of the cells
    int bar_x = 0, bar_h = 0, width = 0, height = 0;
    std::string gid;  // id of the colour scale gradient
};

SvgLayout svg_layout(const Heatmap& h, const SvgOptions& opt) {
    SvgLayout L;
    const int T = static_cast<int>(h.target.size()), S = static_cast<int>(h.source.size());
    L.c = opt.cell > 0 ? opt.cell : (std::max(S, T) <= 30 ? 22 : 16);
    L.font = std::clamp(L.c - 6, 9, 13);
    const double char_w = L.font * 0.62;  // monospace advance
    L.src.resize(static_cast<std::size_t>(S));
    L.tgt.resize(static_cast<std::size_t>(T));
    for (int i = 0; i < S; ++i)
        L.src_len = std::max(L.src_len, cps(L.src[i] = cut(display_token(h.source[i]), 16)));
    for (int t = 0; t < T; ++t)
        L.tgt_len = std::max(L.tgt_len, cps(L.tgt[t] = cut(display_token(h.target[t]), 16)));
    L.x0 = 34 + static_cast<int>(L.tgt_len * char_w) + 8;
    L.y0 = L.title_h + 18 + static_cast<int>(L.src_len * char_w) + 8;
    L.bar_x = L.x0 + S * L.c + 24;
    L.bar_h = std::clamp(T * L.c, 120, 320);
    L.width = std::max(L.bar_x + 110, 420);
    L.height = L.y0 + std::max(T * L.c, L.bar_h) + 24;
    L.gid = (opt.id.empty() ? std::string("hm") : opt.id) + "-scale";
    return L;
}

// The XML declaration, the <svg> element, the background, the two title lines, the axis titles.
void svg_header(std::string& o, const Heatmap& h, const SvgOptions& opt, const SvgLayout& L) {
    const int T = static_cast<int>(h.target.size()), S = static_cast<int>(h.source.size());
    if (opt.standalone) o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\"{} width=\"{}\" "
        "height=\"{}\" "
        "viewBox=\"0 0 {} {}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" "
        "font-size=\"{}\" data-rows=\"{}\" data-cols=\"{}\">\n",
        opt.id.empty() ? "" : fmt::format(" id=\"{}\"", xml_escape(opt.id)), L.width, L.height,
        L.width, L.height, L.font, T, S);
    o += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     L.width, L.height);
    // The two title lines fit the canvas: at most as many code points as 13 px monospace
    // characters fit between the 8 px margins (the "→ " prefix of the second line included);
    // longer titles end at a word boundary with "…".
    const int title_cps = std::max(8, static_cast<int>((L.width - 16) / (13 * 0.62)));
    o += fmt::format("<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
                     xml_escape(ellipsize_words(
                         h.source_text.empty() ? fmt::format("{} source tokens", S) : h.source_text,
                         title_cps)));
    o += fmt::format("<text x=\"8\" y=\"36\" font-size=\"13\">→ {}</text>\n",
                     xml_escape(ellipsize_words(
                         h.target_text.empty() ? fmt::format("{} output tokens", T) : h.target_text,
                         title_cps - 2)));
    // axis titles
    o += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555555\">source tokens →</text>\n", L.x0,
        L.title_h + 12);
    o += fmt::format(
        "<text transform=\"translate(16,{}) rotate(-90)\" font-size=\"11\" fill=\"#555555\" "
        "text-anchor=\"end\">output tokens →</text>\n",
        L.y0);
}

// The source and output token labels and one cell per weight.
void svg_labels_and_cells(std::string& o, const Heatmap& h, const SvgLayout& L) {
    const int T = static_cast<int>(h.target.size()), S = static_cast<int>(h.source.size());
    // labels
    o += "<g class=\"src-labels\">\n";
    for (int i = 0; i < S; ++i) {
        // Single characters (char level) stand upright, centred on their column.
        if (L.src_len == 1)
            o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                             L.x0 + i * L.c + L.c / 2.0, L.y0 - 5, xml_escape(L.src[i]));
        else
            o += fmt::format("<text transform=\"translate({:.1f},{}) rotate(-90)\">{}</text>\n",
                             L.x0 + i * L.c + L.c / 2.0 + L.font * 0.35, L.y0 - 5,
                             xml_escape(L.src[i]));
    }
    o += "</g>\n<g class=\"tgt-labels\" text-anchor=\"end\">\n";
    for (int t = 0; t < T; ++t)
        o += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", L.x0 - 5,
                         L.y0 + t * L.c + L.c / 2.0 + L.font * 0.35, xml_escape(L.tgt[t]));
    o += "</g>\n<g class=\"cells\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
    const ConstTensorView w = h.weights;
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < S; ++i) {
            const float v = w.at(t, i);
            o += fmt::format(
                "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                "data-t=\"{}\" data-i=\"{}\" data-w=\"{:.4f}\"><title>output {} '{}' ← source {} "
                "'{}': "
                "{:.4f}</title></rect>\n",
                L.x0 + i * L.c, L.y0 + t * L.c, L.c, L.c, hex(colour(v)), t, i, v, t,
                xml_escape(L.tgt[t]), i, xml_escape(L.src[i]), v);
        }
    o += "</g>\n";
}

// The colour scale with its ticks and title.
void svg_legend(std::string& o, const SvgLayout& L) {
    // colour scale + legend
    o += fmt::format("<defs><linearGradient id=\"{}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n",
                     xml_escape(L.gid));
    for (int k = 0; k <= 10; ++k)
        o += fmt::format("<stop offset=\"{:.1f}\" stop-color=\"{}\"/>\n", k / 10.0,
                         hex(colour(k / 10.0f)));
    o += "</linearGradient></defs>\n<g class=\"legend\">\n";
    o += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"{}\" fill=\"url(#{})\" "
        "stroke=\"#888888\" "
        "stroke-width=\"0.5\"/>\n",
        L.bar_x, L.y0, L.bar_h, xml_escape(L.gid));
    for (int k = 0; k <= 4; ++k) {
        const double y = L.y0 + L.bar_h - L.bar_h * k / 4.0;
        o += fmt::format(
            "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#444444\"/>\n",
            L.bar_x + 14, y, L.bar_x + 18, y);
        o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\">{:.2f}</text>\n",
                         L.bar_x + 21, y + 4, k / 4.0);
    }
    o += fmt::format(
        "<text transform=\"translate({},{}) rotate(-90)\" font-size=\"11\" fill=\"#555555\" "
        "text-anchor=\"end\">attention weight α</text>\n",
        L.bar_x - 5, L.y0);
    o += "</g>\n</svg>\n";
}

}  // namespace

std::string render_svg(const Heatmap& h, const SvgOptions& opt) {
    check_heatmap(h);
    const SvgLayout L = svg_layout(h, opt);
    std::string o;
    svg_header(o, h, opt, L);
    svg_labels_and_cells(o, h, L);
    svg_legend(o, L);
    return o;
}

}  // namespace nazar::viz
