#include "nazar/core/fileio.h"

#include "nazar/core/check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
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

void atomic_write_file(const std::string& path, std::string_view bytes) {
    NZ_CHECK(!path.empty(), "atomic_write_file: empty path");
    const std::string dir = dir_of(path);

    // mkstemp picks a unique name in the target's directory (same filesystem => atomic rename).
    TempFile tmp;
    std::string templ = path + ".tmp.XXXXXX";
    tmp.fd = ::mkstemp(templ.data());
    if (tmp.fd < 0) {
        const int err = errno;
        NZ_FAIL("cannot write '{}': creating a temporary file in '{}' failed: {}", path, dir,
                errno_str(err));
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
            NZ_FAIL("cannot write '{}': writing {} bytes failed after {}: {}", path, bytes.size(),
                    bytes.size() - left, errno_str(err));
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(tmp.fd) != 0) {
        const int err = errno;
        NZ_FAIL("cannot write '{}': fsync failed: {}", path, errno_str(err));
    }
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0) {  // NFS and friends report write errors at close
        const int err = errno;
        NZ_FAIL("cannot write '{}': close failed: {}", path, errno_str(err));
    }
    if (::rename(tmp.name.c_str(), path.c_str()) != 0) {
        const int err = errno;
        NZ_FAIL("cannot write '{}': renaming the temporary file over it failed: {}", path,
                errno_str(err));
    }
    tmp.keep = true;  // it is `path` now

    // Make the rename durable. Failing to open the directory (e.g. no read permission) is not
    // an error of the write itself, but a failing fsync is.
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        const int rc = ::fsync(dfd);
        const int err = errno;
        ::close(dfd);
        NZ_CHECK(rc == 0 || err == EINVAL || err == EBADF,
                 "cannot write '{}': fsync of directory '{}' failed: {}", path, dir,
                 errno_str(err));
    }
}

std::string read_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        NZ_FAIL("cannot read '{}': {}", path, errno_str(err));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        NZ_FAIL("cannot read '{}': {}", path, errno_str(err));
    }
    NZ_CHECK(!S_ISDIR(st.st_mode), "cannot read '{}': {}", path, errno_str(EISDIR));

    std::string out;
    if (S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            NZ_FAIL("cannot read '{}' (after {} bytes): {}", path, out.size(), errno_str(err));
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace nazar
