// Protected spans (docs/decoding.md "Protected spans"): the parts of a source that must come out
// verbatim — printf / Python / ICU / .NET placeholders, command-line options, URLs, XML/HTML
// tags — found by regular expressions and turned into include constraints (constraints.h).
//
//   const SpanProtector p = SpanProtector::builtin();  // or builtin + user expressions
//   p.spans("Delete %d files? Use --force or see <b>{0}</b>")
//     -> {"%d", "--force", "<b>", "{0}", "</b>"}
//
// Each expression is ECMAScript (std::regex). When it has a capture group, group 1 is the span
// (so a context can be matched without being protected: "(?:^|\\s)(-[a-z])\\b"); else the whole
// match. Spans are reported in source order, each distinct span once; overlapping matches keep
// the earlier (then the longer) one.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

class SpanProtector {
public:
    // The built-in expressions (builtin_patterns()).
    static SpanProtector builtin();
    // Only `patterns` (with_builtin: the built-in ones first). Throws UsageError naming an
    // expression that does not compile.
    static SpanProtector from_patterns(const std::vector<std::string>& patterns, bool with_builtin);

    std::vector<std::string> spans(std::string_view source) const;
    // Appends the spans of `source` that `include` lacks (a sentence's include phrases).
    void add_spans(std::string_view source, std::vector<std::string>& include) const;
    bool empty() const { return rules_.empty(); }

    // name, expression: the built-in set.
    static const std::vector<std::pair<std::string, std::string>>& builtin_patterns();

private:
    struct Rule {
        std::string pattern;
        std::regex re;
        bool group = false;  // group 1 is the span
    };
    std::vector<Rule> rules_;
};

}  // namespace nazar
