// Heatmap renderers: the palette, the SVG's structure (well-formed, one cell per (target, source)
// pair whose fill encodes the weight, labelled axes, a colour scale), the terminal forms (ANSI
// only when asked; NO_COLOR) and the HTML report (self-contained, one heatmap per sentence).
#include "nazar/core/check.h"
#include "nazar/viz/heatmap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

namespace test_viz_heatmap {

using namespace nazar;
using namespace nazar::viz;

namespace {

Heatmap sample(int T, int S) {
    Heatmap h;
    for (int i = 0; i < S; ++i)
        h.source.push_back(i == 0   ? "<&>"
                           : i == 1 ? " "
                                    : std::string(1, static_cast<char>('a' + i % 26)));
    for (int t = 0; t < T; ++t)
        h.target.push_back(t + 1 == T ? std::string("</s>")
                                      : std::string("y").append(std::to_string(t)));
    h.weights = Tensor({T, S});
    for (int t = 0; t < T; ++t) {  // a soft diagonal, rows sum to 1
        float sum = 0;
        for (int i = 0; i < S; ++i)
            sum += h.weights.at(t, i) = 1.0f / (1.0f + 4.0f * std::abs(i - t));
        for (int i = 0; i < S; ++i) h.weights.at(t, i) /= sum;
    }
    h.source_text = "source \"quoted\" & <tagged>";
    h.target_text = "target";
    return h;
}

// Minimal XML well-formedness: every tag closed in order, attributes quoted, no raw '&' or '<'
// in text (entities only). Returns "" or the first problem.
std::string xml_problem(const std::string& s) {
    std::vector<std::string> stack;
    std::size_t i = 0;
    if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
    while (i < s.size()) {
        if (s[i] == '&') {
            const std::size_t semi = s.find(';', i);
            if (semi == std::string::npos || semi - i > 10) return "bare & at " + std::to_string(i);
            i = semi + 1;
            continue;
        }
        if (s[i] != '<') {
            ++i;
            continue;
        }
        const std::size_t end = s.find('>', i);
        if (end == std::string::npos) return "unterminated tag";
        std::string tag = s.substr(i + 1, end - i - 1);
        if (std::count(tag.begin(), tag.end(), '"') % 2)
            return "unbalanced quotes in <" + tag + ">";
        if (tag.find('<') != std::string::npos) return "'<' inside a tag";
        if (tag[0] == '/') {
            const std::string name = tag.substr(1);
            if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
            stack.pop_back();
        } else if (tag.back() != '/') {
            stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
        }
        i = end + 1;
    }
    return stack.empty() ? "" : "unclosed <" + stack.back() + ">";
}

}  // namespace

TEST(VizPalette, EndpointsAndMonotoneLuminance) {
    EXPECT_EQ(hex(colour(0.0f)), "#ffffe5");
    EXPECT_EQ(hex(colour(1.0f)), "#662502");
    EXPECT_EQ(colour(-3.0f), colour(0.0f));
    EXPECT_EQ(colour(7.0f), colour(1.0f));
    EXPECT_EQ(colour(std::nanf("")), colour(0.0f));
    double prev = 2;
    for (int k = 0; k <= 1000; ++k) {
        const double l = luminance(colour(static_cast<float>(k) / 1000.0f));
        EXPECT_LE(l, prev + 1e-12) << "weight " << k / 1000.0;
        prev = l;
    }
    EXPECT_GT(luminance(colour(0)) - luminance(colour(1)), 0.8);  // the scale spans light to dark
}

TEST(VizSvg, OneCellPerPairFillEncodesWeight) {
    const Heatmap h = sample(7, 11);
    const std::string svg = render_svg(h);
    EXPECT_EQ(xml_problem(svg), "");
    const std::regex cell(
        R"re(<rect class="cell" x="(\d+)" y="(\d+)" width="\d+" height="\d+" fill="(#[0-9a-f]{6})" data-t="(\d+)" data-i="(\d+)" data-w="([0-9.]+)")re");
    int n = 0;
    std::vector<int> seen(7 * 11, 0);
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator();
         ++it, ++n) {
        const auto& m = *it;
        const int t = std::stoi(m[4]), i = std::stoi(m[5]);
        ASSERT_TRUE(t < 7 && i < 11);
        ++seen[t * 11 + i];
        EXPECT_EQ(m[3].str(), hex(colour(h.weights.at(t, i))));
        EXPECT_NEAR(std::stod(m[6]), h.weights.at(t, i), 1e-4);
    }
    EXPECT_EQ(n, 7 * 11);
    for (int s : seen) EXPECT_EQ(s, 1);
    // axes: every token is a label (escaped), a colour scale with its ticks and legend
    EXPECT_NE(svg.find(">&lt;&amp;&gt;</text>"), std::string::npos);
    EXPECT_NE(svg.find(">␣</text>"), std::string::npos);
    EXPECT_NE(svg.find(">&lt;/s&gt;</text>"), std::string::npos);
    EXPECT_NE(svg.find("linearGradient"), std::string::npos);
    EXPECT_NE(svg.find(">0.00</text>"), std::string::npos);
    EXPECT_NE(svg.find(">1.00</text>"), std::string::npos);
    EXPECT_NE(svg.find("attention weight"), std::string::npos);
    EXPECT_NE(svg.find("source &quot;quoted&quot; &amp; &lt;tagged&gt;"), std::string::npos);
}

TEST(VizSvg, LargeMapsKeepReadableCells) {
    const Heatmap h = sample(60, 60);
    const std::string svg = render_svg(h);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_NE(svg.find("width=\"16\" height=\"16\""), std::string::npos);  // 16 px cells at 60 x 60
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(svg, m, std::regex(R"re(<svg [^>]*width="(\d+)" height="(\d+)")re")));
    EXPECT_GE(std::stoi(m[1]), 60 * 16);
    EXPECT_GE(std::stoi(m[2]), 60 * 16);
}

TEST(VizSvg, ShapeMismatchIsAnError) {
    Heatmap h = sample(3, 4);
    h.source.pop_back();
    EXPECT_THROW(render_svg(h), Error);
    EXPECT_THROW(render_terminal(h), Error);
    try {
        render_svg(h);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("(3, 4)"), std::string::npos) << e.what();
    }
}

TEST(VizTerminal, PlainAndColour) {
    const Heatmap h = sample(3, 4);
    const std::string plain = render_terminal(h, {.color = false});
    EXPECT_EQ(plain.find('\x1b'), std::string::npos);
    EXPECT_NE(plain.find("</s>"), std::string::npos);
    EXPECT_NE(plain.find("ramp"), std::string::npos);
    // row of y0: weight of column 0 is the largest -> the densest ramp character of that row
    const std::string colour_out = render_terminal(h, {.color = true});
    EXPECT_NE(colour_out.find("\x1b[48;2;"), std::string::npos);
    EXPECT_NE(colour_out.find("\x1b[0m"), std::string::npos);
    // a one-hot row draws '@' in plain mode
    Heatmap one = sample(1, 3);
    one.weights.zero();
    one.weights.at(0, 2) = 1;
    const std::string p = render_terminal(one, {.color = false, .legend = false});
    EXPECT_NE(p.find("</s>     @ "), std::string::npos) << p;
}

TEST(VizTerminal, ColorModes) {
    EXPECT_TRUE(use_color(ColorMode::always, 1));
    EXPECT_FALSE(use_color(ColorMode::never, 1));
    ::setenv("NO_COLOR", "1", 1);
    EXPECT_FALSE(use_color(ColorMode::automatic, 0));
    ::unsetenv("NO_COLOR");
    // a pipe is never a TTY
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    EXPECT_FALSE(use_color(ColorMode::automatic, fds[1]));
    ::close(fds[0]);
    ::close(fds[1]);
    EXPECT_THROW(parse_color_mode("sometimes"), UsageError);
    EXPECT_EQ(parse_color_mode("never"), ColorMode::never);
}

TEST(VizTokens, DisplayAndEscape) {
    EXPECT_EQ(display_token(" "), "␣");
    EXPECT_EQ(display_token(""), "∅");
    EXPECT_EQ(display_token("\t"), "⇥");
    EXPECT_EQ(display_token("a\x01"), "a·");
    EXPECT_EQ(display_token("é"), "é");
    EXPECT_EQ(xml_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

TEST(VizHtml, SelfContainedOneHeatmapPerSentence) {
    std::vector<Heatmap> maps{sample(3, 4), sample(5, 2), sample(2, 6)};
    const std::string html =
        render_html(maps, {.title = "t <1>", .intro = "", .sections = {{"Run", "a & b"}}});
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    int svgs = 0;
    for (std::size_t p = html.find("<svg "); p != std::string::npos; p = html.find("<svg ", p + 1))
        ++svgs;
    EXPECT_EQ(svgs, 3);
    EXPECT_NE(html.find("data-expected=\"3\""), std::string::npos);
    EXPECT_NE(html.find("id=\"hm1-scale\""), std::string::npos);  // gradient ids unique per heatmap
    EXPECT_NE(html.find("id=\"hm3-scale\""), std::string::npos);
    EXPECT_NE(html.find("<title>t &lt;1&gt;</title>"), std::string::npos);
    EXPECT_NE(html.find("a &amp; b"), std::string::npos);
    // nothing is fetched: no external scripts, stylesheets, images or fonts
    EXPECT_EQ(html.find("src="), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_EQ(html.find("@import"), std::string::npos);
    EXPECT_EQ(html.find("url(http"), std::string::npos);
    // body (minus the inline script) is well-formed XML too
    const std::size_t b = html.find("<body"), s = html.find("<script>");
    EXPECT_EQ(xml_problem(html.substr(b, s - b) + "</body>"), "");
}

}  // namespace test_viz_heatmap
