// Bounds for readers of untrusted structured text (docs/reliability.md, issue 14 item 1).
//
// nlohmann::json and yaml-cpp build (and dump, compare, destroy) documents recursively in
// places, so a file of 100000 '[' can exhaust the stack. Every JSON and YAML reader calls
// check_nesting() on the raw text first: a scan without recursion that refuses nesting deeper
// than kMaxNesting with one line, before any parser runs. Messages quote at most
// kMaxEcho bytes of input (excerpt()).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nazar {

// Deepest nesting of [ and { accepted in JSON (nazar's own files nest at most 3 deep) and of
// flow collections plus block levels in YAML (training configurations nest 2 deep).
inline constexpr int kMaxNesting = 32;
// YAML block nesting is counted by indentation: a line whose content starts beyond this
// column (after its indentation and '- ', '? ', ': ' indicators) is refused.
inline constexpr int kMaxYamlIndent = 128;
// The most bytes of input quoted in an error message.
inline constexpr std::size_t kMaxEcho = 200;

enum class TextSyntax { json, yaml };

// Throws nazar::Error "<what>: nesting deeper than 32 levels (at byte N); ..." when `text`
// nests deeper than kMaxNesting (or, for YAML, indents beyond kMaxYamlIndent). Brackets inside
// strings (and YAML comments) do not count. Linear time, constant stack.
void check_nesting(std::string_view text, const std::string& what, TextSyntax syntax);

// At most `max` bytes of `s` (cut at a UTF-8 boundary) with control bytes as '?', and "..."
// (with the full size) when cut: for quoting input in messages.
std::string excerpt(std::string_view s, std::size_t max = kMaxEcho);

}  // namespace nazar
