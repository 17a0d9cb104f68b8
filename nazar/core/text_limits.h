// Bounds for readers of untrusted structured text: a hostile file must fail with one line, not
// exhaust the stack or flood the terminal (docs/reliability.md).
//
// nlohmann::json and yaml-cpp build (and dump, compare, destroy) documents recursively in
// places, so a file of 100000 '[' can exhaust the stack. Every JSON and YAML reader calls
// check_nesting() on the raw text first: a scan without recursion that refuses nesting deeper
// than kMaxNesting with one line, before any parser runs. Messages quote at most
// kMaxEcho bytes of input (excerpt()), escaped (escape_text()).
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

// `s` as printable text, for quoting input in a message (docs/reliability.md): valid UTF-8 is
// kept; \n, \r and \t become the two characters \n, \r, \t (with keep_tab, a tab stays),
// other C0 control bytes, DEL and every byte that is not part of a valid UTF-8 sequence (RFC
// 3629: shortest form, no surrogates, nothing above U+10FFFF) become \xNN, the C1 controls
// U+0080..U+009F \u0080..\u009f. The result is valid UTF-8 that cannot move a terminal's
// cursor or end its line. nazar::Error escapes its whole message this way (keeping tabs).
std::string escape_text(std::string_view s, bool keep_tab = false);

// At most `max` bytes of `s` (cut at a UTF-8 boundary), escaped by escape_text, and "..."
// (with the full size) when cut: for quoting input in messages.
std::string excerpt(std::string_view s, std::size_t max = kMaxEcho);

}  // namespace nazar
