// Whole-file reads and crash-safe writes (docs/design.md §5: "a crash never leaves a broken or
// half-written file").
//
// atomic_write_file(path, bytes):
//   1. create a unique temporary file next to `path` (same directory, so rename is atomic),
//   2. write all bytes, fsync it, close it,
//   3. rename it over `path`, then fsync the directory so the rename itself is durable.
// A symbolic link at `path` is followed (the file it names is replaced, the link stays); a
// directory, device, FIFO or socket at `path` is refused (renaming over it would replace it).
// On any failure (disk full, permission, path is a directory, ...) the previous file at
// `path` is untouched, the temporary is removed, and nazar::Error names the path, the step
// that failed and strerror(errno). A reader therefore sees either the old or the new file.
//
// read_file(path): the whole file as bytes; nazar::Error names the path and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nazar {

void atomic_write_file(const std::string& path, std::string_view bytes);

// With `max_bytes`, a longer file or stream is refused (nazar::Error naming the limit) after
// reading at most max_bytes + 1 bytes: /dev/zero as a configuration ends at once.
std::string read_file(const std::string& path, std::size_t max_bytes = SIZE_MAX);

bool file_exists(const std::string& path);  // a regular file (or a link to one) exists there

// Why `path` cannot be read as a file, as words that follow the quoted path: "" when it can;
// "does not exist", "is a directory", "is a FIFO, not a regular file", ... A FIFO or character
// device is acceptable only with `allow_streams` (line-by-line readers, `<(...)`), never for a
// model file, whose size must be known first.
std::string file_problem(const std::string& path, bool allow_streams);

// The first `max_bytes` bytes of the file at `path` (all of it by default), read only up to
// the size fstat reports; `*file_size` gets that size. nazar::Error with file_problem's words
// unless it is a regular file (a FIFO or device is never waited on or read).
std::string read_regular_file(const std::string& path, std::size_t max_bytes = SIZE_MAX,
                              uint64_t* file_size = nullptr);

// A regular file opened for reading pieces at given offsets (pread), so that a large file is read
// straight into the memory that keeps it (model files: core/safetensors.cpp) and never held
// whole. Opening refuses what read_regular_file refuses, with the same words; size() is the size
// fstat reported when it was opened.
class FileReader {
public:
    explicit FileReader(const std::string& path);
    ~FileReader();
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;

    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }
    // Up to n bytes at `offset` into dst; fewer only where the file ends. Returns the count.
    std::size_t read_some_at(uint64_t offset, void* dst, std::size_t n) const;
    // Exactly n bytes at `offset`; nazar::Error naming the path if the file ends first (it shrank
    // after it was opened).
    void read_at(uint64_t offset, void* dst, std::size_t n) const;

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace nazar
