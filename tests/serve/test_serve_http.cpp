// The server's HTTP/1.1 head parser (nazar/serve/http.h): what it accepts, and each refusal
// with its status — framing errors a proxy and the server must read the same way (conflicting
// or malformed Content-Length, Transfer-Encoding, folded headers), and the limits.
#include "nazar/serve/http.h"

#include <gtest/gtest.h>

#include <string>

namespace nazar::serve {
namespace test_serve_http {
namespace {

int status_of(const std::string& head, std::size_t max_body = 1000) {
    HttpRequest r;
    const auto e = parse_request_head(head, max_body, r);
    return e ? e->status : 0;
}

TEST(ServeHttp, ParsesARequestHead) {
    HttpRequest r;
    ASSERT_FALSE(
        parse_request_head("POST /v1/translate?x=1 HTTP/1.1\r\nHost: localhost:8080\r\n"
                           "Content-Type: application/json\r\nCONTENT-LENGTH: 12\r\n"
                           "Expect: 100-continue\r\n",
                           1000, r));
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/v1/translate");
    EXPECT_EQ(r.target, "/v1/translate?x=1");
    EXPECT_EQ(r.content_length, 12);
    EXPECT_TRUE(r.keep_alive);
    EXPECT_TRUE(r.expect_continue);
    EXPECT_EQ(r.header("host").value_or(""), "localhost:8080");
    // HTTP/1.0: closes unless asked; LF line ends; equal repeated lengths are one length.
    ASSERT_FALSE(
        parse_request_head("GET / HTTP/1.0\nContent-Length: 0\nContent-Length: 0\n", 1000, r));
    EXPECT_FALSE(r.keep_alive);
    ASSERT_FALSE(parse_request_head("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n", 10, r));
    EXPECT_FALSE(r.keep_alive);
}

TEST(ServeHttp, RefusesWithTheStatusAClientCanActOn) {
    const std::string post = "POST /v1/translate HTTP/1.1\r\nHost: a\r\n";
    EXPECT_EQ(status_of(post + "Content-Length: 1001\r\n"), 413);
    EXPECT_EQ(status_of(post + "Content-Length: 52428800\r\n"), 413);
    EXPECT_EQ(status_of(post + "Content-Length: 1000\r\n"), 0);
    EXPECT_EQ(status_of(post + "Content-Length: -1\r\n"), 400);
    EXPECT_EQ(status_of(post + "Content-Length: +5\r\n"), 400);
    EXPECT_EQ(status_of(post + "Content-Length: 5, 5\r\n"), 400);
    EXPECT_EQ(status_of(post + "Content-Length: 99999999999999999999\r\n"), 400);
    EXPECT_EQ(status_of(post + "Content-Length: 5\r\nContent-Length: 6\r\n"), 400);
    EXPECT_EQ(status_of(post), 411);
    EXPECT_EQ(status_of(post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), 501);
    EXPECT_EQ(status_of(post + "Expect: something\r\nContent-Length: 5\r\n"), 417);
    EXPECT_EQ(status_of(post + "X-A: b\r\n folded\r\nContent-Length: 5\r\n"), 400);
    EXPECT_EQ(status_of(post + "Bad Name: x\r\nContent-Length: 5\r\n"), 400);
    EXPECT_EQ(status_of(post + "X-A: a\x01z\r\nContent-Length: 5\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\n"), 400);  // no Host
    EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n"), 400);
    EXPECT_EQ(status_of("GET / HTTP/2.0\r\nHost: a\r\n"), 505);
    EXPECT_EQ(status_of("GET / HTTP/1.1 extra\r\nHost: a\r\n"), 400);
    EXPECT_EQ(status_of("GET noslash HTTP/1.1\r\nHost: a\r\n"), 400);
    EXPECT_EQ(status_of("GET /a\xff HTTP/1.1\r\nHost: a\r\n"), 400);
    EXPECT_EQ(status_of("G(T / HTTP/1.1\r\nHost: a\r\n"), 400);
    EXPECT_EQ(status_of(""), 400);
    // A message quotes client bytes escaped, never raw.
    HttpRequest r;
    const auto e = parse_request_head("GET /\x1b[31m\xff HTTP/1.1\r\nHost: a\r\n", 10, r);
    ASSERT_TRUE(e);
    EXPECT_NE(e->message.find("\\x1b"), std::string::npos);
    EXPECT_EQ(e->message.find('\x1b'), std::string::npos);
}

TEST(ServeHttp, FindsTheHeadEndAcrossReads) {
    const std::string buf = "GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
    EXPECT_EQ(find_head_end(buf), buf.size() - 4);
    EXPECT_EQ(find_head_end(buf, buf.size() - 5), buf.size() - 4);  // resumed late
    EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n"), std::string::npos);
    EXPECT_EQ(find_head_end("GET /\n\nx"), 7u);
}

TEST(ServeHttp, SerializesWithLengthAndConnection) {
    HttpResponse r{.status = 405, .body = "{}", .headers = {{"Allow", "POST"}}};
    const std::string s = serialize(r, true);
    EXPECT_EQ(s,
              "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\n"
              "Content-Length: 2\r\nConnection: keep-alive\r\nAllow: POST\r\n\r\n{}");
    r.close = true;
    EXPECT_NE(serialize(r, true).find("Connection: close"), std::string::npos);
    EXPECT_EQ(serialize(r, false, true).substr(serialize(r, false, true).size() - 4), "\r\n\r\n");
}

}  // namespace
}  // namespace test_serve_http
}  // namespace nazar::serve
