// Reading a whole text file of lines (line_files.h).
#include "cli/line_files.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/data/reader.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

namespace nazar::cli {
namespace {

bool isatty_path(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return false;
    const bool tty = ::isatty(fd) != 0;
    ::close(fd);
    return tty;
}

}  // namespace

std::vector<std::string> read_lines(const std::string& path, std::string_view what,
                                    std::size_t max_line_bytes) {
    if (path != "-") {
        // A directory opens as an empty stream: refuse it (and say what a path is) first.
        if (const std::string why = file_problem(path, true); !why.empty())
            throw UsageError(fmt::format("{} '{}' {}", what, path, why));
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && !isatty_path(path))
            throw UsageError(fmt::format(
                "{} '{}' is a character device, not a file or a pipe (give a file, or '-')", what,
                path));
    }
    std::unique_ptr<LineReader> reader;
    try {
        reader = std::make_unique<LineReader>(path, max_line_bytes);
    } catch (const Error& e) {
        throw UsageError(fmt::format("cannot open {}: {}", what, e.what()));
    }
    std::vector<std::string> lines;
    std::string_view line;
    while (reader->next(line)) lines.emplace_back(line);
    return lines;
}

}  // namespace nazar::cli
