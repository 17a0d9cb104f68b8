// nazar — one binary, many subcommands (DESIGN.md §6). Subcommands live in cmd_<name>.cpp and
// register themselves (command.h). Exit codes: 0 ok, 1 failure, 2 usage / configuration error.
#include "cli/command.h"
#include "cli/options.h"
#include "nazar/core/check.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>

namespace nazar::cli {
std::vector<Command>& commands() {
    static std::vector<Command> c;
    return c;
}
}  // namespace nazar::cli

int main(int argc, char** argv) {
    using namespace nazar::cli;
    CLI::App app{
        "nazar — attention-based RNN sequence-to-sequence models (Bahdanau, Luong, local)"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "nazar 0.1.0");
    int threads = 0;
    app.add_option("--threads", threads, "Threads for BLAS and nazar's own loops (0 = all cores)")
        ->check(CLI::NonNegativeNumber);

    auto& cmds = commands();
    std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) {
        return std::string_view(a.name) < std::string_view(b.name);
    });
    std::vector<std::function<int()>> runs(cmds.size());
    std::vector<CLI::App*> subs;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
        CLI::App* sub = app.add_subcommand(cmds[i].name, cmds[i].help);
        cmds[i].setup(*sub, runs[i]);
        subs.push_back(sub);
    }

    try {
        parse_command_line(app, argc, argv);  // an empty number is an error (cli/options.h)
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    try {
        nazar::set_num_threads(threads);
        for (std::size_t i = 0; i < subs.size(); ++i)
            if (subs[i]->parsed()) return runs[i] ? runs[i]() : 0;
    } catch (const nazar::UsageError& e) {
        std::fprintf(stderr, "nazar: error: %s\n", e.what());
        std::fprintf(
            stderr, "---> HINT: run 'nazar %s --help' for the options\n",
            app.get_subcommands().empty() ? "" : app.get_subcommands()[0]->get_name().c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nazar: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
