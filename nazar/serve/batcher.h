// Cross-request batching (docs/serve.md): HTTP threads submit jobs to one bounded queue;
// `decoders` decoder threads take them in batches, each running one batched beam search per
// batch through the library's Translator (which sorts the sentences by length into decoder
// batches), then hand each job its own translations. With several decoder threads, batches are
// decoded side by side; each Translator then needs as many replicas (decoding sessions over its
// one copy of the weights) for them not to wait on each other.
//
// A batch starts with the oldest waiting job and closes when `window` has passed since that
// job arrived, or when the waiting jobs of the same kind (model and decoding options:
// TranslateRequest::batch_key) fill `max_requests` or `max_tokens` source tokens, whichever
// comes first. Jobs of another kind wait for the next batch. Jobs that arrive while a batch is
// being decoded wait in the queue, so under load batches form without any window.
// max_requests = 1 turns batching off (one request per beam search), the baseline of the
// load test.
//
// Limits: at most `capacity` jobs wait (submit() refuses more: the server answers 503); a batch
// holds at most `max_work` hypothesis steps (Job::work), which bounds its decoding memory; a job
// whose caller stopped waiting (its timeout) or that Job::cancelled says is gone is dropped from
// the queue, or, while decoded, stops at the next decoder step (its neighbours go on).
// drain(): windows close at once (nothing more is coming), waiting jobs are still decoded;
// stop(): after the queue is empty, the decoder threads end.
#pragma once

#include "nazar/decode/translator.h"
#include "nazar/serve/metrics.h"
#include "nazar/serve/request.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nazar::serve {

struct BatcherConfig {
    std::chrono::microseconds window{5000};
    int max_requests = 256;      // requests per batch (1 = no cross-request batching)
    int64_t max_tokens = 8192;   // source tokens per batch (a larger single request runs alone)
    int64_t max_work = 1 << 18;  // hypothesis steps per batch (Job::work; one request may fill it)
    int capacity = 256;          // waiting requests
    int decoder_batch = 64;      // sentences per decoder batch inside one beam search
    int decoders = 1;            // decoder threads: batches decoded at the same time
};

// One request on its way through the queue. The caller fills the inputs; the batcher fills the
// outputs and sets `done` (read them after wait() returned true).
struct Job {
    // inputs
    const Translator* translator = nullptr;
    TranslateRequest request;
    std::string key;  // request.batch_key()
    int64_t tokens = 0;
    int64_t work = 0;  // hypothesis steps at most: Σ beam · max output length
    std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
    // Polled while queued and at every decoder step: true drops the job (its client left or
    // its time ran out); its sentences stop at the next step. Empty: never.
    std::function<bool()> cancelled;
    // Called once the outputs are set (done), on a decoder thread, outside the lock; a
    // cancelled job gets no call. Empty: callers wait().
    std::function<void()> on_done;

    // outputs (under the batcher's lock until done)
    bool done = false;
    int status = 200;   // != 200: `error` says why
    std::string error;  // one line
    std::vector<Translation> translations;
    BatchInfo batch;

private:
    friend class Batcher;
    std::atomic<bool> abandoned{false};  // the caller gave up: drop it (polled while decoding)
    bool running = false;                // in the batch being decoded
};

class Batcher {
public:
    Batcher(const BatcherConfig& config, Metrics& metrics);
    ~Batcher();  // stop()
    Batcher(const Batcher&) = delete;
    Batcher& operator=(const Batcher&) = delete;

    // Queues a job; false when the queue is full (the job is not queued).
    bool submit(const std::shared_ptr<Job>& job);
    // Waits until the job is done or `deadline` passes; on timeout the job is abandoned (dropped
    // from the queue, or its result discarded when it is being decoded) and false is returned.
    bool wait(const std::shared_ptr<Job>& job, std::chrono::steady_clock::time_point deadline);

    // Drops a job that is no longer wanted: out of the queue now, or, while decoded, stopped at
    // the next decoder step. Idempotent; a job already done is left as it is.
    void abandon(const std::shared_ptr<Job>& job);

    void drain();  // close windows at once from now on
    void stop();   // drain, decode what waits, end the decoder threads (idempotent)

    int64_t queue_depth() const;
    int capacity() const { return config_.capacity; }

private:
    void run();
    std::vector<std::shared_ptr<Job>> take_batch(std::unique_lock<std::mutex>& lk);
    void decode(std::vector<std::shared_ptr<Job>>& batch);
    bool unwanted(const Job& j) const;  // cancelled by its caller, or abandoned

    BatcherConfig config_;
    Metrics& metrics_;
    mutable std::mutex m_;
    std::condition_variable work_;  // the decoder threads wait here
    std::condition_variable done_;  // callers wait here
    std::deque<std::shared_ptr<Job>> queue_;
    bool draining_ = false, stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace nazar::serve
