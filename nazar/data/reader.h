// Readers for parallel text (docs/design.md §5): a TSV file (source<TAB>target), two line-aligned
// files, or stdin ("-") for translate. Plain or gzip-compressed (zlib detects gzip by its
// magic bytes, so the file name does not matter); UTF-8 with or without a byte order mark;
// lines end in \n or \r\n (the \r is removed). A last line without a newline still counts.
//
// Errors are nazar::Error with "file:line: problem". Line-level problems (a TSV line without
// exactly one tab, invalid UTF-8) either throw or, with skip_bad_lines, are counted and the
// line is skipped; whole-file problems (missing/unreadable file, truncated gzip, mismatched
// line counts of two files) always throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct z_stream_s;

namespace nazar {

// The default cap on one input line of translate, score, align and attention (--max-line-bytes;
// docs/decoding.md).
inline constexpr std::size_t kDefaultMaxLineBytes = std::size_t{1} << 16;  // 64 KiB

// Reads a file line by line into an internal buffer; no per-line allocation.
//
// The descriptor is read with read(2), which returns what is there: a line typed at a terminal
// or written into a pipe is returned by next() at once, without waiting for more input or the
// end of the file (translate and attention answer line by line). gzip is recognised by its
// first two bytes (1f 8b) and inflated here with zlib's inflate (concatenated members are read
// on; bytes after the last member that do not start another one are ignored, as gzread does).
//
// max_line_bytes > 0 caps the length of a line (without its line ending): a longer line is an
// error naming the file and line, found before more than max_line_bytes + 1 MiB is buffered.
class LineReader {
public:
    explicit LineReader(std::string path, std::size_t max_line_bytes = 0);  // "-" = stdin
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line without its line ending (and without the BOM on line 1). The view stays
    // valid until the next call. False at the end of the file.
    bool next(std::string_view& line);
    // True when next() returns without waiting for input: a whole line is buffered, the input
    // has ended, or the descriptor has bytes ready (always, for a regular file).
    bool ready() const;
    int64_t line_number() const { return line_; }  // 1-based number of the line last returned
    const std::string& path() const { return path_; }

private:
    bool fill();                                     // reads more bytes; false at end of file
    bool fill_gzip();                                // fill() for a gzip stream
    std::size_t read_raw(char* dst, std::size_t n);  // 0 at end of file
    bool compressed_at_least(std::size_t n);         // >= n compressed bytes buffered (or the end)
    [[noreturn]] void read_error(const std::string& reason) const;
    [[noreturn]] void too_long() const;

    std::string path_;
    int fd_ = -1;
    std::size_t max_line_ = 0;
    std::vector<char> buf_;
    std::size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
    bool sniffed_ = false;             // the first bytes were checked for the gzip magic
    bool eof_ = false;
    int64_t line_ = 0;
    // gzip: the inflate stream, its compressed input, and whether a member just ended
    std::unique_ptr<z_stream_s> z_;
    std::vector<char> zin_;
    bool raw_eof_ = false, member_end_ = false;
};

// Where a corpus comes from: either `tsv`, or `src` and `tgt` (line-aligned).
struct CorpusFiles {
    std::string tsv{};
    std::string src{}, tgt{};

    std::string name() const;  // "train.tsv" or "train.en+train.fr" (for summaries)
};

// Counts of skipped lines (only with skip_bad_lines; otherwise the first one throws).
struct BadLines {
    int64_t wrong_tabs = 0;  // TSV line without exactly one tab
    int64_t invalid_utf8 = 0;
    std::vector<std::string> examples;  // "file:line: problem" of the first few

    int64_t total() const { return wrong_tabs + invalid_utf8; }
};

// Source/target views into the readers' buffers; valid until the next call to next().
struct RawPair {
    std::string_view src, tgt;
    int64_t line = 0;  // 1-based
};

class PairReader {
public:
    static constexpr int kMaxExamples = 5;

    // max_line_bytes: LineReader's cap on the length of a line (0 = none).
    PairReader(const CorpusFiles& files, bool skip_bad_lines, std::size_t max_line_bytes = 0);
    bool next(RawPair& pair);  // false at the end (after checking line counts)

    int64_t lines_read() const { return lines_; }  // including bad lines
    const BadLines& bad_lines() const { return bad_; }
    std::string name() const { return files_.name(); }

private:
    bool bad_line(const std::string& message, int64_t BadLines::*counter);
    bool check_utf8(std::string_view text, const LineReader& reader, int64_t BadLines::*counter);

    CorpusFiles files_;
    bool skip_;
    LineReader first_;                    // the TSV file, or the source file
    std::unique_ptr<LineReader> second_;  // the target file, for two files
    int64_t lines_ = 0;
    BadLines bad_;
};

}  // namespace nazar
