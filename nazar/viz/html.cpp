// The self-contained HTML report (heatmap.h): inline CSS, inline SVG per sentence, a small inline
// script for the hover read-out. Nothing is fetched from the network.
#include "nazar/viz/heatmap.h"

#include <fmt/format.h>

namespace nazar::viz {

namespace {
constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 8px 0; }
h2 { font-size: 16px; margin: 0 0 6px 0; }
p.intro { max-width: 60em; line-height: 1.4; }
pre.section { background: #fff; border: 1px solid #ddd; padding: 10px; overflow-x: auto; font-size: 12px; }
section.sentence { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px; margin: 14px 0; }
section.sentence .pair { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; margin: 2px 0; }
section.sentence .label { color: #777; display: inline-block; width: 7em; }
section.sentence .caption { color: #666; font-size: 13px; margin: 4px 0 8px 0; }
div.map { overflow-x: auto; }
svg.heatmap rect.cell:hover { stroke: #000; stroke-width: 2; }
#tip { position: fixed; display: none; pointer-events: none; background: #222; color: #fff; padding: 4px 8px;
       border-radius: 4px; font: 12px "DejaVu Sans Mono", Menlo, monospace; white-space: pre; }
#readout { font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; min-height: 1.3em; color: #333; }
)";

// Hover read-out: the cell's <title> text in a floating tip and in the fixed read-out line.
// Runs once; then marks <body> with the number of heatmaps it wired up.
constexpr const char* kScript = R"(
(function () {
  var errors = 0;
  window.addEventListener('error', function () {
    errors += 1;
    document.body.setAttribute('data-errors', String(errors));
  });
  var tip = document.getElementById('tip');
  var readout = document.getElementById('readout');
  var maps = document.querySelectorAll('svg.heatmap');
  function show(ev) {
    var cell = ev.target;
    if (!cell.classList || !cell.classList.contains('cell')) { tip.style.display = 'none'; return; }
    var title = cell.querySelector('title');
    var text = title ? title.textContent : cell.getAttribute('data-w');
    tip.textContent = text;
    readout.textContent = text;
    tip.style.left = (ev.clientX + 14) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
    tip.style.display = 'block';
  }
  for (var k = 0; k < maps.length; k++) {
    maps[k].addEventListener('mousemove', show);
    maps[k].addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  }
  document.body.setAttribute('data-heatmaps', String(maps.length));
})();
)";
}  // namespace

std::string render_html(std::span<const Heatmap> maps, const HtmlOptions& opt) {
    std::string o;
    o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    o += fmt::format("<title>{}</title>\n", xml_escape(opt.title));
    o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    o += fmt::format("<style>{}</style>\n</head>\n", kStyle);
    o += fmt::format("<body data-heatmaps=\"0\" data-expected=\"{}\">\n", maps.size());
    o += fmt::format("<h1>{}</h1>\n", xml_escape(opt.title));
    if (!opt.intro.empty()) o += fmt::format("<p class=\"intro\">{}</p>\n", xml_escape(opt.intro));
    o += "<p class=\"intro\">Each heatmap has one row per output token and one column per source "
         "token; a cell's "
         "colour is the attention weight the model gave that source token while it wrote that "
         "output token "
         "(light = 0, dark red = 1). Hover over a cell to read its weight.</p>\n";
    o += "<div id=\"readout\"></div>\n";
    for (const auto& [heading, text] : opt.sections)
        o += fmt::format("<h2>{}</h2>\n<pre class=\"section\">{}</pre>\n", xml_escape(heading),
                         xml_escape(text));
    for (std::size_t k = 0; k < maps.size(); ++k) {
        const Heatmap& h = maps[k];
        o += fmt::format("<section class=\"sentence\" id=\"s{}\">\n<h2>Sentence {}</h2>\n", k + 1,
                         k + 1);
        o += fmt::format("<div class=\"pair\"><span class=\"label\">source</span>{}</div>\n",
                         xml_escape(h.source_text));
        o += fmt::format("<div class=\"pair\"><span class=\"label\">translation</span>{}</div>\n",
                         xml_escape(h.target_text));
        if (!h.caption.empty())
            o += fmt::format("<div class=\"caption\">{}</div>\n", xml_escape(h.caption));
        o += "<div class=\"map\">\n";
        o += render_svg(h, {.standalone = false, .id = fmt::format("hm{}", k + 1)});
        o += "</div>\n</section>\n";
    }
    o += "<div id=\"tip\"></div>\n";
    o += fmt::format("<script>{}</script>\n</body>\n</html>\n", kScript);
    return o;
}

}  // namespace nazar::viz
