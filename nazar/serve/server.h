// `nazar serve`: an HTTP/1.1 translation server over the library's Translator (docs/serve.md).
//
//   GET  /                  the attention explorer (nazar/serve/www/, embedded at build time)
//   POST /v1/translate      translate (request.h), batched across requests (batcher.h)
//   GET  /v1/models         the models, their configurations and vocabulary sizes
//   GET  /health            {"status": "ok"} (503 "draining" once shutdown began)
//   GET  /metrics           Prometheus text (metrics.h)
//
// Limits: the body size (413), sentences per request and tokens per sentence (400 with the
// reason), the queue bound (503 with Retry-After), the per-request timeout (504), invalid UTF-8
// and malformed JSON (400); every error is {"error": "one line", "status": N}.
// Shutdown: stop() (from a signal-watching thread) closes the listening socket, lets the requests
// already received finish (the batcher decodes them without waiting for its window), then run()
// returns.
#pragma once

#include "nazar/serve/batcher.h"
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
    std::chrono::milliseconds timeout{30000};  // per translate request, arrival to answer
    int http_threads = 128;                    // connections served at once
    int retry_after_s = 1;                     // Retry-After of a 503
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

    const Metrics& metrics() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace nazar::serve
