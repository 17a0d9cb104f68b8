// The run directory before training (run_dir.h).
#include "nazar/train/run_dir.h"

#include "nazar/core/check.h"
#include "nazar/train/average.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace nazar {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunFiles[] = {"model.safetensors", "best.safetensors", "last.safetensors",
                                     "averaged.safetensors"};
constexpr std::string_view kProbePrefix = ".nazar-write-check.";

// `s` is `prefix` followed by exactly six mkstemp characters.
bool mkstemp_name(std::string_view s, std::string_view prefix) {
    if (s.size() != prefix.size() + 6 || s.substr(0, prefix.size()) != prefix) return false;
    return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(prefix.size()), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    });
}

std::string errno_text(int err) {
    return std::strerror(err);
}

// Writes one byte to `fd`, syncs and closes it; the errno of the first failure, or 0.
int write_probe(int fd) {
    const char byte = 0;
    int err = 0;
    if (::write(fd, &byte, 1) != 1) err = errno ? errno : EIO;
    if (!err && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && !err) err = errno;
    return err;
}

void check_writable(const std::string& dir) {
    // An unnamed file: nothing to remove, nothing left behind by a kill.
    int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (const int err = write_probe(fd))
            throw Error(fmt::format("save_dir '{}' is not writable: writing a test file failed: {}",
                                    dir, errno_text(err)));
        return;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        throw Error(fmt::format("save_dir '{}' is not writable: cannot create a file there: {}",
                                dir, errno_text(errno)));
    // File systems without O_TMPFILE: a named probe, removed at once (and by step 4 if killed).
    std::string name = (fs::path(dir) / kProbePrefix).string() + "XXXXXX";
    fd = ::mkstemp(name.data());
    if (fd < 0)
        throw Error(fmt::format("save_dir '{}' is not writable: cannot create a file there: {}",
                                dir, errno_text(errno)));
    const int err = write_probe(fd);
    ::unlink(name.c_str());
    if (err)
        throw Error(fmt::format("save_dir '{}' is not writable: writing a test file failed: {}",
                                dir, errno_text(err)));
}

// checkpoint-<step> (keep_checkpoints) or best-<step> (average_best).safetensors
bool step_run_file(std::string_view name) {
    return periodic_checkpoint_step(name) >= 0 || ranked_checkpoint_step(name) >= 0;
}

}  // namespace

bool is_stale_temporary(std::string_view name) {
    for (const char* f : kRunFiles)
        if (mkstemp_name(name, std::string(f) + ".tmp.")) return true;
    if (const std::size_t tmp = name.rfind(".tmp."); tmp != std::string_view::npos &&
                                                     step_run_file(name.substr(0, tmp)) &&
                                                     mkstemp_name(name, name.substr(0, tmp + 5)))
        return true;
    return mkstemp_name(name, kProbePrefix);
}

RunDirReport prepare_run_dir(const std::string& dir, const RunDirOptions& options) {
    NZ_CHECK_USAGE(!dir.empty(), "prepare_run_dir: empty directory name");
    RunDirReport report;
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (fs::exists(status) && !fs::is_directory(status))
        throw UsageError(fmt::format("save_dir '{}' exists and is not a directory", dir));
    std::vector<std::string> ours, others;  // run files and anything else (not temporaries)
    std::vector<std::string> temporaries;
    if (fs::is_directory(status)) {
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (is_stale_temporary(name))
                temporaries.push_back(name);
            else if (std::find_if(std::begin(kRunFiles), std::end(kRunFiles),
                                  [&](const char* f) { return name == f; }) !=
                         std::end(kRunFiles) ||
                     step_run_file(name))
                ours.push_back(name);
            else
                others.push_back(name);
        }
        if (ec) throw Error(fmt::format("cannot list save_dir '{}': {}", dir, ec.message()));
    }
    std::sort(ours.begin(), ours.end());
    std::sort(others.begin(), others.end());
    std::sort(temporaries.begin(), temporaries.end());
    if (!options.resume && !options.overwrite && (!ours.empty() || !others.empty())) {
        std::vector<std::string> shown = ours;
        shown.insert(shown.end(), others.begin(), others.end());
        std::string list;
        for (std::size_t i = 0; i < std::min<std::size_t>(3, shown.size()); ++i)
            list += (i ? ", " : "") + shown[i];
        if (shown.size() > 3) list += fmt::format(" and {} more", shown.size() - 3);
        throw UsageError(fmt::format(
            "save_dir '{}' is not empty ({}): continue that run with --resume {}, replace it with "
            "--overwrite, or choose another --save-dir",
            dir, list, dir));
    }
    auto remove = [&](const std::string& name) {
        const fs::path p = fs::path(dir) / name;
        if (fs::remove(p, ec))
            report.removed.push_back(name);
        else if (ec)
            throw Error(fmt::format("cannot remove '{}': {}", p.string(), ec.message()));
    };
    if (options.overwrite)
        for (const auto& name : ours) remove(name);
    for (const auto& name : temporaries) remove(name);
    std::sort(report.removed.begin(), report.removed.end());
    fs::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("cannot create save_dir '{}': {}", dir, ec.message()));
    check_writable(dir);
    return report;
}

}  // namespace nazar
