// The heatmap renderers of `nazar attention` (nazar/viz/heatmap.h) for nazar.AttentionMap.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/viz/heatmap.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace nazar::py {
namespace {

using Weights = pb::array_t<float, pb::array::c_style | pb::array::forcecast>;

// One map from Python values, each checked (common.h): `what` names it in messages.
viz::Heatmap to_heatmap(const std::string& what, const pb::handle& source, const pb::handle& target,
                        const pb::handle& weights, const pb::handle& source_text,
                        const pb::handle& target_text, const pb::handle& caption) {
    const Weights w = Weights::ensure(weights);
    if (!w)
        throw pb::type_error(fmt::format("{}weights must be an array of numbers, got {}", what,
                                         Py_TYPE(weights.ptr())->tp_name));
    if (w.ndim() != 2)
        throw UsageError(fmt::format("{}weights must be 2-D (target x source), got {} dimensions",
                                     what, w.ndim()));
    viz::Heatmap h;
    h.source = text_list(source, (what + "source").c_str());
    h.target = text_list(target, (what + "target").c_str());
    h.weights = Tensor::from({w.shape(0), w.shape(1)},
                             std::span<const float>(w.data(), static_cast<std::size_t>(w.size())));
    h.source_text = text_arg(source_text, what + "source_text");
    h.target_text = text_arg(target_text, what + "target_text");
    h.caption = text_arg(caption, what + "caption");
    viz::check_heatmap(h);
    return h;
}

}  // namespace

void init_heatmaps(pb::module_& m) {
    m.def(
        "render_svg",
        [](const pb::handle& source, const pb::handle& target, const pb::handle& w,
           const pb::handle& source_text, const pb::handle& target_text, const pb::handle& caption,
           bool standalone) {
            const viz::Heatmap h =
                to_heatmap("", source, target, w, source_text, target_text, caption);
            viz::SvgOptions o;
            o.standalone = standalone;
            return viz::render_svg(h, o);
        },
        pb::arg("source"), pb::arg("target"), pb::arg("weights"), pb::arg("source_text"),
        pb::arg("target_text"), pb::arg("caption"), pb::arg("standalone"));
    m.def(
        "render_terminal",
        [](const pb::handle& source, const pb::handle& target, const pb::handle& w, bool color) {
            const pb::str none("");
            const viz::Heatmap h = to_heatmap("", source, target, w, none, none, none);
            return viz::render_terminal(h, {.color = color});
        },
        pb::arg("source"), pb::arg("target"), pb::arg("weights"), pb::arg("color"));
    m.def(
        "render_html",
        [](const pb::list& maps, const pb::handle& title) {
            std::vector<viz::Heatmap> hs;
            for (std::size_t i = 0; i < maps.size(); ++i) {
                const auto t = maps[i].cast<pb::tuple>();
                if (t.size() != 6) throw pb::type_error("maps: (source, target, weights, ...) x 6");
                hs.push_back(
                    to_heatmap(fmt::format("maps[{}].", i), t[0], t[1], t[2], t[3], t[4], t[5]));
            }
            viz::HtmlOptions ho;
            ho.title = text_arg(title, "title");
            return viz::render_html(hs, ho);
        },
        pb::arg("maps"), pb::arg("title"));
}

}  // namespace nazar::py
