// Protected spans by regular expression (protect.h).
#include "nazar/decode/protect.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace nazar {

const std::vector<std::pair<std::string, std::string>>& SpanProtector::builtin_patterns() {
    static const std::vector<std::pair<std::string, std::string>> list = {
        // printf / Objective-C: %s %d %5.2f %-10s %1$s %lld %@ %% (not the space flag: "100% sure"
        // is prose); Qt's %1 %2
        {"printf",
         R"(%(?:\d+\$)?[-+0#']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn@%])"},
        {"qt", R"(%\d+)"},
        // Python %-format with a name: %(count)d
        {"python-percent",
         R"(%\([A-Za-z_][A-Za-z0-9_]*\)[-+ 0#]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%])"},
        // Python str.format / ICU / .NET / i18next: {0} {name} {0:N2} {count, number} {{name}}
        {"braces", R"(\{\{[A-Za-z0-9_.]+\}\}|\{[A-Za-z0-9_.]*(?:[:,][^{}]*)?\})"},
        // shell / template variables: ${name} $name
        {"variable", R"(\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\$[A-Za-z_][A-Za-z0-9_]*)"},
        // command-line options: --long, --long=value, -x (after a space, a bracket or the start)
        {"long-option", R"(--[A-Za-z0-9][A-Za-z0-9_-]*(?:=[^\s"'<>]*)?)"},
        {"short-option", R"((?:^|[\s(\[])(-[A-Za-z])(?=$|[\s,.;:)\]]))"},
        // URLs and e-mail addresses
        {"url", R"((?:https?|ftp)://[^\s<>"']+[^\s<>"'.,;:!?)\]])"},
        {"email", R"([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"},
        // XML / HTML tags and entities: <b> </b> <br/> <a href="x"> &amp; &#160;
        {"tag", R"(</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]*)?/?>)"},
        {"entity", R"(&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);)"},
    };
    return list;
}

SpanProtector SpanProtector::builtin() {
    return from_patterns({}, true);
}

SpanProtector SpanProtector::from_patterns(const std::vector<std::string>& patterns,
                                           bool with_builtin) {
    SpanProtector p;
    std::vector<std::string> all;
    if (with_builtin)
        for (const auto& [name, re] : builtin_patterns()) all.push_back(re);
    all.insert(all.end(), patterns.begin(), patterns.end());
    for (const std::string& pattern : all) {
        if (pattern.empty()) throw UsageError("a protect expression is empty");
        Rule r;
        r.pattern = pattern;
        try {
            r.re = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
        } catch (const std::regex_error& e) {
            throw UsageError(fmt::format("protect expression '{}' does not compile: {}",
                                         excerpt(pattern), e.what()));
        }
        r.group = r.re.mark_count() >= 1;
        p.rules_.push_back(std::move(r));
    }
    return p;
}

std::vector<std::string> SpanProtector::spans(std::string_view source) const {
    struct Hit {
        std::size_t begin, end;
    };
    std::vector<Hit> hits;
    const std::string text(source);
    for (const Rule& r : rules_) {
        for (auto it = std::sregex_iterator(text.begin(), text.end(), r.re);
             it != std::sregex_iterator(); ++it) {
            const std::smatch& m = *it;
            const int g = r.group && m[1].matched ? 1 : 0;
            if (m.length(g) == 0) continue;
            const auto b = static_cast<std::size_t>(m.position(g));
            hits.push_back({b, b + static_cast<std::size_t>(m.length(g))});
        }
    }
    // Source order; at one position the longer first; a span overlapping a kept one is dropped.
    std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    std::vector<std::string> out;
    std::set<std::string> seen;
    std::size_t covered = 0;
    for (const Hit& h : hits) {
        if (h.begin < covered) continue;
        covered = h.end;
        std::string span = text.substr(h.begin, h.end - h.begin);
        if (seen.insert(span).second) out.push_back(std::move(span));
    }
    return out;
}

}  // namespace nazar
