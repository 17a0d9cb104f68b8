// Man pages and shell completions generated from the option table that `--help` prints: the
// CLI11 App that main() builds, with every subcommand's options as its cmd_<name>.cpp declares
// them (train's from the configuration table, nazar/train/train_config.h). Nothing here lists a
// subcommand or a flag by hand, so the generated files cannot drift from `--help`: ctest checks
// that every flag `nazar <cmd> --help` prints is in the man page and in the bash completion
// (tests/e2e/test_docgen.sh). Produced at build time by the hidden `nazar help-dump` command
// (cli/cmd_help_dump.cpp) into build/man/ and build/completions/, installed by cmake/install.cmake.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace nazar::cli {

// One option or positional argument, as `--help` shows it.
struct OptionDoc {
    std::vector<std::string> names;    // "--beam", "-b"; a positional's single name ("what")
    std::string value;                 // "INT", "TEXT", "FILE"...; "" for a flag (no value)
    std::string help;                  // the description, as --help prints it
    std::string default_value;         // CLI11's captured default ("" = none shown)
    std::vector<std::string> choices;  // the enumerated values, if the option has a set
    std::string group;                 // "Options", "data options", ...
    bool positional = false;
    bool path = false;            // takes a file or directory name (file completion)
    bool required = false;        // REQUIRED in --help
    bool repeats = false;         // takes several values ("..." in --help)
    bool value_optional = false;  // the value may be left out (train's boolean keys)
};

struct CommandDoc {
    std::string name;  // "train"; "" for the program itself (global options)
    std::string help;  // the one-line description in `nazar --help`
    std::string footer;
    std::vector<OptionDoc> options;
};

struct ProgramDoc {
    std::string version;  // "0.1.0"
    CommandDoc program;   // nazar's own description and global options
    std::vector<CommandDoc> commands;
};

// The whole table of `root`, the subcommands sorted by name; hidden subcommands and options (an
// empty group, as CLI11 hides them from --help) are left out.
ProgramDoc describe_program(const CLI::App& root, const std::string& version);

// The troff source of nazar(1) (cmd = nullptr) or nazar-<cmd>(1).
std::string man_page(const ProgramDoc& doc, const CommandDoc* cmd);

// The completion scripts: bash (complete -F) and zsh (#compdef, _arguments).
std::string bash_completion(const ProgramDoc& doc);
std::string zsh_completion(const ProgramDoc& doc);

}  // namespace nazar::cli
