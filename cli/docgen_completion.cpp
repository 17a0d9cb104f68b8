// The bash and zsh completion scripts from the option table (cli/docgen.h): subcommands, each
// command's flags, the values of an option with a set of choices (--schedule <TAB>), file names
// for the options that take a path.
#include "cli/docgen.h"

#include <fmt/format.h>

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {
// Helpers in a namespace of their own: the CLI is compiled in unity batches.
namespace docgen_completion {

// A value the scripts can offer as a word: letters, digits and . _ + : / - only. Any other
// value (none today) is left out of the completions rather than quoted badly.
bool safe_word(std::string_view w) {
    if (w.empty()) return false;
    for (const char c : w)
        if (!std::isalnum(static_cast<unsigned char>(c)) &&
            std::string_view("._+:/-").find(c) == std::string_view::npos)
            return false;
    return true;
}

std::string words(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& w : v)
        if (safe_word(w)) out += (out.empty() ? "" : " ") + w;
    return out;
}

std::string flag_names(const CommandDoc& c) {
    std::vector<std::string> names;
    for (const OptionDoc& o : c.options)
        if (!o.positional) names.insert(names.end(), o.names.begin(), o.names.end());
    return words(names);
}

std::string alternatives(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : "|") + n;
    return out;
}

// The `case "$prev"` arms of one command: what to offer after an option that takes a value.
std::string bash_value_arms(const CommandDoc& c) {
    std::string out;
    for (const OptionDoc& o : c.options) {
        if (o.positional || o.value.empty()) continue;
        const std::string pat = alternatives(o.names);
        // A value that may be left out (a bare boolean flag): a word starting with '-' is the
        // next option, not the value.
        const std::string guard = o.value_optional ? "[[ $cur == -* ]] || " : "";
        if (!o.choices.empty())
            out += fmt::format("        {}) {}{{ _nazar_words '{}'; return; }} ;;\n", pat, guard,
                               words(o.choices));
        else if (o.path)
            out += fmt::format("        {}) {}{{ _nazar_files; return; }} ;;\n", pat, guard);
        else if (!o.value_optional)
            out += fmt::format("        {}) return ;;\n", pat);  // a number or a text: no guess
    }
    return out;
}

// What a word that is not an option completes to: the first positional's set or file names.
std::string bash_positional(const CommandDoc& c) {
    for (const OptionDoc& o : c.options) {
        if (!o.positional) continue;
        if (!o.choices.empty()) return fmt::format("_nazar_words '{}'", words(o.choices));
        if (o.path) return "_nazar_files";
    }
    return "";
}

std::string bash_command(const CommandDoc& c) {
    const std::string positional = bash_positional(c);
    return fmt::format(
        "    {})\n      case $prev in\n{}      esac\n"
        "      if [[ $cur == -* || -z '{}' ]]; then _nazar_words '{}'; else {}; fi ;;\n",
        c.name, bash_value_arms(c), positional.empty() ? "" : "x", flag_names(c),
        positional.empty() ? ":" : positional);
}

// An option's description for zsh: the first sentence of its help, without the characters that
// _arguments or the single quotes around the spec would read ([ ] : \ ').
std::string zsh_text(std::string_view help) {
    std::string s(help.substr(0, help.find(". ")));
    if (s.size() > 70) s = s.substr(0, s.rfind(' ', 70)) + "...";
    std::string out;
    for (const char c : s) {
        if (c == '[' || c == '(')
            out += '(';
        else if (c == ']' || c == ')')
            out += ')';
        else if (c == ':' || c == '\\' || c == '\n')
            out += ' ';
        else if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out;
}

// The _arguments action of an option's value: its choices, files, or any text.
std::string zsh_action(const OptionDoc& o) {
    const std::string message = o.positional ? o.names.front() : o.value;
    if (!o.choices.empty()) return fmt::format("{}:({})", message, words(o.choices));
    if (o.path) return message + ":_files";
    return message + ": ";
}

std::string zsh_specs(const CommandDoc& c) {
    std::string out;
    int position = 0;
    for (const OptionDoc& o : c.options) {
        if (o.positional) {
            const std::string where = o.repeats ? "*" : std::to_string(++position);
            out += fmt::format(" \\\n    '{}:{}'", where, zsh_action(o));
            continue;
        }
        for (const std::string& n : o.names) {
            if (!safe_word(n)) continue;
            const std::string value =
                o.value.empty() ? "" : (o.value_optional ? "::" : ":") + zsh_action(o);
            out += fmt::format(" \\\n    '{}{}[{}]{}'", o.repeats ? "*" : "", n, zsh_text(o.help),
                               value);
        }
    }
    return out;
}

}  // namespace docgen_completion

std::string bash_completion(const ProgramDoc& doc) {
    std::string names, arms;
    for (const CommandDoc& c : doc.commands) {
        names += (names.empty() ? "" : " ") + c.name;
        arms += docgen_completion::bash_command(c);
    }
    return fmt::format(
        R"(# bash completion for nazar {version}
# Generated by `nazar help-dump --format bash` from the option table: do not edit.
_nazar_words() {{ COMPREPLY=($(compgen -W "$1" -- "$cur")); }}
_nazar_files() {{
    compopt -o filenames 2> /dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}}
_nazar() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev= cmd= i=1
    ((COMP_CWORD > 0)) && prev=${{COMP_WORDS[COMP_CWORD - 1]}}
    # --option=value: bash splits the word at '=' (COMP_WORDBREAKS)
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${{COMP_WORDS[COMP_CWORD - 2]}}
    fi
    # The subcommand: the first word that is neither an option nor --threads's value.
    while ((i < COMP_CWORD)); do
        case ${{COMP_WORDS[i]}} in
        --threads) ((i += 2)); continue ;;
        -*) ;;
        *) cmd=${{COMP_WORDS[i]}}; break ;;
        esac
        ((i++))
    done
    COMPREPLY=()
    case $cmd in
    '')
      case $prev in
        --threads) return ;;
      esac
      if [[ $cur == -* ]]; then _nazar_words '{global}'; else _nazar_words '{names}'; fi ;;
{arms}    esac
}}
complete -F _nazar nazar
)",
        fmt::arg("version", doc.version),
        fmt::arg("global", docgen_completion::flag_names(doc.program)), fmt::arg("names", names),
        fmt::arg("arms", arms));
}

std::string zsh_completion(const ProgramDoc& doc) {
    std::string commands, functions, arms;
    for (const CommandDoc& c : doc.commands) {
        std::string fn = "_nazar_" + c.name;
        for (char& ch : fn)
            if (ch == '-') ch = '_';
        commands += fmt::format("\n        '{}:{}'", c.name, docgen_completion::zsh_text(c.help));
        functions +=
            fmt::format("{}() {{\n    _arguments -s{}\n}}\n", fn, docgen_completion::zsh_specs(c));
        arms += fmt::format("        {}) {} ;;\n", c.name, fn);
    }
    return fmt::format(
        R"(#compdef nazar
# zsh completion for nazar {version}
# Generated by `nazar help-dump --format zsh` from the option table: do not edit.
{functions}
_nazar() {{
    local curcontext=$curcontext state line
    typeset -A opt_args
    _arguments -C{global} \
        '1:command:->command' \
        '*::argument:->argument'
    case $state in
    command)
        local -a commands
        commands=({commands}
        )
        _describe -t commands 'nazar command' commands ;;
    argument)
        case $words[1] in
{arms}        esac ;;
    esac
}}

_nazar "$@"
)",
        fmt::arg("version", doc.version), fmt::arg("functions", functions),
        fmt::arg("global", docgen_completion::zsh_specs(doc.program)),
        fmt::arg("commands", commands), fmt::arg("arms", arms));
}

}  // namespace nazar::cli
