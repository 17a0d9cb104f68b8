// Options that several subcommands share, declared once so that they mean the same everywhere,
// and the check that an empty value is never silently taken for something else.
#pragma once

#include "nazar/core/precision.h"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace nazar::cli {

// `--threads N` after a subcommand: overrides the global `nazar --threads N` for this command;
// not given, the global one holds (0 = all cores). -1 = not given.
CLI::Option* add_threads_option(CLI::App& app, int& threads);
// Applies a subcommand's --threads if it was given (the global one is applied by main()).
void apply_threads_option(int threads);

// `--precision fp32|bf16|int8`: the precision of the model's weight products (core/gemm/packed.h).
// Not given (""): the model file's own.
CLI::Option* add_precision_option(CLI::App& app, std::string& precision);
std::optional<Precision> parse_precision_option(const std::string& precision);

// `--max-line-bytes N`: the longest input line accepted (LineReader's cap; docs/decoding.md).
CLI::Option* add_max_line_bytes_option(CLI::App& app, std::size_t& max_line_bytes);

// app.parse(argc, argv), then: an option whose value must be a number (CLI11 type INT, UINT,
// FLOAT) or a boolean and that was given an empty value ('--beam ""', '--hidden-size=') is an
// error naming the option. CLI11 would otherwise convert "" to 0 without a word, or report a
// range error that does not say the value was empty. An empty text value stays empty; for
// options whose value is optional (the boolean keys of `train`), an explicit empty value is
// refused too, since CLI11 stores the bare flag the same way. Throws CLI::ParseError.
void parse_command_line(CLI::App& app, int argc, char** argv);

}  // namespace nazar::cli
