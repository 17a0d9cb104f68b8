#include "nazar/core/fileio.h"

#include "nazar/core/check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nazar {

namespace {

std::string errno_str(int err) {
    return std::strerror(err);
}

// Directory part of `path` ("." when there is none), for the temp file and the dir fsync.
std::string dir_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// Closes a descriptor and removes the temp file unless released: every early exit (throw)
// leaves no temp behind.
struct TempFile {
    std::string name;
    int fd = -1;
    bool keep = false;
    ~TempFile() {
        if (fd >= 0) ::close(fd);
        if (!keep && !name.empty()) ::unlink(name.c_str());
    }
};

}  // namespace

namespace {

// Where atomic_write_file puts the bytes: `path`, or the file a symbolic link at `path` names
// (the link stays a link; a dangling link's target is created). Anything there that is not a
// regular file is refused: renaming over it would replace a device, a FIFO or a socket with a
// regular file (`--svg /dev/null` run as root would delete the system's /dev/null), and
// writing into it is not atomic and may block.
std::string write_target(const std::string& path) {
    std::string target = path;
    for (int hops = 0;; ++hops) {
        struct stat st {};
        if (::lstat(target.c_str(), &st) != 0) {
            const int err = errno;
            if (err == ENOENT) return target;  // a new file
            throw Error(fmt::format("cannot write '{}': {}", path, errno_str(err)));
        }
        if (S_ISREG(st.st_mode)) return target;
        if (!S_ISLNK(st.st_mode)) {
            const std::string why = file_problem(target, false);
            throw Error(fmt::format("cannot write '{}': it {}", path,
                                    why.empty() ? "is not a regular file" : why));
        }
        if (hops >= 40)
            throw Error(fmt::format("cannot write '{}': too many levels of symbolic links", path));
        std::string link(4096, '\0');
        const ssize_t n = ::readlink(target.c_str(), link.data(), link.size());
        if (n < 0) {
            const int err = errno;
            throw Error(fmt::format("cannot write '{}': {}", path, errno_str(err)));
        }
        link.resize(static_cast<std::size_t>(n));
        target =
            (link.front() == '/' || dir_of(target) == ".") ? link : dir_of(target) + "/" + link;
    }
}

}  // namespace

void atomic_write_file(const std::string& user_path, std::string_view bytes) {
    NZ_CHECK(!user_path.empty(), "atomic_write_file: empty path");
    const std::string& path = user_path;
    const std::string target = write_target(user_path);
    const std::string dir = dir_of(target);

    // mkstemp picks a unique name in the target's directory (same filesystem => atomic rename).
    TempFile tmp;
    std::string templ = target + ".tmp.XXXXXX";
    tmp.fd = ::mkstemp(templ.data());
    if (tmp.fd < 0) {
        const int err = errno;
        throw Error(fmt::format("cannot write '{}': creating a temporary file in '{}' failed: {}",
                                path, dir, errno_str(err)));
    }
    tmp.name = templ;
    // mkstemp creates mode 0600; give the file the usual permissions (0666 & ~umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(tmp.fd, 0666 & ~mask);

    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        const ssize_t n = ::write(tmp.fd, p, left);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            throw Error(fmt::format("cannot write '{}': writing {} bytes failed after {}: {}", path,
                                    bytes.size(), bytes.size() - left, errno_str(err)));
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(tmp.fd) != 0) {
        const int err = errno;
        throw Error(fmt::format("cannot write '{}': fsync failed: {}", path, errno_str(err)));
    }
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0) {  // NFS and friends report write errors at close
        const int err = errno;
        throw Error(fmt::format("cannot write '{}': close failed: {}", path, errno_str(err)));
    }
    if (::rename(tmp.name.c_str(), target.c_str()) != 0) {
        const int err = errno;
        throw Error(fmt::format("cannot write '{}': renaming the temporary file over it failed: {}",
                                path, errno_str(err)));
    }
    tmp.keep = true;  // it is `path` now

    // Make the rename durable. Failing to open the directory (e.g. no read permission) is not
    // an error of the write itself, but a failing fsync is.
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        const int rc = ::fsync(dfd);
        const int err = errno;
        ::close(dfd);
        NZ_CHECK_INPUT(rc == 0 || err == EINVAL || err == EBADF,
                       "cannot write '{}': fsync of directory '{}' failed: {}", path, dir,
                       errno_str(err));
    }
}

std::string read_file(const std::string& path, std::size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw Error(fmt::format("cannot read '{}': {}", path, errno_str(err)));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        throw Error(fmt::format("cannot read '{}': {}", path, errno_str(err)));
    }
    NZ_CHECK_INPUT(!S_ISDIR(st.st_mode), "cannot read '{}': it is a directory, not a file", path);

    std::string out;
    if (S_ISREG(st.st_mode)) out.reserve(std::min(static_cast<std::size_t>(st.st_size), max_bytes));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            throw Error(fmt::format("cannot read '{}' (after {} bytes): {}", path, out.size(),
                                    errno_str(err)));
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        NZ_CHECK_INPUT(out.size() <= max_bytes,
                       "cannot read '{}': larger than the limit of {} bytes", path, max_bytes);
    }
    return out;
}

std::string file_problem(const std::string& path, bool allow_streams) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        return err == ENOENT ? std::string("does not exist") : errno_str(err);
    }
    if (S_ISREG(st.st_mode)) return {};
    if (S_ISDIR(st.st_mode)) return "is a directory, not a file";
    if (allow_streams && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) return {};
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a file";
    return fmt::format("is {}, not a regular file", kind);
}

FileReader::FileReader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait
    if (fd_ < 0) {
        const int err = errno;
        throw Error(fmt::format("cannot read '{}': {}", path,
                                err == ENOENT ? "it does not exist" : errno_str(err)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        const int err = errno;
        ::close(fd_);
        throw Error(fmt::format("cannot read '{}': {}", path, errno_str(err)));
    }
    if (!S_ISREG(st.st_mode)) {  // the same words as file_problem, for the opened file
        ::close(fd_);
        const std::string why = file_problem(path, false);
        throw Error(fmt::format("cannot read '{}': it {}", path,
                                why.empty() ? "is not a regular file" : why));
    }
    size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() {
    ::close(fd_);
}

std::size_t FileReader::read_some_at(uint64_t offset, void* dst, std::size_t n) const {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r =
            ::pread(fd_, static_cast<char*>(dst) + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            throw Error(fmt::format("cannot read '{}' (at byte {}): {}", path_, offset + got,
                                    errno_str(err)));
        }
        if (r == 0) break;  // the end of the file: it shrank since it was opened
        got += static_cast<std::size_t>(r);
    }
    return got;
}

void FileReader::read_at(uint64_t offset, void* dst, std::size_t n) const {
    const std::size_t got = read_some_at(offset, dst, n);
    if (got < n)
        throw Error(fmt::format(
            "cannot read '{}': it ends at byte {}, before the {} bytes at {} (it was {} bytes "
            "when opened: changed while being read?)",
            path_, offset + got, n, offset, size_));
}

std::string read_regular_file(const std::string& path, std::size_t max_bytes, uint64_t* file_size) {
    const FileReader f(path);
    if (file_size) *file_size = f.size();
    std::string out(std::min(static_cast<std::size_t>(f.size()), max_bytes), '\0');
    out.resize(f.read_some_at(0, out.data(), out.size()));  // shorter if it shrank
    return out;
}

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace nazar
