// HTTP/1.1 messages for `nazar serve` (docs/serve.md "HTTP"): a request head parsed and checked
// strictly (RFC 9112), and responses written with Content-Length. No sockets here
// (connections.h reads and writes them), so the parser is unit-tested and fuzzed alone.
//
// A head is refused, with the status a client can act on, when:
//   400  the request line or a header line is malformed (a token with a space, a header folded
//        over lines, a NUL or other control byte), Content-Length is not a plain decimal
//        number (negative, signed, a list, over 18 digits) or appears twice with different
//        values, or an HTTP/1.1 request has no Host or two;
//   411  a POST has no Content-Length;          413  Content-Length exceeds the body limit;
//   417  an Expect other than 100-continue;     431  the head exceeds the header limit;
//   501  Transfer-Encoding (chunked request bodies are not supported: send Content-Length);
//   505  a version other than HTTP/1.0 and HTTP/1.1.
// Each refusal closes the connection (the body, if any, is not read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nazar::serve {

struct HttpRequest {
    std::string method;  // as sent (methods are case-sensitive)
    std::string target;  // the request target as sent, e.g. "/v1/translate?x=1"
    std::string path;    // target up to '?'
    int minor = 1;       // HTTP/1.<minor>
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
    int64_t content_length = 0;
    bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
    bool expect_continue = false;  // "Expect: 100-continue"
    std::string body;

    // The first value of header `name` (lower-case), or nullopt.
    std::optional<std::string_view> header(std::string_view name) const;
};

struct HeadError {
    int status;
    std::string message;  // one line
};

// Parses a request head: the bytes before the empty line, without it ("GET / HTTP/1.1\r\n
// Host: x\r\n"). Lines may end in CRLF or a bare LF. Returns the refusal, if any (above).
std::optional<HeadError> parse_request_head(std::string_view head, std::size_t max_body_bytes,
                                            HttpRequest& out);

// The end of the head in `buf`: the index just past the empty line ("\r\n\r\n" or "\n\n"),
// or npos. `from`: where the previous search stopped (the caller's buffer grew since).
std::size_t find_head_end(std::string_view buf, std::size_t from = 0);

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body{};
    std::vector<std::pair<std::string, std::string>> headers{};  // extra headers
    bool close = false;                                          // close the connection after it
};

// The whole message: status line, Content-Type, Content-Length, Connection (keep-alive or
// close), the extra headers, the body (omitted for HEAD, with the length kept).
std::string serialize(const HttpResponse& r, bool keep_alive, bool head_only = false);

const char* reason_phrase(int status);

// ASCII lower case (header names, media types, hosts, schemes are case-insensitive).
std::string ascii_lower(std::string_view s);

}  // namespace nazar::serve
