#include "cli/options.h"

#include "nazar/core/threads.h"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
    threads = -1;
    return app
        .add_option("--threads", threads,
                    "Threads for BLAS and nazar's loops (overrides the global --threads, which "
                    "holds when this is not given; 0 = all cores)")
        ->check(CLI::Range(0, 1024));
}

void apply_threads_option(int threads) {
    if (threads >= 0) set_num_threads(threads);
}

CLI::Option* add_precision_option(CLI::App& app, std::string& precision) {
    return app
        .add_option("--precision", precision,
                    "Precision of the weight products: fp32, bf16 or int8 (default: the model "
                    "file's own; docs/performance.md)")
        ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
}

std::optional<Precision> parse_precision_option(const std::string& precision) {
    if (precision.empty()) return std::nullopt;
    return parse_precision(precision);
}

CLI::Option* add_max_line_bytes_option(CLI::App& app, std::size_t& max_line_bytes) {
    return app
        .add_option("--max-line-bytes", max_line_bytes,
                    "Longest input line accepted, in bytes (a longer line is an error naming it)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
        ->capture_default_str();
}

namespace {

// What a value of this option must be, or nullptr when any text (the empty one included) is.
const char* expected_kind(const CLI::Option& o) {
    const std::string type = o.get_type_name();
    auto starts = [&](std::string_view p) { return type.rfind(p, 0) == 0; };
    if (starts("INT") || starts("UINT")) return "an integer";
    if (starts("FLOAT")) return "a number";
    if (starts("BOOL")) return "true or false";
    return nullptr;
}

// Whether argv gives `o` an explicit empty value: '--name ""' or '--name='. Only consulted for
// options whose value is optional, where CLI11 stores the bare flag as "" too.
bool explicit_empty(const CLI::Option& o, int argc, char** argv) {
    std::vector<std::string> names;
    for (const std::string& l : o.get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o.get_snames()) names.push_back("-" + s);
    for (int i = 1; i < argc; ++i)
        for (const std::string& n : names) {
            if (argv[i] == n + "=") return true;
            if (argv[i] == n && i + 1 < argc && argv[i + 1][0] == '\0') return true;
        }
    return false;
}

void check_empty_values(const CLI::App& app, int argc, char** argv) {
    std::vector<const CLI::App*> apps{&app};
    for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
    for (const CLI::App* a : apps)
        for (const CLI::Option* o : a->get_options()) {
            if (o->count() == 0 || o->get_type_size_max() == 0) continue;  // absent, or a flag
            const char* kind = expected_kind(*o);
            if (!kind) continue;
            bool empty = false;
            for (const std::string& r : o->results()) empty = empty || r.empty();
            if (empty && o->get_expected_min() == 0) empty = explicit_empty(*o, argc, argv);
            if (empty)
                throw CLI::ValidationError(o->get_name(),
                                           std::string("empty value (expected ") + kind + ")");
        }
}

}  // namespace

void parse_command_line(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ValidationError&) {  // e.g. a range check that met ""
        check_empty_values(app, argc, argv);
        throw;
    } catch (const CLI::ConversionError&) {
        check_empty_values(app, argc, argv);
        throw;
    }
    check_empty_values(app, argc, argv);
}

}  // namespace nazar::cli
