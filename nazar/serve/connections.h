// The connections of `nazar serve`: one event-loop thread (epoll) owns every socket, reads
// requests and writes answers without blocking, so no client — slow, idle or many — holds a
// thread, and cheap routes (/health, /metrics) are answered while every decoding slot is busy
// (docs/serve.md "Connections"; why not cpp-httplib's thread per connection: the same page).
//
// Per connection, in turn: reading a request (its head within header_timeout of its first
// byte, its body within body_timeout of the head's end; 408 and close after), handing it to the
// handler (which answers at once or later, from any thread, through its Reply), writing the
// answer (closed when no byte leaves for write_timeout), and keep-alive: idle_timeout until the
// next request's first byte, at most max_requests per connection. A connection beyond
// max_connections is answered 503 at once and closed. While a request waits for its answer the
// connection is watched for the client's hang-up: the Reply is then cancelled (the handler's
// work polls Reply::cancelled()) and the socket closed. A Reply with a deadline is answered
// with its timeout answer when the deadline passes first.
//
// shutdown(): the listener closes (new connections are refused), idle connections close, and
// run() returns once the answers of the requests already received are written.
#pragma once

#include "nazar/serve/http.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace nazar::serve {

struct ConnectionLimits {
    std::size_t max_body_bytes = 1 << 20;
    std::size_t max_header_bytes = 16 << 10;  // request line and headers (431 above)
    int max_connections = 512;                // open at once (503 and close above)
    int max_requests = 1000;                  // per connection (then Connection: close)
    std::chrono::milliseconds header_timeout{10000};
    std::chrono::milliseconds body_timeout{30000};
    std::chrono::milliseconds idle_timeout{5000};
    std::chrono::milliseconds write_timeout{10000};
};

class EventLoop;
struct PendingReply;

// The answer to one request: send() it once, from any thread. cancelled() turns true when the
// client hung up or the deadline passed (its timeout answer was sent); send() is then ignored.
class Reply {
public:
    Reply() = default;
    explicit Reply(std::shared_ptr<PendingReply> p) : p_(std::move(p)) {}
    bool send(HttpResponse r);  // false: already answered or cancelled
    bool cancelled() const;
    // At `deadline`, unless answered before, the loop sends `answer` and cancels the reply.
    void set_deadline(std::chrono::steady_clock::time_point deadline, HttpResponse answer);
    // Called once, on the thread that answers or cancels (the handler's bookkeeping).
    void on_finish(std::function<void(int status)> f);

private:
    std::shared_ptr<PendingReply> p_;
};

struct ConnectionStats {
    int64_t open = 0;       // connections being served
    int64_t refused = 0;    // answered 503 at the connection cap
    int64_t timed_out = 0;  // closed by a header, body, write or idle timeout
};

class HttpListener {
public:
    // Called on the loop thread with each complete request; must not block (hand long work to
    // another thread with the Reply).
    using Handler = std::function<void(HttpRequest& request, Reply reply)>;
    // Called on the loop thread as each answer starts to be written (metrics).
    using AnswerHook = std::function<void(const std::string& path, int status)>;

    HttpListener(ConnectionLimits limits, Handler handler, AnswerHook on_answer);
    ~HttpListener();
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;

    // TLS on every connection (tls.h), before bind(); throws Error for unusable files.
    void use_tls(const std::string& cert_file, const std::string& key_file);
    int bind(const std::string& host, int port);  // returns the port; throws Error
    void run();                                   // serves until shutdown() and the drain ends
    void shutdown();                              // thread-safe, idempotent
    ConnectionStats stats() const;                // thread-safe

private:
    std::unique_ptr<EventLoop> loop_;
};

}  // namespace nazar::serve
