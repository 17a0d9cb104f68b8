// The HTTP front of `nazar serve` on cpp-httplib (server.h; why this library: docs/serve.md).
#include "nazar/serve/server.h"

#include "nazar/core/check.h"
#include "nazar/serve/assets.h"

#include <fmt/format.h>
#include <httplib.h>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace nazar::serve {

using Clock = std::chrono::steady_clock;

namespace {

const char* kJson = "application/json";

// Routes counted by name in the metrics (anything else is "other").
std::vector<std::string> metric_paths() {
    std::vector<std::string> p = {"/v1/translate", "/v1/models", "/health", "/metrics"};
    for (const Asset& a : www_assets()) p.emplace_back(a.path);
    return p;
}

void set_error(httplib::Response& res, int status, std::string_view message) {
    res.status = status;
    res.set_content(error_body(status, message), kJson);
}

// The message of an error httplib answered itself (its body is empty).
std::string builtin_error_message(const httplib::Request& req, int status, std::size_t max_body) {
    switch (status) {
        case 404:
            return fmt::format(
                "no route {} {} (routes: GET /, POST /v1/translate, GET /v1/models, "
                "GET /health, GET /metrics)",
                req.method, req.path.substr(0, 200));
        case 413:
            return fmt::format(
                "request body of {} bytes exceeds the limit of {} bytes "
                "(--max-body-bytes)",
                req.get_header_value("Content-Length").substr(0, 20), max_body);
        case 414:
            return "request URI too long";
        case 400:
            return "bad HTTP request";
        default:
            return fmt::format("HTTP error {}", status);
    }
}

}  // namespace

struct Server::Impl {
    ServerConfig cfg;
    std::vector<NamedModel> models;
    Metrics metrics{metric_paths()};
    Batcher batcher;
    httplib::Server http;
    std::atomic<int64_t> in_flight{0};
    std::atomic<bool> draining{false};
    int listen_fd = -1;  // the socket httplib binds (set_socket_options sees it first)
    std::mutex m;
    std::condition_variable cv;
    bool stop_requested = false;
    bool bound = false;

    Impl(const ServerConfig& c, std::vector<NamedModel> ms)
        : cfg(c), models(std::move(ms)), batcher(c.batcher, metrics) {}

    const NamedModel& find_model(const std::string& name) const {
        if (name.empty()) return models.front();
        for (const NamedModel& nm : models)
            if (nm.name == name) return nm;
        std::string names;
        for (const NamedModel& nm : models) names += (names.empty() ? "" : ", ") + nm.name;
        throw HttpError(400,
                        fmt::format("unknown model '{}' (models: {})", name.substr(0, 100), names));
    }

    void translate(const httplib::Request& req, httplib::Response& res);
    void routes();
};

void Server::Impl::translate(const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point arrived = Clock::now();
    // Counted until the answer is set, whatever leaves this function (an exception other than
    // HttpError becomes a 500 in httplib's exception handler).
    struct InFlight {
        Impl& d;
        Clock::time_point t0;
        explicit InFlight(Impl& impl, Clock::time_point t) : d(impl), t0(t) { ++d.in_flight; }
        ~InFlight() {
            --d.in_flight;
            d.metrics.observe_translate_latency(
                std::chrono::duration<double>(Clock::now() - t0).count());
        }
    } guard(*this, arrived);
    try {
        if (draining) throw HttpError(503, "the server is shutting down");
        TranslateRequest r = parse_translate_request(req.body, cfg.limits);
        const NamedModel& model = find_model(r.model);
        r.model = model.name;  // the default model's requests batch with the named ones
        int64_t tokens = 0;
        const std::size_t n = r.text.size();
        for (std::size_t i = 0; i < n; ++i) {
            std::size_t count = 0;
            try {
                count = model.translator->source_pieces(r.text[i]).size();
            } catch (const Error& e) {
                throw HttpError(400, fmt::format("sentence {} of {}: {}", i + 1, n, e.what()));
            }
            if (count > static_cast<std::size_t>(cfg.limits.max_tokens))
                throw HttpError(400, fmt::format("sentence {} of {}: {} tokens exceed the limit "
                                                 "of {} (--max-tokens)",
                                                 i + 1, n, count, cfg.limits.max_tokens));
            tokens += static_cast<int64_t>(count);
        }
        auto job = std::make_shared<Job>();
        job->translator = model.translator;
        job->request = std::move(r);
        job->tokens = tokens;
        job->arrived = arrived;
        if (!batcher.submit(job)) {
            res.set_header("Retry-After", std::to_string(cfg.retry_after_s));
            throw HttpError(503, fmt::format("the queue is full ({} requests wait, --queue); "
                                             "retry later",
                                             batcher.capacity()));
        }
        if (!batcher.wait(job, arrived + cfg.timeout))
            throw HttpError(
                504, fmt::format("no answer within {} ms (--timeout-ms)", cfg.timeout.count()));
        if (job->status != 200) throw HttpError(job->status, job->error);
        res.set_content(
            translation_response(job->request, model.name, job->translations, job->batch), kJson);
    } catch (const HttpError& e) {
        set_error(res, e.status(), e.what());
    }
}

void Server::Impl::routes() {
    for (const Asset& a : www_assets()) {
        const Asset asset = a;
        http.Get(asset.path, [asset](const httplib::Request&, httplib::Response& res) {
            res.set_content(reinterpret_cast<const char*>(asset.data), asset.size,
                            asset.content_type);
            // Everything the page uses comes from this server: no CDN, no inline code.
            res.set_header("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                           "base-uri 'none'; frame-ancestors 'none'");
            res.set_header("X-Content-Type-Options", "nosniff");
            res.set_header("Cache-Control", "no-cache");
        });
    }
    http.Post("/v1/translate",
              [this](const httplib::Request& req, httplib::Response& res) { translate(req, res); });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(models_body(models), kJson);
    });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        const bool d = draining;
        res.status = d ? 503 : 200;
        res.set_content(fmt::format(R"({{"status":"{}","models":{},"queue_depth":{}}})",
                                    d ? "draining" : "ok", models.size(), batcher.queue_depth()),
                        kJson);
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        const Gauges g{.queue_depth = batcher.queue_depth(),
                       .queue_capacity = batcher.capacity(),
                       .in_flight = in_flight.load()};
        res.set_content(metrics.render(g), "text/plain; version=0.0.4; charset=utf-8");
    });
    // The wrong method on a known route: 405 with Allow.
    const auto not_allowed = [](const char* allow) {
        return [allow](const httplib::Request& req, httplib::Response& res) {
            res.set_header("Allow", allow);
            set_error(res, 405,
                      fmt::format("method {} not allowed on {} (allowed: {})", req.method, req.path,
                                  allow));
        };
    };
    http.Get("/v1/translate", not_allowed("POST"));
    for (const char* p : {"/v1/models", "/health", "/metrics"}) http.Post(p, not_allowed("GET"));

    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
            set_error(res, res.status,
                      builtin_error_message(req, res.status, cfg.limits.max_body_bytes));
            return httplib::Server::HandlerResponse::Handled;
        }));
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "internal error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = detail::one_line(e.what());
            } catch (...) {
            }
            set_error(res, 500, what);
        });
    // Counted once the answer is final (after the error handler) and before it is written:
    // httplib calls a logger only after the client has the whole answer, so a client's next
    // request (GET /metrics) could be served before its previous answer was counted.
    http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        metrics.count_request(req.path, res.status);
    });
}

Server::Server(const ServerConfig& config, std::vector<NamedModel> models) {
    if (models.empty()) throw UsageError("nazar serve needs at least one --model");
    if (config.http_threads < 1)
        throw UsageError(fmt::format("--http-threads must be >= 1, got {}", config.http_threads));
    impl_ = std::make_unique<Impl>(config, std::move(models));
    Impl& d = *impl_;
    d.routes();
    d.http.set_payload_max_length(config.limits.max_body_bytes);
    d.http.set_socket_options([&d](socket_t sock) {
        httplib::default_socket_options(sock);
        d.listen_fd = sock;  // the last socket tried is the one bound
    });
    d.http.set_tcp_nodelay(true);  // headers and body leave at once (no Nagle + delayed ACK)
    d.http.set_keep_alive_max_count(100000);
    d.http.set_keep_alive_timeout(5);
    d.http.set_read_timeout(10);
    d.http.set_write_timeout(10);
    const int threads = config.http_threads;
    d.http.new_task_queue = [threads] {
        return new httplib::ThreadPool(static_cast<std::size_t>(threads));
    };
}

Server::~Server() {
    stop();
    impl_->batcher.stop();
}

int Server::bind() {
    Impl& d = *impl_;
    const int port = d.cfg.port == 0
                         ? d.http.bind_to_any_port(d.cfg.host)
                         : (d.http.bind_to_port(d.cfg.host, d.cfg.port) ? d.cfg.port : -1);
    if (port < 0)
        throw Error(
            fmt::format("cannot listen on {}:{} (in use, not a local address, or not "
                        "allowed)",
                        d.cfg.host, d.cfg.port));
    // httplib 0.11 listens with a backlog of 5: of a burst of more connections than that (a
    // page's parallel requests, clients starting together) the kernel reset some before the
    // server saw them. Listening again on the bound socket sets a larger backlog.
    if (::listen(d.listen_fd, SOMAXCONN) != 0)
        throw Error(
            fmt::format("cannot listen on {}:{}: {}", d.cfg.host, port, std::strerror(errno)));
    d.bound = true;
    return port;
}

void Server::run() {
    Impl& d = *impl_;
    if (!d.bound) bind();
    std::atomic<bool> listening_done{false};
    bool listened_ok = true;
    std::thread listener([&] {
        listened_ok = d.http.listen_after_bind();
        listening_done = true;
        std::lock_guard lk(d.m);
        d.cv.notify_all();
    });
    {
        std::unique_lock lk(d.m);
        d.cv.wait(lk, [&] { return d.stop_requested || listening_done.load(); });
    }
    // Stop accepting: httplib's stop() acts only once its loop runs (is_running), so wait for
    // that; the requests already received are answered before listen_after_bind returns.
    d.batcher.drain();
    while (!listening_done) {
        if (d.http.is_running()) {
            d.http.stop();
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    listener.join();
    d.batcher.stop();
    bool stopped = false;
    {
        std::lock_guard lk(d.m);
        stopped = d.stop_requested;
    }
    if (!listened_ok && !stopped)
        throw Error(fmt::format("the server on {}:{} stopped accepting connections (accept failed)",
                                d.cfg.host, d.cfg.port));
}

void Server::stop() {
    Impl& d = *impl_;
    d.draining = true;
    {
        std::lock_guard lk(d.m);
        d.stop_requested = true;
    }
    d.cv.notify_all();
}

const Metrics& Server::metrics() const {
    return impl_->metrics;
}

}  // namespace nazar::serve
