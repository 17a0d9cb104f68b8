// Prometheus text rendering of the server's counters (metrics.h).
#include "nazar/serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace nazar::serve {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double x) {
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), x);  // first bound >= x
    ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
    sum_ += x;
    ++count_;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view help) const {
    auto o = std::back_inserter(out);
    fmt::format_to(o, "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    int64_t cum = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
        cum += counts_[i];
        fmt::format_to(o, "{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
    }
    cum += counts_.back();
    fmt::format_to(o, "{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name,
                   sum_, name, count_);
}

namespace {
std::vector<double> size_bounds() {
    return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
}
}  // namespace

Metrics::Metrics(std::vector<std::string> paths)
    : paths_(std::move(paths)),
      latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      batch_requests_(size_bounds()),
      batch_sentences_(size_bounds()),
      start_(std::chrono::steady_clock::now()) {}

void Metrics::count_request(std::string_view path, int status) {
    const bool known = std::find(paths_.begin(), paths_.end(), path) != paths_.end();
    std::lock_guard lk(m_);
    ++requests_[{known ? std::string(path) : std::string("other"), status}];
}

void Metrics::observe_translate_latency(double seconds) {
    std::lock_guard lk(m_);
    latency_.observe(seconds);
}

void Metrics::count_batch(int requests, int sentences, int64_t source_tokens, int64_t target_tokens,
                          double decode_seconds, int cancelled) {
    std::lock_guard lk(m_);
    cancelled_ += cancelled;
    batch_requests_.observe(requests);
    batch_sentences_.observe(sentences);
    ++batches_;
    if (requests > 1) ++multi_batches_;
    sentences_ += sentences;
    src_tokens_ += source_tokens;
    tgt_tokens_ += target_tokens;
    decode_seconds_ += decode_seconds;
}

int64_t Metrics::requests_with_status(int status) const {
    std::lock_guard lk(m_);
    int64_t n = 0;
    for (const auto& [key, count] : requests_)
        if (key.second == status) n += count;
    return n;
}

int64_t Metrics::batches_larger_than_one() const {
    std::lock_guard lk(m_);
    return multi_batches_;
}

std::string Metrics::render(const Gauges& g) const {
    std::lock_guard lk(m_);
    std::string out;
    auto o = std::back_inserter(out);
    out +=
        "# HELP nazar_http_requests_total HTTP requests answered, by route and status.\n"
        "# TYPE nazar_http_requests_total counter\n";
    std::map<int, int64_t> errors;
    for (const auto& [key, count] : requests_) {
        fmt::format_to(o, "nazar_http_requests_total{{path=\"{}\",status=\"{}\"}} {}\n", key.first,
                       key.second, count);
        if (key.second >= 400) errors[key.second] += count;
    }
    out +=
        "# HELP nazar_http_errors_total HTTP answers with an error status (>= 400).\n"
        "# TYPE nazar_http_errors_total counter\n";
    for (const auto& [status, count] : errors)
        fmt::format_to(o, "nazar_http_errors_total{{status=\"{}\"}} {}\n", status, count);
    latency_.render(out, "nazar_request_duration_seconds",
                    "POST /v1/translate latency, from arrival to answer.");
    fmt::format_to(o,
                   "# HELP nazar_queue_depth Translate requests waiting for a batch.\n"
                   "# TYPE nazar_queue_depth gauge\nnazar_queue_depth {}\n"
                   "# HELP nazar_queue_capacity Most requests that may wait (--queue).\n"
                   "# TYPE nazar_queue_capacity gauge\nnazar_queue_capacity {}\n"
                   "# HELP nazar_in_flight_requests Translate requests accepted, not answered.\n"
                   "# TYPE nazar_in_flight_requests gauge\nnazar_in_flight_requests {}\n"
                   "# HELP nazar_http_connections Open client connections.\n"
                   "# TYPE nazar_http_connections gauge\nnazar_http_connections {}\n"
                   "# HELP nazar_http_connections_refused_total Connections answered 503 at "
                   "--max-connections.\n"
                   "# TYPE nazar_http_connections_refused_total counter\n"
                   "nazar_http_connections_refused_total {}\n"
                   "# HELP nazar_http_timeouts_total Connections closed by a header, body or "
                   "write timeout.\n"
                   "# TYPE nazar_http_timeouts_total counter\nnazar_http_timeouts_total {}\n",
                   g.queue_depth, g.queue_capacity, g.in_flight, g.connections,
                   g.connections_refused, g.timeouts);
    batch_requests_.render(out, "nazar_batch_requests", "Requests decoded in one batch.");
    batch_sentences_.render(out, "nazar_batch_sentences", "Sentences decoded in one batch.");
    const double tps = decode_seconds_ > 0 ? static_cast<double>(tgt_tokens_) / decode_seconds_ : 0;
    const double up =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::format_to(o,
                   "# HELP nazar_batches_total Batched beam searches run.\n"
                   "# TYPE nazar_batches_total counter\nnazar_batches_total {}\n"
                   "# HELP nazar_sentences_total Sentences translated.\n"
                   "# TYPE nazar_sentences_total counter\nnazar_sentences_total {}\n"
                   "# HELP nazar_sentences_cancelled_total Sentences stopped before their end "
                   "(timeout, client gone).\n"
                   "# TYPE nazar_sentences_cancelled_total counter\n"
                   "nazar_sentences_cancelled_total {}\n"
                   "# HELP nazar_source_tokens_total Source tokens read.\n"
                   "# TYPE nazar_source_tokens_total counter\nnazar_source_tokens_total {}\n"
                   "# HELP nazar_target_tokens_total Target tokens written (best hypotheses).\n"
                   "# TYPE nazar_target_tokens_total counter\nnazar_target_tokens_total {}\n"
                   "# HELP nazar_decode_seconds_total Time spent decoding batches.\n"
                   "# TYPE nazar_decode_seconds_total counter\nnazar_decode_seconds_total {}\n"
                   "# HELP nazar_tokens_per_second Target tokens per second of decoding.\n"
                   "# TYPE nazar_tokens_per_second gauge\nnazar_tokens_per_second {}\n"
                   "# HELP nazar_uptime_seconds Seconds since the server started.\n"
                   "# TYPE nazar_uptime_seconds gauge\nnazar_uptime_seconds {}\n",
                   batches_, sentences_, cancelled_, src_tokens_, tgt_tokens_, decode_seconds_, tps,
                   up);
    return out;
}

}  // namespace nazar::serve
