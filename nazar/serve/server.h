// `nazar serve`: an HTTP/1.1 translation server over the library's Translator (docs/serve.md).
//
//   GET  /                  the attention explorer (nazar/serve/www/, embedded at build time)
//   POST /v1/translate      translate (request.h), batched across requests (batcher.h)
//   GET  /v1/models         the models, their configurations and vocabulary sizes
//   GET  /health            {"status": "ok"} (503 "draining" once shutdown began)
//   GET  /metrics           Prometheus text (metrics.h)
//
// Connections (connections.h): one event loop owns the sockets (timeouts, a connection cap,
// hang-ups cancel their request); request parsing and answer writing run on `http_threads`
// workers; decoding on the batcher's thread. Who may talk to it: a server bound to loopback
// answers only Host names that are loopback (DNS rebinding); a request with an Origin other
// than the server's own is refused (403) unless `allow_origins` names it; with `api_keys`,
// every route but /health and the page's files needs "Authorization: Bearer KEY" (401).
// Limits: the body size (413, from Content-Length before the body is read), sentences per
// request and tokens per sentence (400), the request's work and answer size (413, check_cost),
// the queue bound (503 with Retry-After), the per-request timeout (504; decoding stops at the
// next step), invalid UTF-8 and malformed JSON (400); every error is {"error", "status"}.
// Shutdown: stop() (from a signal-watching thread) starts the drain: /health answers 503
// "draining", new translations 503, the requests in flight are answered; then the listener
// closes and run() returns.
#pragma once

#include "nazar/serve/batcher.h"
#include "nazar/serve/connections.h"
#include "nazar/serve/request.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace nazar::serve {

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0 = any free port (bind() returns it)
    RequestLimits limits;
    BatcherConfig batcher;
    ConnectionLimits connections;              // max_body_bytes is taken from `limits`
    std::chrono::milliseconds timeout{30000};  // per translate request, arrival to answer
    int http_threads = 4;                      // workers: parsing requests, writing answers
    int retry_after_s = 1;                     // Retry-After of a 503
    std::vector<std::string> allow_origins;    // cross-origin callers allowed ("*": any)
    std::vector<std::string> api_keys;         // non-empty: bearer tokens required
    std::string tls_cert, tls_key;             // PEM files: HTTPS on every connection (tls.h)
};

class Server {
public:
    // `models`: name and translator (borrowed; must outlive the server); the first is the default.
    Server(const ServerConfig& config, std::vector<NamedModel> models);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    int bind();   // binds host:port, returns the port (throws Error when it cannot)
    void run();   // serves until stop(); returns after the in-flight requests were answered
    void stop();  // thread-safe; may be called before run() ends or even starts
    bool loopback() const;  // bound to a loopback address (the Host check applies)

    const Metrics& metrics() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace nazar::serve
