// nazar — one binary, many subcommands (docs/design.md §6). Subcommands live in cmd_<name>.cpp and
// register themselves (command.h). Exit codes: 0 ok, 1 failure, 2 usage / configuration error.
//
// Every error is one line on stderr, "nazar: error: <message>", with the hint (if any) on the
// same line: a misspelled subcommand or flag gets the closest name as a suggestion. Source
// locations of library checks are printed only with NAZAR_ERROR_LOCATION=1 in the environment.
#include "cli/command.h"
#include "cli/options.h"
#include "cli/version.h"
#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/train/train_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace nazar::cli {
std::vector<Command>& commands() {
    static std::vector<Command> c;
    return c;
}
}  // namespace nazar::cli

namespace {

// The candidate closest to `word` by edit distance, or "" when none is close enough.
std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::string::npos;
    for (const auto& c : candidates) {
        const std::size_t d = nazar::edit_distance(word, c);
        if (d < best_d) best_d = d, best = c;
    }
    const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
    return best_d <= limit ? best : std::string();
}

// One line, and a bounded one: a message that quotes an argument or a path is cut after
// kMaxErrorBytes (at a UTF-8 boundary), so a 50 KB argument is not echoed back whole.
constexpr std::size_t kMaxErrorBytes = 1000;

void print_error(const std::string& message) {
    std::string line = nazar::detail::one_line(message);
    if (line.size() > kMaxErrorBytes) {
        std::size_t cut = kMaxErrorBytes;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
        line = line.substr(0, cut) + "... (" + std::to_string(line.size() - cut) + " bytes cut)";
    }
    std::fprintf(stderr, "nazar: error: %s\n", line.c_str());
}

// The safety net under every command's results: what went to standard output through stdio
// (bench, demo, explain, --help-like listings) must have arrived, or the run fails (exit 1), so
// `nazar bench ... > /dev/full` or a closed stdout never exits 0 with the results lost. The
// commands that write results through cli/output.h check each write themselves.
int check_stdout() {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = flushed ? 0 : errno;
    if (flushed && !std::ferror(stdout)) return 0;
    std::fprintf(stderr, "nazar: error: cannot write standard output: %s (results lost)\n",
                 err ? std::strerror(err) : "a write failed");
    return 1;
}

std::string with_location(const nazar::Error& e) {
    const char* env = std::getenv("NAZAR_ERROR_LOCATION");
    if (!env || !*env || std::string_view(env) == "0" || e.where().empty()) return e.what();
    return fmt::format("{} [{}]", e.what(), e.where());
}

// The long option names of `app` ("--beam"), for suggestions.
std::vector<std::string> long_names(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::Option* o : app.get_options())
        for (const auto& n : o->get_lnames()) out.push_back("--" + n);
    return out;
}

// CLI11's own parse errors, rewritten as one line: unknown arguments in the order given, with
// a suggestion; the hint to --help on the same line.
std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app,
                                const CLI::App* sub) {
    const CLI::App& where = sub ? *sub : app;
    const std::string help =
        sub ? fmt::format("run 'nazar {} --help' for the options", sub->get_name())
            : std::string("run 'nazar --help' for the commands");
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
        std::vector<std::string> extras = where.remaining();
        if (extras.empty()) extras = app.remaining();
        for (const std::string& arg : extras) {
            if (arg.rfind("-", 0) == 0 && arg.size() > 1) {
                const std::string flag = arg.substr(0, arg.find('='));
                const std::string s = closest(flag, long_names(where));
                return fmt::format(
                    "unknown option {}{}; {}", flag,
                    s.empty() ? std::string() : fmt::format(" (did you mean {}?)", s), help);
            }
        }
        if (!extras.empty())
            return fmt::format("unexpected argument '{}'; {}", extras.front(), help);
    }
    std::string msg = e.what();
    std::replace_if(
        msg.begin(), msg.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return fmt::format("{}; {}", msg, help);
}

// Runs the parsed subcommand and turns what it throws into one error line and an exit code:
// 2 for a usage error, 1 for any other failure (lost output included), 0 when all went well.
int run_parsed(const std::vector<CLI::App*>& subs, const std::vector<std::function<int()>>& runs,
               int threads) {
    try {
        nazar::set_num_threads(threads);
        for (std::size_t i = 0; i < subs.size(); ++i)
            if (subs[i]->parsed()) {
                const int rc = runs[i] ? runs[i]() : 0;
                return rc == 0 ? check_stdout() : rc;
            }
    } catch (const nazar::UsageError& e) {
        print_error(with_location(e));
        return 2;
    } catch (const nazar::Error& e) {
        print_error(with_location(e));
        return 1;
    } catch (const std::system_error& e) {
        // fmt::print throws this when stdout's write fails (a full disk, a closed descriptor).
        if (std::ferror(stdout)) {
            print_error(
                fmt::format("cannot write standard output: {} (results lost)", e.code().message()));
        } else {
            print_error(e.what());
        }
        return 1;
    } catch (const std::exception& e) {
        print_error(e.what());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace nazar::cli;
    CLI::App app{
        "nazar — attention-based RNN sequence-to-sequence models (Bahdanau, Luong, local)"};
    app.require_subcommand(1);
    // Lazy: the CPU detection and the GEMM paths run only when --version is asked for.
    app.set_version_flag("--version", std::function<std::string()>(version_text),
                         "Print the version, the git commit, the GEMM back-ends and the CPU "
                         "features detected, and exit");
    int threads = 0;
    app.add_option("--threads", threads,
                   fmt::format("Threads for BLAS and nazar's own loops (0 = all cores, at most {})",
                               nazar::kMaxThreads))
        ->check(CLI::Range(0, nazar::kMaxThreads));

    auto& cmds = commands();
    std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) {
        return std::string_view(a.name) < std::string_view(b.name);
    });
    std::vector<std::function<int()>> runs(cmds.size());
    std::vector<CLI::App*> subs;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
        CLI::App* sub = app.add_subcommand(cmds[i].name, cmds[i].help);
        cmds[i].setup(*sub, runs[i]);
        subs.push_back(sub);
        names.emplace_back(cmds[i].name);
    }

    // The first word that is not a global option must be a subcommand: a misspelled one gets
    // a suggestion (CLI11 would say only "A subcommand is required").
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--threads") {
            ++i;
            continue;
        }
        if (arg.rfind("-", 0) == 0) continue;  // --threads=N, --help, --version, unknown flags
        if (std::find(names.begin(), names.end(), arg) == names.end()) {
            const std::string s = closest(arg, names);
            print_error(
                fmt::format("unknown command '{}'{}; run 'nazar --help' for the commands", arg,
                            s.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", s)));
            return 2;
        }
        break;
    }

    try {
        parse_command_line(app, argc, argv);  // an empty number is an error (cli/options.h)
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const CLI::App* sub = nullptr;
        for (const CLI::App* s : subs)
            if (s->parsed()) sub = s;
        print_error(parse_error_message(e, app, sub));
        return 2;
    }
    return run_parsed(subs, runs, threads);
}
