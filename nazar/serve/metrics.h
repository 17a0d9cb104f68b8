// The server's counters, rendered for GET /metrics in the Prometheus text format (version 0.0.4):
//
//   nazar_http_requests_total{path,status}   counter: answered requests (path: one of the
//                                            server's routes, or "other")
//   nazar_http_errors_total{status}          counter: answers with status >= 400
//   nazar_request_duration_seconds           histogram: POST /v1/translate, arrival to answer
//   nazar_queue_depth, nazar_queue_capacity  gauges: requests waiting for a batch, the bound
//   nazar_in_flight_requests                 gauge: translate requests accepted, not answered
//   nazar_http_connections                   gauge: open client connections
//   nazar_http_connections_refused_total     counter: answered 503 at --max-connections
//   nazar_http_timeouts_total                counter: closed by a header, body or write timeout
//   nazar_batch_requests, nazar_batch_sentences   histograms: the size of each decoded batch
//   nazar_batches_total                      counter: batched beam searches run
//   nazar_sentences_cancelled_total          counter: sentences stopped by a timeout or hang-up
//   nazar_sentences_total, nazar_source_tokens_total, nazar_target_tokens_total   counters
//   nazar_decode_seconds_total               counter: time spent in batched decoding
//   nazar_tokens_per_second                  gauge: target tokens / decode seconds, all batches
//   nazar_uptime_seconds                     gauge
// Thread-safe: every method may be called from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nazar::serve {

// A cumulative histogram with fixed upper bounds (the +Inf bucket is implicit).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double x);
    // Appends the _bucket/_sum/_count lines of metric `name` (HELP/TYPE lines included).
    void render(std::string& out, std::string_view name, std::string_view help) const;
    int64_t count() const { return count_; }

private:
    std::vector<double> bounds_;
    std::vector<int64_t> counts_;  // per bound, not cumulative; the last one is +Inf
    double sum_ = 0;
    int64_t count_ = 0;
};

// Values owned by others (the batcher), read when /metrics is rendered.
struct Gauges {
    int64_t queue_depth = 0;
    int64_t queue_capacity = 0;
    int64_t in_flight = 0;
    int64_t connections = 0, connections_refused = 0, timeouts = 0;  // connections.h
};

class Metrics {
public:
    // `paths`: the routes counted by name; any other path counts as "other".
    explicit Metrics(std::vector<std::string> paths);

    void count_request(std::string_view path, int status);
    void observe_translate_latency(double seconds);
    // `cancelled`: sentences of the batch stopped before their end (Translation::cancelled).
    void count_batch(int requests, int sentences, int64_t source_tokens, int64_t target_tokens,
                     double decode_seconds, int cancelled = 0);

    std::string render(const Gauges& g) const;

    // For tests: answers so far with this status (all paths), batches with more than one request.
    int64_t requests_with_status(int status) const;
    int64_t batches_larger_than_one() const;

private:
    mutable std::mutex m_;
    std::vector<std::string> paths_;
    std::map<std::pair<std::string, int>, int64_t> requests_;  // (path, status) -> count
    Histogram latency_;
    Histogram batch_requests_, batch_sentences_;
    int64_t batches_ = 0, multi_batches_ = 0, sentences_ = 0, cancelled_ = 0, src_tokens_ = 0,
            tgt_tokens_ = 0;
    double decode_seconds_ = 0;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace nazar::serve
