// The HTTP front of `nazar serve` (server.h): access checks, routes, and the translate path
// from the event loop (connections.h) through the workers to the batcher and back.
#include "nazar/serve/server.h"

#include "nazar/core/check.h"
#include "nazar/serve/assets.h"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace nazar::serve {

using Clock = std::chrono::steady_clock;

namespace {

// Routes counted by name in the metrics (anything else is "other").
std::vector<std::string> metric_paths() {
    std::vector<std::string> p = {"/v1/translate", "/v1/models", "/health", "/metrics"};
    for (const Asset& a : www_assets()) p.emplace_back(a.path);
    return p;
}

HttpResponse error_response(int status, std::string_view message) {
    return {.status = status, .body = error_body(status, message)};
}

// A few threads that parse requests and write answers, off the event loop and the decoder.
class Workers {
public:
    explicit Workers(int n) {
        for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
    }
    ~Workers() { stop(); }
    void post(std::function<void()> f) {
        {
            std::lock_guard lk(m_);
            tasks_.push_back(std::move(f));
        }
        cv_.notify_one();
    }
    void stop() {  // after the tasks already posted
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    void work() {
        for (;;) {
            std::function<void()> f;
            {
                std::unique_lock lk(m_);
                cv_.wait(lk, [&] { return stopping_ || !tasks_.empty(); });
                if (tasks_.empty()) return;
                f = std::move(tasks_.front());
                tasks_.pop_front();
            }
            f();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

bool is_loopback_ip(const std::string& h) {
    in_addr a4{};
    if (::inet_pton(AF_INET, h.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    in6_addr a6{};
    if (::inet_pton(AF_INET6, h.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

// A Host header naming this machine's loopback: localhost, 127.x.y.z or [::1], any port.
bool is_loopback_host(std::string_view host) {
    std::string h = ascii_lower(host);
    if (!h.empty() && h.front() == '[') {
        const std::size_t close = h.find(']');
        if (close == std::string::npos) return false;
        return is_loopback_ip(h.substr(1, close - 1));
    }
    if (const std::size_t colon = h.rfind(':'); colon != std::string::npos) h.resize(colon);
    if (!h.empty() && h.back() == '.') h.pop_back();
    return h == "localhost" || h.ends_with(".localhost") || is_loopback_ip(h);
}

// Compares in time that depends on the lengths only, not on where the bytes differ.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
        diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

std::string media_type(std::string_view content_type) {
    std::string_view t = content_type.substr(0, content_type.find(';'));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return ascii_lower(t);
}

// A translate request's job, shared by the worker that queues it and the reply's finish.
class JobSlot {
public:
    void set(std::shared_ptr<Job> j) {
        std::lock_guard lk(m_);
        job_ = std::move(j);
    }
    std::shared_ptr<Job> get() {
        std::lock_guard lk(m_);
        return job_;
    }

private:
    std::mutex m_;
    std::shared_ptr<Job> job_;
};

}  // namespace

struct Server::Impl {
    ServerConfig cfg;
    std::vector<NamedModel> models;
    Metrics metrics{metric_paths()};
    Batcher batcher;
    std::unique_ptr<HttpListener> http;
    Workers workers;
    std::atomic<int64_t> in_flight{0};
    std::atomic<bool> draining{false};
    bool bound = false, loopback = false;

    Impl(const ServerConfig& c, std::vector<NamedModel> ms)
        : cfg(c), models(std::move(ms)), batcher(c.batcher, metrics), workers(c.http_threads) {
        ConnectionLimits lim = cfg.connections;
        lim.max_body_bytes = cfg.limits.max_body_bytes;
        http = std::make_unique<HttpListener>(
            lim, [this](HttpRequest& req, Reply reply) { handle(req, std::move(reply)); },
            [this](const std::string& path, int status) { metrics.count_request(path, status); });
    }

    const NamedModel& find_model(const std::string& name) const {
        if (name.empty()) return models.front();
        for (const NamedModel& nm : models)
            if (nm.name == name) return nm;
        std::string names;
        for (const NamedModel& nm : models) names += (names.empty() ? "" : ", ") + nm.name;
        throw HttpError(400,
                        fmt::format("unknown model '{}' (models: {})", name.substr(0, 100), names));
    }

    std::optional<HttpResponse> refuse_access(const HttpRequest& req, bool asset) const;
    void add_cors(const HttpRequest& req, HttpResponse& res) const;
    void handle(HttpRequest& req, Reply reply);
    HttpResponse handle_get(const std::string& path);
    void translate(HttpRequest& req, Reply reply);
    using Headers = std::vector<std::pair<std::string, std::string>>;
    void prepare(std::string body, Reply reply, Clock::time_point arrived, JobSlot& slot,
                 const Headers& cors);
    void finish_drain_if_idle() {
        if (draining && in_flight.load() == 0) http->shutdown();
    }
};

// Host (DNS rebinding), Origin (cross-site pages) and the API key, in that order.
std::optional<HttpResponse> Server::Impl::refuse_access(const HttpRequest& req, bool asset) const {
    const auto host = req.header("host");
    if (loopback && host && !is_loopback_host(*host))
        return error_response(403, fmt::format("Host '{}' refused: this server listens on "
                                               "loopback and answers only loopback names "
                                               "(localhost, 127.0.0.1, [::1])",
                                               host->substr(0, 100)));
    if (const auto origin = req.header("origin")) {
        // The explorer's own origin: the scheme it was served over, and the Host it names.
        const std::string own = cfg.tls_cert.empty() ? "http://" : "https://";
        const bool same = host && ascii_lower(*origin) == own + ascii_lower(*host);
        const bool allowed = std::any_of(
            cfg.allow_origins.begin(), cfg.allow_origins.end(), [&](const std::string& o) {
                return o == "*" || ascii_lower(o) == ascii_lower(*origin);
            });
        if (!same && !allowed)
            return error_response(403, fmt::format("cross-origin request from '{}' refused "
                                                   "(allow it with --allow-origin)",
                                                   origin->substr(0, 100)));
    }
    if (!cfg.api_keys.empty() && !asset && req.path != "/health") {
        const std::string_view auth = req.header("authorization").value_or("");
        const bool bearer = auth.size() > 7 && ascii_lower(auth.substr(0, 7)) == "bearer ";
        bool ok = false;
        for (const std::string& key : cfg.api_keys)
            ok |= bearer && same_secret(auth.substr(7), key);
        if (!ok) {
            HttpResponse r = error_response(401, bearer ? "the API key is not valid"
                                                        : "this server needs an API key: "
                                                          "Authorization: Bearer KEY");
            r.headers.emplace_back("WWW-Authenticate", "Bearer");
            return r;
        }
    }
    return std::nullopt;
}

void Server::Impl::add_cors(const HttpRequest& req, HttpResponse& res) const {
    const auto origin = req.header("origin");
    if (!origin || cfg.allow_origins.empty()) return;
    res.headers.emplace_back("Access-Control-Allow-Origin", std::string(*origin));
    res.headers.emplace_back("Vary", "Origin");
}

HttpResponse Server::Impl::handle_get(const std::string& path) {
    if (path == "/health") {
        const bool d = draining;
        return {
            .status = d ? 503 : 200,
            .body = fmt::format(R"({{"status":"{}","models":{},"queue_depth":{},"in_flight":{},)"
                                R"("connections":{}}})",
                                d ? "draining" : "ok", models.size(), batcher.queue_depth(),
                                in_flight.load(), http->stats().open)};
    }
    if (path == "/metrics") {
        const ConnectionStats cs = http->stats();
        const Gauges g{.queue_depth = batcher.queue_depth(),
                       .queue_capacity = batcher.capacity(),
                       .in_flight = in_flight.load(),
                       .connections = cs.open,
                       .connections_refused = cs.refused,
                       .timeouts = cs.timed_out};
        return {.content_type = "text/plain; version=0.0.4; charset=utf-8",
                .body = metrics.render(g)};
    }
    if (path == "/v1/models") return {.body = models_body(models)};
    for (const Asset& a : www_assets()) {
        if (path != a.path) continue;
        HttpResponse r{.content_type = a.content_type,
                       .body = std::string(reinterpret_cast<const char*>(a.data), a.size)};
        // Everything the page uses comes from this server: no CDN, no inline code.
        r.headers = {{"Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                      "base-uri 'none'; frame-ancestors 'none'"},
                     {"X-Content-Type-Options", "nosniff"},
                     {"Cache-Control", "no-cache"}};
        return r;
    }
    return error_response(404, "");  // not reached: routes are checked before
}

void Server::Impl::handle(HttpRequest& req, Reply reply) {
    const std::string& path = req.path;
    bool asset = false;
    for (const Asset& a : www_assets()) asset |= path == a.path;
    const bool get_route = asset || path == "/health" || path == "/metrics" || path == "/v1/models";
    const bool post_route = path == "/v1/translate";
    if (!get_route && !post_route) {
        reply.send(error_response(
            404, fmt::format("no route {} {} (routes: GET /, POST /v1/translate, GET /v1/models, "
                             "GET /health, GET /metrics)",
                             req.method, path.substr(0, 200))));
        return;
    }
    if (auto refused = refuse_access(req, asset)) {
        reply.send(std::move(*refused));
        return;
    }
    const char* allow = post_route ? "POST" : "GET, HEAD";
    HttpResponse res;
    const auto origin = req.header("origin");
    if (req.method == "OPTIONS" && origin && !cfg.allow_origins.empty() &&
        req.header("access-control-request-method")) {  // a preflight (refuse_access allowed it)
        res = {.status = 204, .content_type = ""};
        res.headers = {{"Access-Control-Allow-Methods", allow},
                       {"Access-Control-Allow-Headers", "Content-Type, Authorization"},
                       {"Access-Control-Max-Age", "600"}};
    } else if (post_route && req.method == "POST") {
        translate(req, std::move(reply));
        return;
    } else if (get_route && (req.method == "GET" || req.method == "HEAD")) {
        res = handle_get(path);
    } else {
        res = error_response(405, fmt::format("method {} not allowed on {} (allowed: {})",
                                              req.method.substr(0, 20), path, allow));
        res.headers = {{"Allow", allow}};
    }
    add_cors(req, res);
    reply.send(std::move(res));
}

// On the loop thread: the checks that need no parsing, then the rest on a worker.
void Server::Impl::translate(HttpRequest& req, Reply reply) {
    const Clock::time_point arrived = Clock::now();
    // Every answer carries the CORS headers: without them an allowed page sees no status.
    HttpResponse cors;
    add_cors(req, cors);
    const auto with_cors = [&cors](HttpResponse r) {
        r.headers.insert(r.headers.end(), cors.headers.begin(), cors.headers.end());
        return r;
    };
    const std::string type = media_type(req.header("content-type").value_or(""));
    if (type != "application/json") {
        reply.send(with_cors(error_response(
            415,
            fmt::format("Content-Type must be application/json, got '{}'", type.substr(0, 60)))));
        return;
    }
    if (draining) {
        reply.send(with_cors(error_response(503, "the server is shutting down")));
        return;
    }
    ++in_flight;
    auto slot = std::make_shared<JobSlot>();  // the job, once a worker queued it
    reply.on_finish([this, arrived, slot](int) {
        if (const std::shared_ptr<Job> job = slot->get()) batcher.abandon(job);  // if not done
        metrics.observe_translate_latency(
            std::chrono::duration<double>(Clock::now() - arrived).count());
        --in_flight;
        finish_drain_if_idle();
    });
    reply.set_deadline(arrived + cfg.timeout,
                       with_cors(error_response(504, fmt::format("no answer within {} ms "
                                                                 "(--timeout-ms)",
                                                                 cfg.timeout.count()))));
    workers.post([this, body = std::move(req.body), reply, arrived, cors, slot]() mutable {
        try {
            prepare(std::move(body), reply, arrived, *slot, cors.headers);
        } catch (const HttpError& e) {
            HttpResponse r = error_response(e.status(), e.what());
            r.headers = cors.headers;
            if (e.status() == 503)
                r.headers.emplace_back("Retry-After", std::to_string(cfg.retry_after_s));
            reply.send(std::move(r));
        } catch (const std::exception& e) {
            HttpResponse r = error_response(500, detail::one_line(e.what()));
            r.headers = cors.headers;
            reply.send(std::move(r));
        }
    });
}

// On a worker: parse, check the cost, queue; the answer is written by a worker too.
void Server::Impl::prepare(std::string body, Reply reply, Clock::time_point arrived, JobSlot& slot,
                           const Headers& cors) {
    if (reply.cancelled()) return;
    TranslateRequest r = parse_translate_request(body, cfg.limits);
    std::string().swap(body);
    const NamedModel& model = find_model(r.model);
    r.model = model.name;  // the default model's requests batch with the named ones
    r.apply_model_settings(model.translator->decode_defaults());
    std::vector<int> lengths;
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
        lengths.push_back(static_cast<int>(count));
    }
    const RequestCost cost = check_cost(r, lengths, cfg.limits);
    auto job = std::make_shared<Job>();
    job->translator = model.translator;
    job->request = std::move(r);
    for (const int len : lengths) job->tokens += len;
    job->work = cost.work;
    job->arrived = arrived;
    job->cancelled = [reply] { return reply.cancelled(); };
    std::weak_ptr<Job> weak = job;
    job->on_done = [this, reply, weak, name = model.name, cors] {
        // Called while the batcher holds the job: the task keeps it until the answer is out.
        workers.post([reply, j = weak.lock(), name, cors,
                      large_work = cfg.limits.max_work / 8]() mutable {
            if (!j || reply.cancelled()) return;
            HttpResponse r = j->status != 200
                                 ? error_response(j->status, j->error)
                                 : HttpResponse{.body = translation_response(
                                                    j->request, name, j->translations, j->batch)};
            r.headers = cors;
            reply.send(std::move(r));
            // A large request's memory goes back to the system, not only to malloc's free
            // lists (glibc keeps freed arena memory: one request would set RSS for good).
            if (j->work >= large_work) {
                j.reset();
                ::malloc_trim(0);
            }
        });
    };
    slot.set(job);
    if (!batcher.submit(job))
        throw HttpError(503, fmt::format("the queue is full ({} requests wait, --queue); "
                                         "retry later",
                                         batcher.capacity()));
    if (reply.cancelled()) batcher.abandon(job);  // cancelled before the slot was set
}

Server::Server(const ServerConfig& config, std::vector<NamedModel> models) {
    if (models.empty()) throw UsageError("nazar serve needs at least one --model");
    if (config.http_threads < 1)
        throw UsageError(fmt::format("--http-threads must be >= 1, got {}", config.http_threads));
    impl_ = std::make_unique<Impl>(config, std::move(models));
}

Server::~Server() {
    stop();
    impl_->batcher.stop();
    impl_->workers.stop();
}

int Server::bind() {
    Impl& d = *impl_;
    if (!d.cfg.tls_cert.empty() || !d.cfg.tls_key.empty()) {
        if (d.cfg.tls_cert.empty() || d.cfg.tls_key.empty())
            throw UsageError("--tls-cert and --tls-key go together");
        d.http->use_tls(d.cfg.tls_cert, d.cfg.tls_key);
    }
    const int port = d.http->bind(d.cfg.host, d.cfg.port);
    d.loopback = is_loopback_host(d.cfg.host);
    d.bound = true;
    return port;
}

bool Server::loopback() const {
    return impl_->loopback;  // set by bind()
}

void Server::run() {
    Impl& d = *impl_;
    if (!d.bound) bind();
    d.http->run();
    d.batcher.stop();
    d.workers.stop();
}

void Server::stop() {
    Impl& d = *impl_;
    d.draining = true;
    d.batcher.drain();  // windows close at once: what waits is decoded now
    d.finish_drain_if_idle();
}

const Metrics& Server::metrics() const {
    return impl_->metrics;
}

}  // namespace nazar::serve
