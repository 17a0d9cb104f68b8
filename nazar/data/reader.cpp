#include "nazar/data/reader.h"

#include "nazar/core/check.h"
#include "nazar/data/utf8.h"

#include <zlib.h>

#include <fcntl.h>
#include <poll.h>
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

LineReader::LineReader(std::string path, std::size_t max_line_bytes)
    : path_(std::move(path)), max_line_(max_line_bytes) {
    if (path_ == "-") {
        fd_ = STDIN_FILENO;  // read, never closed
    } else {
        do {
            fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        } while (fd_ < 0 && errno == EINTR);
        if (fd_ < 0)
            throw Error(
                fmt::format("{}: cannot open: {}", display_name(path_), std::strerror(errno)));
    }
    buf_.resize(kChunk);
}

LineReader::~LineReader() {
    if (z_) inflateEnd(z_.get());
    if (fd_ >= 0 && fd_ != STDIN_FILENO) ::close(fd_);
}

void LineReader::read_error(const std::string& reason) const {
    throw Error(fmt::format("{}:{}: read error: {}", display_name(path_), line_ + 1, reason));
}

std::size_t LineReader::read_raw(char* dst, std::size_t n) {
    for (;;) {
        const ssize_t r = ::read(fd_, dst, n);
        if (r >= 0) return static_cast<std::size_t>(r);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking stdin: wait for it
            pollfd p{fd_, POLLIN, 0};
            ::poll(&p, 1, -1);
            continue;
        }
        read_error(std::strerror(errno));
    }
}

bool LineReader::compressed_at_least(std::size_t n) {
    while (z_->avail_in < n && !raw_eof_) {
        if (z_->avail_in > 0) std::memmove(zin_.data(), z_->next_in, z_->avail_in);
        const std::size_t got = read_raw(zin_.data() + z_->avail_in, zin_.size() - z_->avail_in);
        if (got == 0) raw_eof_ = true;
        z_->next_in = reinterpret_cast<Bytef*>(zin_.data());
        z_->avail_in += static_cast<uInt>(got);
    }
    return z_->avail_in >= n;
}

bool LineReader::fill_gzip() {
    for (;;) {
        if (member_end_) {
            // Another member follows only if the next bytes are the gzip magic; anything else
            // (or nothing) ends the stream.
            if (!compressed_at_least(2) || static_cast<unsigned char>(z_->next_in[0]) != 0x1f ||
                static_cast<unsigned char>(z_->next_in[1]) != 0x8b) {
                eof_ = true;
                return false;
            }
            inflateReset(z_.get());
            member_end_ = false;
        }
        compressed_at_least(1);
        const std::size_t room = buf_.size() - end_;
        z_->next_out = reinterpret_cast<Bytef*>(buf_.data() + end_);
        z_->avail_out = static_cast<uInt>(room);
        const int r = inflate(z_.get(), Z_NO_FLUSH);
        const std::size_t produced = room - z_->avail_out;
        end_ += produced;
        if (r == Z_STREAM_END) {
            member_end_ = true;
        } else if (r == Z_OK || r == Z_BUF_ERROR) {
            if (produced == 0 && z_->avail_in == 0 && raw_eof_)
                read_error("truncated gzip file (unexpected end of file)");
        } else {
            read_error(r == Z_MEM_ERROR ? "out of memory"
                       : z_->msg        ? fmt::format("invalid gzip data: {}", z_->msg)
                                        : "invalid gzip data");
        }
        if (produced > 0) return true;
    }
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
    if (z_) return fill_gzip();
    std::size_t n = read_raw(buf_.data() + end_, buf_.size() - end_);
    if (!sniffed_) {
        sniffed_ = true;
        if (n == 1 && static_cast<unsigned char>(buf_[end_]) == 0x1f)  // need the second byte
            n += read_raw(buf_.data() + end_ + 1, buf_.size() - end_ - 1);
        if (n >= 2 && static_cast<unsigned char>(buf_[end_]) == 0x1f &&
            static_cast<unsigned char>(buf_[end_ + 1]) == 0x8b) {
            z_ = std::make_unique<z_stream_s>();
            if (inflateInit2(z_.get(), 16 + MAX_WBITS) != Z_OK) {
                z_.reset();
                read_error("cannot start gzip decompression (out of memory)");
            }
            zin_.assign(buf_.begin() + static_cast<std::ptrdiff_t>(end_),
                        buf_.begin() + static_cast<std::ptrdiff_t>(end_ + n));
            zin_.resize(std::max(zin_.size(), kChunk));
            z_->next_in = reinterpret_cast<Bytef*>(zin_.data());
            z_->avail_in = static_cast<uInt>(n);
            return fill_gzip();
        }
    }
    if (n == 0) {
        eof_ = true;
        return false;
    }
    end_ += n;
    return true;
}

bool LineReader::ready() const {
    if (eof_ || std::memchr(buf_.data() + begin_, '\n', end_ - begin_) != nullptr) return true;
    if (z_ && z_->avail_in > 0) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
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
            // A line without its end yet, already over the limit (+1 for a '\r'): stop before
            // buffering more of it.
            if (max_line_ > 0 && scanned > max_line_ + 1) too_long();
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
        if (max_line_ > 0 && len > max_line_) {
            --line_;
            too_long();
        }
        line = std::string_view(b, len);
        return true;
    }
}

void LineReader::too_long() const {
    throw Error(fmt::format(
        "{}:{}: line longer than {} bytes (the limit on one line; raise it with --max-line-bytes)",
        display_name(path_), line_ + 1, max_line_));
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
    NZ_CHECK_USAGE(
        f.tsv.empty() != (f.src.empty() && f.tgt.empty()),
        "give either a TSV file or a source and a target file (got tsv='{}', src='{}', tgt='{}')",
        f.tsv, f.src, f.tgt);
    NZ_CHECK_USAGE(!f.tsv.empty() || (!f.src.empty() && !f.tgt.empty()),
                   "two-file corpus needs both files (src='{}', tgt='{}')", f.src, f.tgt);
    return f.tsv.empty() ? f.src : f.tsv;
}

}  // namespace

PairReader::PairReader(const CorpusFiles& files, bool skip_bad_lines, std::size_t max_line_bytes)
    : files_(files), skip_(skip_bad_lines), first_(first_path(files), max_line_bytes) {
    if (files_.tsv.empty()) second_ = std::make_unique<LineReader>(files_.tgt, max_line_bytes);
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
