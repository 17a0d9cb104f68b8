// Whole-file reads and crash-safe writes (DESIGN.md §5: "a crash never leaves a broken or
// half-written file").
//
// atomic_write_file(path, bytes):
//   1. create a unique temporary file next to `path` (same directory, so rename is atomic),
//   2. write all bytes, fsync it, close it,
//   3. rename it over `path`, then fsync the directory so the rename itself is durable.
// On any failure (disk full, permission, path is a directory, ...) the previous file at
// `path` is untouched, the temporary is removed, and nazar::Error names the path, the step
// that failed and strerror(errno). A reader therefore sees either the old or the new file.
//
// read_file(path): the whole file as bytes; nazar::Error names the path and the reason.
#pragma once

#include <string>
#include <string_view>

namespace nazar {

void atomic_write_file(const std::string& path, std::string_view bytes);

std::string read_file(const std::string& path);

bool file_exists(const std::string& path);  // a regular file (or a link to one) exists there

}  // namespace nazar
