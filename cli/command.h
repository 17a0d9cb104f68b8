// Subcommand registry. Each cli/cmd_<name>.cpp registers itself with NZ_REGISTER_COMMAND, so
// adding a subcommand never touches main.cpp:
//
//   static void setup_explain(CLI::App& app, std::function<int()>& run) { ... run = [..]{...}; }
//   NZ_REGISTER_COMMAND(explain, "Worked examples of docs/spec.md", setup_explain);
//
// `setup` declares options on the subcommand and sets `run`, which returns the exit code.
// Errors are thrown (nazar::Error / nazar::UsageError); main.cpp prints them.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace nazar::cli {

using CommandSetup = void (*)(CLI::App& app, std::function<int()>& run);

struct Command {
    const char* name;
    const char* help;
    CommandSetup setup;
};

std::vector<Command>& commands();

struct Registrar {
    Registrar(const char* name, const char* help, CommandSetup setup) {
        commands().push_back({name, help, setup});
    }
};

}  // namespace nazar::cli

#define NZ_REGISTER_COMMAND(name, help, setup) \
    static ::nazar::cli::Registrar nz_register_##name(#name, help, setup)
