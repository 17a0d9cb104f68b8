// HTTP/1.1 request heads and responses (http.h).
#include "nazar/serve/http.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nazar::serve {

namespace {

// tchar of RFC 9110 §5.6.2.
bool is_tchar(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) return true;
    switch (c) {
        case '!':
        case '#':
        case '$':
        case '%':
        case '&':
        case '\'':
        case '*':
        case '+':
        case '-':
        case '.':
        case '^':
        case '_':
        case '`':
        case '|':
        case '~':
            return true;
        default:
            return false;
    }
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// A field value may hold visible bytes, spaces, tabs and obs-text (>= 0x80); no other control.
bool is_field_value(std::string_view s) {
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 ? c != '\t' : u == 0x7f) return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// A printable excerpt of client bytes for a message (at most 60, others as \xNN).
std::string excerpt(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 60; ++i) {
        const auto u = static_cast<unsigned char>(s[i]);
        out += (u >= 0x20 && u < 0x7f) ? std::string(1, s[i]) : fmt::format("\\x{:02x}", u);
    }
    return s.size() > 60 ? out + "..." : out;
}

// "Connection" holds a comma-separated list of options.
bool has_option(std::string_view value, std::string_view option) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (ascii_lower(trim(value.substr(0, comma))) == option) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

std::optional<HeadError> parse_request_line(std::string_view line, HttpRequest& out) {
    const std::size_t a = line.find(' ');
    const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos)
        return HeadError{400, fmt::format("malformed request line '{}'", excerpt(line))};
    const std::string_view method = line.substr(0, a), target = line.substr(a + 1, b - a - 1),
                           version = line.substr(b + 1);
    if (!is_token(method))
        return HeadError{400, fmt::format("malformed method '{}'", excerpt(method))};
    if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." || !std::isdigit(version[7])) {
        if (version.substr(0, 5) == "HTTP/")
            return HeadError{505, fmt::format("HTTP version '{}' is not supported (HTTP/1.0 and "
                                              "HTTP/1.1 are)",
                                              excerpt(version))};
        return HeadError{400, fmt::format("malformed request line '{}'", excerpt(line))};
    }
    out.minor = version[7] - '0';
    if (out.minor > 1)
        return HeadError{505, fmt::format("HTTP version '{}' is not supported (HTTP/1.0 and "
                                          "HTTP/1.1 are)",
                                          excerpt(version))};
    const bool star = target == "*" && method == "OPTIONS";
    if (target.empty() || (target.front() != '/' && !star))
        return HeadError{400,
                         fmt::format("request target '{}' must start with '/'", excerpt(target))};
    for (const char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            return HeadError{400, fmt::format("request target '{}' holds a byte that must be "
                                              "percent-encoded",
                                              excerpt(target))};
    out.method = method;
    out.target = target;
    out.path = target.substr(0, target.find('?'));
    return std::nullopt;
}

// Content-Length: 1*DIGIT, at most 18 digits (no sign, no list, no spaces inside).
std::optional<int64_t> parse_length(std::string_view v) {
    if (v.empty() || v.size() > 18) return std::nullopt;
    int64_t n = 0;
    for (const char c : v) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (k == name) return std::string_view(v);
    return std::nullopt;
}

std::size_t find_head_end(std::string_view buf, std::size_t from) {
    // Step back so that a terminator split across two reads is found.
    for (std::size_t i = from >= 3 ? from - 3 : 0; i < buf.size(); ++i) {
        if (buf[i] != '\n') continue;
        if (i + 1 < buf.size() && buf[i + 1] == '\n') return i + 2;
        if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
    }
    return std::string_view::npos;
}

std::optional<HeadError> parse_request_head(std::string_view head, std::size_t max_body_bytes,
                                            HttpRequest& out) {
    out = HttpRequest{};
    std::vector<std::string_view> lines;
    while (!head.empty()) {
        std::size_t nl = head.find('\n');
        std::string_view line = head.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty() || !lines.empty()) lines.push_back(line);  // RFC: skip leading CRLF
        if (nl == std::string_view::npos) break;
        head.remove_prefix(nl + 1);
    }
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    if (lines.empty()) return HeadError{400, "empty request"};
    if (auto e = parse_request_line(lines[0], out)) return e;

    std::optional<int64_t> length;
    bool has_host = false, chunked = false;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (line.front() == ' ' || line.front() == '\t')
            return HeadError{400, "header folded over lines (obsolete line folding)"};
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
            return HeadError{400, fmt::format("malformed header line '{}'", excerpt(line))};
        const std::string name = ascii_lower(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        if (!is_field_value(value))
            return HeadError{400, fmt::format("header '{}' holds a control byte", name)};
        if (name == "content-length") {
            const std::optional<int64_t> n = parse_length(value);
            if (!n)
                return HeadError{400, fmt::format("malformed Content-Length '{}' (a decimal "
                                                  "number of bytes)",
                                                  excerpt(value))};
            if (length && *length != *n)
                return HeadError{400, fmt::format("conflicting Content-Length headers ({} and {})",
                                                  *length, *n)};
            length = n;
        } else if (name == "transfer-encoding") {
            chunked = true;
        } else if (name == "host") {
            if (has_host) return HeadError{400, "Host given twice"};  // RFC 9112 §3.2: a MUST
            has_host = true;
        } else if (name == "expect") {
            if (ascii_lower(value) != "100-continue")
                return HeadError{417, fmt::format("expectation '{}' is not supported (only "
                                                  "100-continue)",
                                                  excerpt(value))};
            out.expect_continue = true;
        }
        out.headers.emplace_back(name, std::string(value));
    }
    if (chunked)
        return HeadError{501,
                         "Transfer-Encoding is not supported: send the body with "
                         "Content-Length"};
    if (!has_host && out.minor == 1) return HeadError{400, "an HTTP/1.1 request needs a Host"};
    if (!length && out.method == "POST") return HeadError{411, "a POST needs a Content-Length"};
    out.content_length = length.value_or(0);
    if (static_cast<uint64_t>(out.content_length) > max_body_bytes)
        return HeadError{413, fmt::format("request body of {} bytes exceeds the limit of {} bytes "
                                          "(--max-body-bytes)",
                                          out.content_length, max_body_bytes)};
    const std::optional<std::string_view> conn = out.header("connection");
    out.keep_alive = out.minor == 1 ? !(conn && has_option(*conn, "close"))
                                    : (conn && has_option(*conn, "keep-alive"));
    return std::nullopt;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 204:
            return "No Content";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 411:
            return "Length Required";
        case 413:
            return "Content Too Large";
        case 415:
            return "Unsupported Media Type";
        case 417:
            return "Expectation Failed";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

std::string serialize(const HttpResponse& r, bool keep_alive, bool head_only) {
    std::string out = fmt::format("HTTP/1.1 {} {}\r\n", r.status, reason_phrase(r.status));
    if (!r.content_type.empty()) out += fmt::format("Content-Type: {}\r\n", r.content_type);
    out += fmt::format("Content-Length: {}\r\nConnection: {}\r\n", r.body.size(),
                       keep_alive && !r.close ? "keep-alive" : "close");
    for (const auto& [k, v] : r.headers) out += fmt::format("{}: {}\r\n", k, v);
    out += "\r\n";
    if (!head_only) out += r.body;
    return out;
}

}  // namespace nazar::serve
