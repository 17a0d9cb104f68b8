#include "cli/docgen.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {
// Helpers in a namespace of their own: the CLI is compiled in unity batches.
namespace docgen {

// Options whose value names a file or directory (file completion). Besides these names, an
// option whose type is FILE or DIR (train's file keys, CLI11's ExistingFile) counts too.
constexpr std::string_view kPathOptions[] = {
    "--api-key-file", "--config", "--dict",    "--dump-batches", "--hyp", "--html",
    "--input",        "--model",  "--out-dir", "--output",       "-o",    "--possible",
    "--ref",          "--resume", "--save",    "--save-init",    "--svg", "--tls-cert",
    "--tls-key",      "--tsv",    "--src",     "--tgt"};
// Positional arguments that are files (`nazar average MODEL...`).
constexpr std::string_view kPathPositionals[] = {"models"};

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t");
    return std::string(s.substr(b, e - b + 1));
}

// "a, b,c" -> {"a", "b", "c"}.
std::vector<std::string> split_set(std::string_view s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        const std::size_t end = std::min(s.find(',', start), s.size());
        std::string v = trim(s.substr(start, end - start));
        if (!v.empty()) out.push_back(v);
        start = end + 1;
    }
    return out;
}

// The values of a "{a,b,c}" inside `text` (the first such set, or the last), or none.
std::vector<std::string> braced_set(std::string_view text, bool last = false) {
    const auto open = last ? text.rfind('{') : text.find('{');
    if (open == std::string_view::npos) return {};
    const auto close = text.find('}', open);
    if (close == std::string_view::npos) return {};
    return split_set(text.substr(open + 1, close - open - 1));
}

bool contains(const std::vector<std::string>& names, std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

OptionDoc describe_option(const CLI::Option& o) {
    OptionDoc d;
    for (const std::string& s : o.get_snames()) d.names.push_back("-" + s);  // as --help: -h,--help
    for (const std::string& l : o.get_lnames()) d.names.push_back("--" + l);
    d.positional = d.names.empty();
    if (d.positional) d.names.push_back(o.get_name(true));
    d.help = o.get_description();
    d.group = o.get_group();
    d.required = o.get_required();
    d.repeats = o.get_expected_max() >= CLI::detail::expected_max_vector_size;
    if (o.get_expected_max() != 0 && o.get_type_size_max() != 0) {  // not a flag
        // CLI11's type name is "TYPE" then ":<validator description>" per check, as --help
        // prints it: "TEXT:{fp32,bf16,int8}", "INT:INT in [0 - 1024]".
        const std::string type = o.get_type_name();
        const auto colon = type.find(':');
        d.value = type.substr(0, colon);
        if (colon != std::string::npos) d.choices = braced_set(type.substr(colon + 1));
        // train's choice keys list their set at the end of the description, before the
        // default (train_config.h, describe_key).
        if (d.choices.empty() && d.value == "CHOICE") d.choices = braced_set(d.help, true);
        if (d.choices.empty() && d.value == "BOOL") d.choices = {"true", "false"};
        if (d.value.empty()) d.value = "VALUE";
        d.default_value = o.get_default_str();
        d.value_optional = o.get_expected_min() == 0;
        const bool typed_path = d.value == "FILE" || d.value == "DIR" ||
                                type.find(":FILE") != std::string::npos ||
                                type.find(":DIR") != std::string::npos;
        bool named_path = false;
        for (std::string_view p :
             d.positional
                 ? std::vector<std::string_view>(std::begin(kPathPositionals),
                                                 std::end(kPathPositionals))
                 : std::vector<std::string_view>(std::begin(kPathOptions), std::end(kPathOptions)))
            named_path = named_path || contains(d.names, p);
        d.path = d.choices.empty() && (typed_path || named_path);
    }
    return d;
}

CommandDoc describe_command(const CLI::App& app, const std::string& name) {
    CommandDoc c;
    c.name = name;
    c.help = app.get_description();
    c.footer = app.get_footer();
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;  // hidden
        c.options.push_back(describe_option(*o));
    }
    // Positionals last, as --help shows them after the options' usage.
    std::stable_partition(c.options.begin(), c.options.end(),
                          [](const OptionDoc& d) { return !d.positional; });
    return c;
}

}  // namespace docgen

ProgramDoc describe_program(const CLI::App& root, const std::string& version) {
    ProgramDoc doc;
    doc.version = version;
    doc.program = docgen::describe_command(root, "");
    for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_group().empty()) continue;  // hidden (help-dump itself)
        doc.commands.push_back(docgen::describe_command(*sub, sub->get_name()));
    }
    std::sort(doc.commands.begin(), doc.commands.end(),
              [](const CommandDoc& a, const CommandDoc& b) { return a.name < b.name; });
    if (doc.commands.empty()) throw Error("help-dump: the program has no subcommands to document");
    return doc;
}

}  // namespace nazar::cli
