// Cross-request batching: one bounded queue, `decoders` decoder threads (batcher.h).
#include "nazar/serve/batcher.h"

#include "nazar/core/check.h"

#include <algorithm>
#include <exception>

namespace nazar::serve {

using Clock = std::chrono::steady_clock;

Batcher::Batcher(const BatcherConfig& config, Metrics& metrics)
    : config_(config), metrics_(metrics) {
    if (config_.max_requests < 1 || config_.capacity < 1 || config_.max_tokens < 1 ||
        config_.decoder_batch < 1 || config_.decoders < 1 || config_.window.count() < 0)
        throw UsageError(
            "batcher: max requests, capacity, token budget, decoder batch and decoders must "
            "be >= 1 and the window >= 0");
    for (int i = 0; i < config_.decoders; ++i) threads_.emplace_back([this] { run(); });
}

Batcher::~Batcher() {
    stop();
}

bool Batcher::submit(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard lk(m_);
        if (stopping_ || static_cast<int>(queue_.size()) >= config_.capacity) return false;
        job->key = job->request.batch_key();
        queue_.push_back(job);
    }
    work_.notify_one();
    return true;
}

bool Batcher::wait(const std::shared_ptr<Job>& job, Clock::time_point deadline) {
    {
        std::unique_lock lk(m_);
        if (done_.wait_until(lk, deadline, [&] { return job->done; })) return true;
    }
    abandon(job);
    return false;
}

void Batcher::abandon(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard lk(m_);
        if (job->done) return;
        job->abandoned = true;
        if (!job->running) {
            const auto it = std::find(queue_.begin(), queue_.end(), job);
            if (it != queue_.end()) queue_.erase(it);
        }
    }
    work_.notify_all();  // a window may wait on it as the first job
}

void Batcher::drain() {
    {
        std::lock_guard lk(m_);
        draining_ = true;
    }
    work_.notify_all();
}

void Batcher::stop() {
    {
        std::lock_guard lk(m_);
        draining_ = true;
        stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
}

int64_t Batcher::queue_depth() const {
    std::lock_guard lk(m_);
    return static_cast<int64_t>(queue_.size());
}

std::vector<std::shared_ptr<Job>> Batcher::take_batch(std::unique_lock<std::mutex>& lk) {
    for (;;) {
        work_.wait(lk, [&] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) return {};  // stopping, nothing left
        const std::shared_ptr<Job> first = queue_.front();
        // Full: the waiting jobs of the first one's kind reach the request or token budget.
        const auto full = [&] {
            int n = 0;
            int64_t tokens = 0, work = 0;
            for (const auto& j : queue_)
                if (j->key == first->key) ++n, tokens += j->tokens, work += j->work;
            return n >= config_.max_requests || tokens >= config_.max_tokens ||
                   work >= config_.max_work;
        };
        const Clock::time_point deadline =
            first->arrived + std::chrono::duration_cast<Clock::duration>(config_.window);
        work_.wait_until(lk, deadline, [&] {
            return draining_ || queue_.empty() || queue_.front() != first || full();
        });
        if (queue_.empty() || queue_.front() != first) continue;  // it was abandoned meanwhile
        // Jobs whose client left while they waited go without a word.
        std::erase_if(queue_, [](const auto& j) { return j->cancelled && j->cancelled(); });
        if (queue_.empty() || queue_.front() != first) continue;

        std::vector<std::shared_ptr<Job>> batch;
        int64_t tokens = 0, work = 0;
        for (auto it = queue_.begin(); it != queue_.end();) {
            const auto& j = *it;
            const bool fits =
                batch.empty() ||
                (static_cast<int>(batch.size()) < config_.max_requests &&
                 tokens + j->tokens <= config_.max_tokens && work + j->work <= config_.max_work);
            if (j->key == first->key && fits) {
                tokens += j->tokens;
                work += j->work;
                j->running = true;
                batch.push_back(j);
                it = queue_.erase(it);
            } else {
                ++it;
            }
        }
        return batch;
    }
}

void Batcher::run() {
    std::unique_lock lk(m_);
    for (;;) {
        std::vector<std::shared_ptr<Job>> batch = take_batch(lk);
        if (batch.empty()) return;
        lk.unlock();
        decode(batch);
        lk.lock();
    }
}

namespace {

// Each job's constraints, in sentence order (none when no job has any).
std::vector<TextConstraints> batch_constraints(const std::vector<std::shared_ptr<Job>>& batch) {
    std::vector<TextConstraints> out;
    if (std::none_of(batch.begin(), batch.end(),
                     [](const auto& j) { return !j->request.constraints.empty(); }))
        return out;
    for (const auto& j : batch) {
        const auto& c = j->request.constraints;
        if (c.empty())
            out.resize(out.size() + j->request.text.size());
        else
            out.insert(out.end(), c.begin(), c.end());
    }
    return out;
}

// Translates one job alone (after its batch failed): its own error, not its neighbours'.
void decode_alone(Job& job, const TranslationOptions& opt) {
    try {
        job.translations = job.translator->translate(job.request.text, opt);
        job.status = 200;
    } catch (const Error& e) {  // the input or the options: the library's one-line message
        job.status = 400;
        job.error = e.what();
    } catch (const std::exception& e) {
        job.status = 500;
        job.error = detail::one_line(e.what());
    }
}

}  // namespace

bool Batcher::unwanted(const Job& j) const {
    return j.abandoned || (j.cancelled && j.cancelled());
}

void Batcher::decode(std::vector<std::shared_ptr<Job>>& batch) {
    const Clock::time_point start = Clock::now();
    TranslationOptions opt = batch.front()->request.options();
    opt.batch_size = config_.decoder_batch;
    std::vector<std::string> sentences;
    std::vector<const Job*> owner;  // of each sentence
    for (const auto& j : batch) {
        sentences.insert(sentences.end(), j->request.text.begin(), j->request.text.end());
        owner.insert(owner.end(), j->request.text.size(), j.get());
    }
    // A job that timed out (abandoned) or whose client left stops at the next decoder step.
    opt.cancelled = [this, &owner](std::size_t i) { return unwanted(*owner[i]); };
    const std::vector<TextConstraints> constraints = batch_constraints(batch);
    opt.constraints = constraints;
    // Results go into the jobs only under the lock (callers read them once `done` is set).
    std::vector<std::vector<Translation>> results(batch.size());
    std::vector<int> status(batch.size(), 200);
    std::vector<std::string> errors(batch.size());
    bool together = true;
    try {
        std::vector<Translation> all = batch.front()->translator->translate(sentences, opt);
        std::size_t k = 0;
        for (std::size_t b = 0; b < batch.size(); ++b) {
            const std::size_t n = batch[b]->request.text.size();
            results[b].assign(
                std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(k)),
                std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(k + n)));
            k += n;
        }
    } catch (const std::exception&) {
        together = false;  // one job's input failed: decode each alone, so only it fails
    }
    if (!together) {
        for (std::size_t b = 0; b < batch.size(); ++b) {
            Job alone;
            alone.translator = batch[b]->translator;
            alone.request = batch[b]->request;
            TranslationOptions o = opt;
            o.cancelled = [this, &j = *batch[b]](std::size_t) { return unwanted(j); };
            o.constraints = batch[b]->request.constraints;
            decode_alone(alone, o);
            results[b] = std::move(alone.translations);
            status[b] = alone.status;
            errors[b] = std::move(alone.error);
        }
    }
    const Clock::time_point end = Clock::now();
    const double decode_s = std::chrono::duration<double>(end - start).count();

    int64_t src_tokens = 0, tgt_tokens = 0;
    int cancelled = 0;
    for (std::size_t b = 0; b < batch.size(); ++b) {
        src_tokens += batch[b]->tokens;
        for (const Translation& t : results[b]) {
            cancelled += t.cancelled ? 1 : 0;
            if (!t.hypotheses.empty())
                tgt_tokens += static_cast<int64_t>(t.hypotheses.front().tokens.size());
        }
    }
    metrics_.count_batch(static_cast<int>(batch.size()), static_cast<int>(sentences.size()),
                         src_tokens, tgt_tokens, decode_s, cancelled);
    std::vector<Job*> callbacks;
    {
        std::lock_guard lk(m_);
        for (std::size_t b = 0; b < batch.size(); ++b) {
            Job& j = *batch[b];
            j.running = false;
            if (j.abandoned || (j.cancelled && j.cancelled())) continue;
            if (j.on_done) callbacks.push_back(&j);
            j.translations = std::move(results[b]);
            j.status = status[b];
            j.error = std::move(errors[b]);
            j.batch.requests = static_cast<int>(batch.size());
            j.batch.sentences = static_cast<int>(sentences.size());
            j.batch.queue_ms = std::chrono::duration<double, std::milli>(start - j.arrived).count();
            j.batch.decode_ms = decode_s * 1000;
            j.done = true;
        }
    }
    done_.notify_all();
    for (Job* j : callbacks) j->on_done();  // `batch` holds them alive
}

}  // namespace nazar::serve
