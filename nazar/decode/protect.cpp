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
        {"long-option", R"(--[A-Za-z0-9][A-Za-z0-9_-]*(?:=[^\s"'<>,;()]*[^\s"'<>,;().:!?])?)"},
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

namespace {

// std::regex (libstdc++) matches by recursion, one frame per character a quantifier takes, and
// tries every start position: a 60 KB run of letters overflowed the stack (SIGSEGV) and a long
// line costs quadratic time. Lines up to kWholeLine bytes are matched whole; longer ones word by
// word (white-space separated), words over kLongestWord bytes skipped: no protected span is
// that long, and a span with spaces inside (a tag's attributes) is then only found on a line
// of ordinary length.
constexpr std::size_t kWholeLine = 1024, kLongestWord = 256;

struct Hit {
    std::size_t begin, end;
};

// Every match of `re` in text (at `offset` in the line); group 1 when `group`.
void match_all(const std::regex& re, bool group, std::string_view text, std::size_t offset,
               std::vector<Hit>& hits) {
    for (auto it = std::cregex_iterator(text.data(), text.data() + text.size(), re);
         it != std::cregex_iterator(); ++it) {
        const std::cmatch& m = *it;
        const int g = group && m[1].matched ? 1 : 0;
        if (m.length(g) == 0) continue;
        const auto b = offset + static_cast<std::size_t>(m.position(g));
        hits.push_back({b, b + static_cast<std::size_t>(m.length(g))});
    }
}

}  // namespace

std::vector<std::string> SpanProtector::spans(std::string_view source) const {
    std::vector<Hit> hits;
    const auto match = [&](std::string_view text, std::size_t offset) {
        for (const Rule& r : rules_) match_all(r.re, r.group, text, offset, hits);
    };
    if (source.size() <= kWholeLine) {
        match(source, 0);
    } else {
        for (std::size_t i = 0; i < source.size();) {
            const std::size_t b = source.find_first_not_of(" \t\r\n\f\v", i);
            if (b == std::string_view::npos) break;
            std::size_t e = source.find_first_of(" \t\r\n\f\v", b);
            if (e == std::string_view::npos) e = source.size();
            if (e - b <= kLongestWord) match(source.substr(b, e - b), b);
            i = e;
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
        std::string span(source.substr(h.begin, h.end - h.begin));
        if (seen.insert(span).second) out.push_back(std::move(span));
    }
    return out;
}

void SpanProtector::add_spans(std::string_view source, std::vector<std::string>& include) const {
    for (std::string& span : spans(source))
        if (std::find(include.begin(), include.end(), span) == include.end())
            include.push_back(std::move(span));
}

}  // namespace nazar
