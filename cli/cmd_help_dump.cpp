// `nazar help-dump --format man|bash|zsh`: the man pages and the shell completions, generated
// from the option table that --help prints (cli/docgen.h). Hidden from `nazar --help` (an
// internal command: the build runs it, CMakeLists.txt's nazar_docs target, and installs what it
// writes); users read `man nazar` and get the completions.
#include "cli/command.h"
#include "cli/docgen.h"
#include "cli/output.h"
#include "cli/version.h"
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

namespace nazar::cli {
// Helpers in a namespace of their own: the CLI is compiled in unity batches.
namespace help_dump {

struct HelpDumpArgs {
    std::string format, out_dir, output = "-";
};

// nazar.1 and nazar-<command>.1 into `dir` (created if missing); returns how many.
std::size_t write_man_pages(const ProgramDoc& doc, const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("help-dump: cannot create {}: {}", dir, ec.message()));
    atomic_write_file(dir + "/nazar.1", man_page(doc, nullptr));
    for (const CommandDoc& c : doc.commands)
        atomic_write_file(fmt::format("{}/nazar-{}.1", dir, c.name), man_page(doc, &c));
    return doc.commands.size() + 1;
}

int run_help_dump(const CLI::App& app, const HelpDumpArgs& a) {
    const CLI::App* root = app.get_parent();
    NZ_CHECK(root != nullptr, "help-dump must be a subcommand");
    const ProgramDoc doc = describe_program(*root, version_number());
    if (a.format == "man") {
        if (a.out_dir.empty())
            throw UsageError("help-dump: --format man writes one file per page: give --out-dir");
        const std::size_t n = write_man_pages(doc, a.out_dir);
        fmt::print(stderr, "help-dump: {} man pages in {}\n", n, a.out_dir);
        return 0;
    }
    if (!a.out_dir.empty())
        throw UsageError(
            fmt::format("help-dump: --out-dir is for --format man; --format {} "
                        "writes one file: use --output",
                        a.format));
    OutputSink out(a.output);
    out.write(a.format == "bash" ? bash_completion(doc) : zsh_completion(doc));
    out.close();
    return 0;
}

void setup_help_dump(CLI::App& app, std::function<int()>& run) {
    app.group("");  // hidden: not in `nazar --help`, nor in the pages it writes
    auto a = std::make_shared<HelpDumpArgs>();
    app.add_option("--format", a->format,
                   "man (nazar.1 and nazar-<command>.1), bash or zsh (the completion script)")
        ->required()
        ->check(CLI::IsMember({"man", "bash", "zsh"}));
    app.add_option("--out-dir", a->out_dir, "man: the directory the pages are written to");
    app.add_option("--output,-o", a->output, "bash, zsh: the file to write ('-' = stdout)")
        ->capture_default_str();
    run = [&app, a] { return run_help_dump(app, *a); };
}

}  // namespace help_dump

// Not NZ_REGISTER_COMMAND: the command's name has a hyphen.
static Registrar nz_register_help_dump("help-dump", "Write the man pages or a completion script",
                                       help_dump::setup_help_dump);

}  // namespace nazar::cli
