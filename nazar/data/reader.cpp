#include "nazar/data/reader.h"

#include "nazar/core/check.h"
#include "nazar/data/utf8.h"

#include <zlib.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

namespace nazar {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;

std::string display_name(const std::string& path) {
    return path == "-" ? "<stdin>" : path;
}

}  // namespace

LineReader::LineReader(std::string path) : path_(std::move(path)) {
    errno = 0;
    if (path_ == "-") {
        const int fd = ::dup(STDIN_FILENO);  // gzclose must not close the process's stdin
        NZ_CHECK(fd >= 0, "<stdin>: cannot read: {}", std::strerror(errno));
        file_ = gzdopen(fd, "rb");
        if (!file_) ::close(fd);
    } else {
        file_ = gzopen(path_.c_str(), "rb");
    }
    if (!file_) {
        const int err = errno;
        throw Error(fmt::format("{}: cannot open: {}", display_name(path_),
                                err ? std::strerror(err) : "out of memory"));
    }
    gzbuffer(file_, 1 << 17);
    buf_.resize(kChunk);
}

LineReader::~LineReader() {
    if (file_) gzclose(file_);
}

bool LineReader::fill() {
    if (eof_) return false;
    // Keep the unread tail, grow the buffer when one line fills it.
    if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    errno = 0;
    const int n = gzread(file_, buf_.data() + end_, static_cast<unsigned>(buf_.size() - end_));
    int zerr = Z_OK;
    const char* zmsg = gzerror(file_, &zerr);
    if (n < 0 || (zerr != Z_OK && zerr != Z_BUF_ERROR) || (n == 0 && zerr == Z_BUF_ERROR)) {
        // Z_BUF_ERROR at the end means the gzip stream stopped early.
        const std::string reason = zerr == Z_ERRNO ? std::strerror(errno)
                                   : zerr == Z_BUF_ERROR
                                       ? "truncated gzip file (unexpected end of file)"
                                       : zmsg;
        throw Error(fmt::format("{}:{}: read error: {}", display_name(path_), line_ + 1, reason));
    }
    if (n == 0) {
        eof_ = true;
        return false;
    }
    end_ += static_cast<std::size_t>(n);
    return true;
}

bool LineReader::next(std::string_view& line) {
    std::size_t scan = begin_;
    for (;;) {
        const char* nl =
            static_cast<const char*>(std::memchr(buf_.data() + scan, '\n', end_ - scan));
        std::size_t stop;
        if (nl) {
            stop = static_cast<std::size_t>(nl - buf_.data());
        } else {
            const std::size_t scanned = end_ - begin_;
            if (fill()) {
                scan = begin_ + scanned;
                continue;
            }
            if (begin_ == end_) return false;  // end of file, nothing pending
            stop = end_;                       // last line without '\n'
        }
        const char* b = buf_.data() + begin_;
        std::size_t len = stop - begin_;
        begin_ = std::min(stop + 1, end_);
        if (!nl) begin_ = end_;
        if (len > 0 && b[len - 1] == '\r') --len;
        ++line_;
        if (line_ == 1 && len >= 3 && std::memcmp(b, "\xEF\xBB\xBF", 3) == 0) {
            b += 3;
            len -= 3;
        }
        line = std::string_view(b, len);
        return true;
    }
}

std::string CorpusFiles::name() const {
    auto base = [](const std::string& p) {
        const auto slash = p.rfind('/');
        return display_name(slash == std::string::npos ? p : p.substr(slash + 1));
    };
    return tsv.empty() ? base(src) + "+" + base(tgt) : base(tsv);
}

namespace {

const std::string& first_path(const CorpusFiles& f) {
    NZ_CHECK(
        f.tsv.empty() != (f.src.empty() && f.tgt.empty()),
        "give either a TSV file or a source and a target file (got tsv='{}', src='{}', tgt='{}')",
        f.tsv, f.src, f.tgt);
    NZ_CHECK(!f.tsv.empty() || (!f.src.empty() && !f.tgt.empty()),
             "two-file corpus needs both files (src='{}', tgt='{}')", f.src, f.tgt);
    return f.tsv.empty() ? f.src : f.tsv;
}

}  // namespace

PairReader::PairReader(const CorpusFiles& files, bool skip_bad_lines)
    : files_(files), skip_(skip_bad_lines), first_(first_path(files)) {
    if (files_.tsv.empty()) second_ = std::make_unique<LineReader>(files_.tgt);
}

bool PairReader::bad_line(const std::string& message, int64_t BadLines::*counter) {
    if (!skip_) throw Error(message);
    ++(bad_.*counter);
    if (static_cast<int>(bad_.examples.size()) < kMaxExamples) bad_.examples.push_back(message);
    return false;
}

bool PairReader::check_utf8(std::string_view text, const LineReader& reader,
                            int64_t BadLines::*counter) {
    const std::size_t at = utf8::find_invalid(text);
    if (at == utf8::npos) return true;
    return bad_line(fmt::format("{}:{}: invalid UTF-8 at byte {} of the line (0x{:02x})",
                                display_name(reader.path()), reader.line_number(), at + 1,
                                static_cast<unsigned char>(text[at])),
                    counter);
}

bool PairReader::next(RawPair& pair) {
    for (;;) {
        std::string_view a, b;
        const bool has_a = first_.next(a);
        if (!second_) {
            if (!has_a) return false;
            ++lines_;
            pair.line = first_.line_number();
            // Validate the whole line first: a stray byte is reported as invalid UTF-8,
            // whichever column it is in.
            if (!check_utf8(a, first_, &BadLines::invalid_utf8)) continue;
            const std::size_t tab = a.find('\t');
            const std::size_t tabs = tab == std::string_view::npos
                                         ? 0
                                         : 1 + std::count(a.begin() + tab + 1, a.end(), '\t');
            if (tabs != 1) {
                bad_line(
                    fmt::format("{}:{}: expected exactly one tab (source<TAB>target), found {}",
                                display_name(first_.path()), pair.line, tabs),
                    &BadLines::wrong_tabs);
                continue;
            }
            pair.src = a.substr(0, tab);
            pair.tgt = a.substr(tab + 1);
            return true;
        }
        const bool has_b = second_->next(b);
        if (has_a != has_b) {
            // Count the rest of the longer file so the message gives both totals.
            LineReader& longer = has_a ? first_ : *second_;
            std::string_view rest;
            while (longer.next(rest)) {
            }
            throw Error(fmt::format("mismatched line counts: {} has {} lines, {} has {} lines",
                                    display_name(files_.src), first_.line_number(),
                                    display_name(files_.tgt), second_->line_number()));
        }
        if (!has_a) return false;
        ++lines_;
        pair.line = first_.line_number();
        if (!check_utf8(a, first_, &BadLines::invalid_utf8)) continue;
        if (!check_utf8(b, *second_, &BadLines::invalid_utf8)) continue;
        pair.src = a;
        pair.tgt = b;
        return true;
    }
}

}  // namespace nazar
