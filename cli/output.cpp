#include "cli/output.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nazar::cli {

namespace {

// stat of a path, or of standard input / output for "-"; false when it cannot be examined.
bool identity(const std::string& path, int std_fd, struct stat& st) {
    if (path == "-") {
        // A standard descriptor that was closed may have been reused by a file this process
        // opened (for reading): that is not the user's standard input or output.
        const int flags = ::fcntl(std_fd, F_GETFL);
        if (flags < 0) return false;
        const int mode = flags & O_ACCMODE;
        if (mode != O_RDWR && mode != (std_fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)) return false;
        return ::fstat(std_fd, &st) == 0;
    }
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

void refuse_same_file(const std::string& output, const std::vector<std::string>& inputs) {
    const std::string& out = output;
    struct stat o {};
    // Only regular files: a terminal or /dev/null may well be both input and output.
    if (!identity(out, STDOUT_FILENO, o) || !S_ISREG(o.st_mode)) return;
    for (const std::string& in : inputs) {
        if (in.empty()) continue;
        struct stat i {};
        if (!identity(in, STDIN_FILENO, i)) continue;
        if (i.st_dev == o.st_dev && i.st_ino == o.st_ino)
            throw UsageError(fmt::format(
                "the output {} is the same file as the input {}: it would be overwritten while "
                "it is read (write to another file)",
                out == "-" ? std::string("(standard output)") : "'" + out + "'",
                in == "-" ? std::string("(standard input)") : "'" + in + "'"));
    }
}

OutputSink::OutputSink(const std::string& path, const std::vector<std::string>& inputs) {
    refuse_same_file(path, inputs);
    if (path == "-") {
        name_ = "standard output";
        stdout_ = true;
        fd_ = STDOUT_FILENO;
        // A closed descriptor 1 (or one reused by a file opened for reading) is found now, not
        // after the work is done.
        const int flags = ::fcntl(fd_, F_GETFL);
        if (flags < 0) fail("cannot write", errno);
        if ((flags & O_ACCMODE) == O_RDONLY) fail("cannot write", EBADF);
        std::fflush(stdout);  // keep anything printed through stdio before the results
    } else {
        name_ = "'" + path + "'";
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd_ < 0) fail("cannot open", errno);
    }
}

OutputSink::~OutputSink() {
    if (fd_ >= 0 && !stdout_) ::close(fd_);
}

void OutputSink::fail(const char* what, int err) const {
    throw Error(
        fmt::format("{} {}: {} ({} bytes written)", what, name_, std::strerror(err), written_));
}

void OutputSink::write(std::string_view bytes) {
    if (fd_ < 0) fail("cannot write", EBADF);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            written_ += n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout
            pollfd p{fd_, POLLOUT, 0};
            ::poll(&p, 1, -1);
            continue;
        }
        fail("cannot write", n == 0 ? EIO : errno);
    }
}

void OutputSink::close() {
    if (fd_ < 0) return;
    const int fd = stdout_ ? ::dup(fd_) : fd_;
    fd_ = -1;
    if (fd < 0) fail("cannot close", errno);
    if (::close(fd) != 0 && errno != EINTR) fail("cannot close", errno);
}

}  // namespace nazar::cli
