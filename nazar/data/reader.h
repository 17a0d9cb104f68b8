// Readers for parallel text (DESIGN.md §5): a TSV file (source<TAB>target), two line-aligned
// files, or stdin ("-") for translate. Plain or gzip-compressed (zlib detects gzip by its
// magic bytes, so the file name does not matter); UTF-8 with or without a byte order mark;
// lines end in \n or \r\n (the \r is removed). A last line without a newline still counts.
//
// Errors are nazar::Error with "file:line: problem". Line-level problems (a TSV line without
// exactly one tab, invalid UTF-8) either throw or, with skip_bad_lines, are counted and the
// line is skipped; whole-file problems (missing/unreadable file, truncated gzip, mismatched
// line counts of two files) always throw.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct gzFile_s;

namespace nazar {

// Reads a file line by line into an internal buffer; no per-line allocation.
class LineReader {
public:
    explicit LineReader(std::string path);  // "-" = stdin
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line without its line ending (and without the BOM on line 1). The view stays
    // valid until the next call. False at the end of the file.
    bool next(std::string_view& line);
    int64_t line_number() const { return line_; }  // 1-based number of the line last returned
    const std::string& path() const { return path_; }

private:
    bool fill();  // reads more bytes; false at end of file

    std::string path_;
    gzFile_s* file_ = nullptr;
    std::vector<char> buf_;
    std::size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
    bool eof_ = false;
    int64_t line_ = 0;
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

    PairReader(const CorpusFiles& files, bool skip_bad_lines);
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
