// nazar(1) and nazar-<command>(1) in troff (man macros) from the option table (cli/docgen.h).
#include "cli/docgen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {
// Helpers in a namespace of their own: the CLI is compiled in unity batches.
namespace docgen_man {

// The code point of the UTF-8 sequence at s[i] (advancing i past it); a malformed byte is
// taken as U+FFFD.
std::uint32_t next_code_point(std::string_view s, std::size_t& i) {
    const auto b = static_cast<unsigned char>(s[i++]);
    const int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
    if (extra < 0) return 0xFFFD;
    std::uint32_t cp = b & (0x3F >> extra);
    for (int k = 0; k < extra; ++k) {
        if (i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return 0xFFFD;
        cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
    }
    return cp;
}

// Text as troff prints it literally: backslashes and hyphens escaped (so that flags read and
// copy as ASCII), anything outside ASCII as a \[uXXXX] escape (so the page needs no input
// encoding), a control character at the start of a line neutralised.
std::string roff(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) >= 0x80) {
            out += fmt::format("\\[u{:04X}]", next_code_point(text, i));
            line_start = false;
            continue;
        }
        ++i;
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else if (c == '\t')
            out += ' ';
        else
            out += c;
        line_start = c == '\n';
    }
    return out;
}

// A paragraph of running text: its lines kept, an empty line as a paragraph break.
std::string roff_paragraphs(std::string_view text) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        out += line.find_first_not_of(' ') == std::string_view::npos ? ".PP" : roff(line);
        out += '\n';
        start = end + 1;
    }
    return out;
}

std::string bold(std::string_view s) {
    return "\\fB" + roff(s) + "\\fR";
}
std::string italic(std::string_view s) {
    return "\\fI" + roff(s) + "\\fR";
}

// The tag of an option's entry: "--beam INT", "-o, --output FILE", "--precision {fp32|bf16}".
std::string option_tag(const OptionDoc& o) {
    if (o.positional) return italic(o.names.front()) + (o.repeats ? " ..." : "");
    std::string tag;
    for (const std::string& n : o.names) tag += (tag.empty() ? "" : ", ") + bold(n);
    if (o.value.empty()) return tag;
    std::string value;
    if (!o.choices.empty()) {
        for (const std::string& c : o.choices) value += (value.empty() ? "" : "|") + bold(c);
        value = "{" + value + "}";
    } else {
        value = italic(o.value);
    }
    tag += " " + (o.value_optional ? "[" + value + "]" : value);
    return tag + (o.repeats ? " ..." : "");
}

std::string option_entry(const OptionDoc& o) {
    std::string body = o.help;
    if (!o.default_value.empty()) body += fmt::format(" (default: {})", o.default_value);
    if ((o.required || (o.repeats && !o.positional)) && !body.empty() && body.back() != '.')
        body += '.';
    if (o.required) body += " Required.";
    if (o.repeats && !o.positional) body += " May be given more than once.";
    return ".TP\n" + option_tag(o) + "\n" + roff_paragraphs(body);
}

// OPTIONS (and ARGUMENTS): one subsection per group when there are several, in --help's order.
std::string options_sections(const CommandDoc& c) {
    std::string out, args;
    std::vector<std::string> groups;
    for (const OptionDoc& o : c.options) {
        if (o.positional)
            args += option_entry(o);
        else if (std::find(groups.begin(), groups.end(), o.group) == groups.end())
            groups.push_back(o.group);
    }
    if (!args.empty()) out += ".SH ARGUMENTS\n" + args;
    out += ".SH OPTIONS\n";
    for (const std::string& g : groups) {
        if (groups.size() > 1) out += ".SS \"" + roff(g) + "\"\n";
        for (const OptionDoc& o : c.options)
            if (!o.positional && o.group == g) out += option_entry(o);
    }
    return out;
}

std::string header(const ProgramDoc& doc, std::string_view page, std::string_view what) {
    // nazar's own description starts with its name ("nazar — ..."): NAME says it already.
    const std::string dash = std::string(page) + " \u2014 ";
    if (what.rfind(dash, 0) == 0) what.remove_prefix(dash.size());
    std::string upper(page);
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return fmt::format(
        ".\\\" Generated by `nazar help-dump --format man` from the option table: do not edit.\n"
        ".TH \"{}\" 1 \"\" \"nazar {}\" \"User Commands\"\n.nh\n.ad l\n.SH NAME\n{} \\- {}\n",
        roff(upper), doc.version, roff(page), roff(what));
}

constexpr const char* kExitStatus =
    ".SH \"EXIT STATUS\"\n0 on success, 1 on a failure, 2 on a usage or configuration error; "
    "errors are one line on standard error naming the file, line or value.\n";

std::string program_page(const ProgramDoc& doc) {
    std::string out = header(doc, "nazar", doc.program.help);
    out +=
        ".SH SYNOPSIS\n.B nazar\n[\\fB\\-\\-threads\\fR \\fIN\\fR] \\fICOMMAND\\fR "
        "[\\fIOPTIONS\\fR]\n.br\n.B nazar \\-\\-version\n";
    out += ".SH DESCRIPTION\n" + roff_paragraphs(doc.program.help) +
           ".PP\nEach command has its own page, nazar\\-\\fICOMMAND\\fR(1), and its own "
           "\\fB\\-\\-help\\fR.\n.SH COMMANDS\n";
    for (const CommandDoc& c : doc.commands)
        out += fmt::format(".TP\n{}\n{}{} See \\fBnazar\\-{}\\fR(1).\n", bold(c.name), roff(c.help),
                           !c.help.empty() && c.help.back() == '.' ? "" : ".", roff(c.name));
    out += options_sections(doc.program) + kExitStatus + ".SH \"SEE ALSO\"\n";
    for (std::size_t i = 0; i < doc.commands.size(); ++i)
        out += fmt::format("\\fBnazar\\-{}\\fR(1){}\n", roff(doc.commands[i].name),
                           i + 1 < doc.commands.size() ? "," : "");
    return out;
}

std::string command_page(const ProgramDoc& doc, const CommandDoc& c) {
    std::string out = header(doc, "nazar-" + c.name, c.help);
    out += ".SH SYNOPSIS\n.B nazar\n[\\fB\\-\\-threads\\fR \\fIN\\fR] \\fB" + roff(c.name) +
           "\\fR [\\fIOPTIONS\\fR]";
    for (const OptionDoc& o : c.options)
        if (o.positional) out += " " + option_tag(o);
    out += "\n.SH DESCRIPTION\n" + roff_paragraphs(c.help);
    if (!c.footer.empty()) out += ".PP\n" + roff_paragraphs(c.footer);
    out += options_sections(c) + kExitStatus + ".SH \"SEE ALSO\"\n\\fBnazar\\fR(1)\n";
    return out;
}

}  // namespace docgen_man

std::string man_page(const ProgramDoc& doc, const CommandDoc* cmd) {
    return cmd ? docgen_man::command_page(doc, *cmd) : docgen_man::program_page(doc);
}

}  // namespace nazar::cli
