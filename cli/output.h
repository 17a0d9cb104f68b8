// Where a command's results go: standard output or a file (--output). Every command that prints
// results (translate, score, align, eval, attention) writes them through one OutputSink, so
// that no result is ever lost silently, even on a full disk or a closed pipe
// (docs/reliability.md):
//   - every write is checked, retried on EINTR / short writes / EAGAIN, and a failure (a full
//     disk, a closed descriptor, EFBIG, EIO) throws nazar::Error naming the file, or "standard
//     output", and the number of bytes written before it; main() prints it and exits 1;
//   - close() checks the close (on NFS a write error may surface only there) and, for stdout,
//     closes a duplicate of the descriptor, which reports such delayed errors while keeping it;
//   - an output that is the same file (device and inode) as one of the command's inputs is
//     refused before the output is opened or truncated (refuse_same_file).
// Writes are unbuffered: callers pass whole chunks (a batch of lines), so a failure is reported
// at once and the byte count is exact.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::cli {

// Throws UsageError when `output` ("-" = standard output) is the same existing regular file as
// one of `inputs` ("-" = standard input; empty paths are ignored).
void refuse_same_file(const std::string& output, const std::vector<std::string>& inputs);

class OutputSink {
public:
    // path "-" = standard output (an empty path is not: it cannot be opened). Checks
    // refuse_same_file(path, inputs) first, then opens (creates or truncates) the file.
    explicit OutputSink(const std::string& path, const std::vector<std::string>& inputs = {});
    ~OutputSink();  // closes without reporting (after an error); call close() on success
    OutputSink(const OutputSink&) = delete;
    OutputSink& operator=(const OutputSink&) = delete;

    void write(std::string_view bytes);
    void close();  // final check; further writes are an error
    int64_t bytes_written() const { return written_; }
    const std::string& name() const { return name_; }  // the path, or "standard output"
    bool is_stdout() const { return stdout_; }

private:
    [[noreturn]] void fail(const char* what, int err) const;

    std::string name_;
    int fd_ = -1;
    bool stdout_ = false;
    int64_t written_ = 0;
};

}  // namespace nazar::cli
