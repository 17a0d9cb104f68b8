#include "nazar/data/batcher.h"

#include "nazar/core/check.h"
#include "nazar/core/rng.h"

#include <algorithm>
#include <numeric>

namespace nazar {

int64_t Batch::src_tokens() const {
    return std::accumulate(src_lengths.begin(), src_lengths.end(), int64_t{0});
}
int64_t Batch::tgt_tokens() const {
    return std::accumulate(tgt_lengths.begin(), tgt_lengths.end(), int64_t{0});
}

void PaddingStats::add(const Batch& b) {
    positions += static_cast<int64_t>(b.B) * (b.S + b.T);
    real += b.src_tokens() + b.tgt_tokens();
}

Batcher::Batcher(const Corpus& corpus, const BatchOptions& options)
    : corpus_(corpus), options_(options) {
    NZ_CHECK_USAGE(
        (options.batch_tokens > 0) != (options.batch_size > 0),
        "set exactly one of batch_tokens and batch_size (got batch_tokens={}, batch_size={})",
        options.batch_tokens, options.batch_size);
    NZ_CHECK_USAGE(options.bucket_width >= 0, "bucket_width must be >= 0 (0 = automatic), got {}",
                   options.bucket_width);
    NZ_CHECK_INPUT(corpus.size() > 0, "cannot batch an empty corpus");
    if (options.bucket && options.bucket_width > 0) width_ = options.bucket_width;
    if (options.bucket && options.bucket_width == 0) {
        // Pick the band that pads least on the unshuffled plan; ties go to the narrower band.
        double best = 2.0;
        for (int w : {1, 2, 3, 4, 6, 8, 12, 16}) {
            width_ = w;
            order(nullptr);
            cut();
            const double pad = planned_padding();
            if (pad < best - 1e-9) {
                best = pad;
                options_.bucket_width = w;
            }
        }
        width_ = options_.bucket_width;
    }
    plan(0);
}

void Batcher::order(Rng* rng) {
    const int64_t N = corpus_.size();
    order_.resize(static_cast<std::size_t>(N));
    std::iota(order_.begin(), order_.end(), int64_t{0});
    if (rng)
        for (int64_t i = N - 1; i > 0; --i)
            std::swap(order_[i],
                      order_[static_cast<int64_t>(rng->below(static_cast<uint64_t>(i + 1)))]);
    if (width_ == 0) return;
    const int w = width_;
    std::stable_sort(order_.begin(), order_.end(), [this, w](int64_t a, int64_t b) {
        const int sa = corpus_.src_length(a), sb = corpus_.src_length(b);
        const int band_a = sa / w, band_b = sb / w;
        if (band_a != band_b) return band_a < band_b;
        const int ta = corpus_.tgt_length(a), tb = corpus_.tgt_length(b);
        if (ta != tb) return (band_a % 2 == 0) ? ta < tb : ta > tb;
        return sa < sb;
    });
}

void Batcher::cut() {
    // Greedy: a pair joins the batch while the padded cost stays within the budget.
    const int64_t N = corpus_.size();
    bounds_.clear();
    int64_t begin = 0;
    int max_len = 0;
    for (int64_t i = 0; i < N; ++i) {
        const int64_t p = order_[i];
        const int len = std::max(corpus_.src_length(p), corpus_.tgt_length(p) + 1);
        const int64_t count = i - begin + 1;
        const bool fits = options_.batch_tokens > 0
                              ? count * std::max(max_len, len) <= options_.batch_tokens
                              : count <= options_.batch_size;
        if (!fits && i > begin) {
            bounds_.push_back({begin, i});
            begin = i;
            max_len = 0;
        }
        max_len = std::max(max_len, len);
    }
    bounds_.push_back({begin, N});
}

double Batcher::planned_padding() const {
    int64_t positions = 0, real = 0;
    for (const Range& r : bounds_) {
        int S = 0, T = 0;
        for (int64_t i = r.begin; i < r.end; ++i) {
            const int s = corpus_.src_length(order_[i]), t = corpus_.tgt_length(order_[i]) + 1;
            S = std::max(S, s);
            T = std::max(T, t);
            real += s + t;
        }
        positions += (r.end - r.begin) * (S + T);
    }
    return positions ? 1.0 - static_cast<double>(real) / static_cast<double>(positions) : 0.0;
}

void Batcher::plan(int64_t epoch) {
    Rng rng = Rng(options_.seed).split(static_cast<uint64_t>(epoch));
    order(options_.shuffle ? &rng : nullptr);
    cut();
    if (options_.shuffle)
        for (int64_t k = num_batches() - 1; k > 0; --k)
            std::swap(bounds_[k],
                      bounds_[static_cast<int64_t>(rng.below(static_cast<uint64_t>(k + 1)))]);
    pos_ = {epoch, 0};
}

void Batcher::set_position(const BatchPosition& pos) {
    NZ_CHECK_INPUT(pos.epoch >= 0 && pos.batch >= 0, "invalid batch position (epoch {}, batch {})",
                   pos.epoch, pos.batch);
    if (pos.epoch != pos_.epoch) plan(pos.epoch);
    NZ_CHECK_INPUT(pos.batch <= num_batches(), "batch position {} past the {} batches of epoch {}",
                   pos.batch, num_batches(), pos.epoch);
    pos_ = pos;
}

void Batcher::next(Batch& out) {
    if (pos_.batch >= num_batches()) plan(pos_.epoch + 1);
    make_batch(pos_.batch, out);
    ++pos_.batch;
}

void Batcher::make_batch(int64_t k, Batch& out) const {
    NZ_CHECK(k >= 0 && k < num_batches(), "batch {} out of range [0, {})", k, num_batches());
    const Range r = bounds_[static_cast<std::size_t>(k)];
    const int B = static_cast<int>(r.end - r.begin);
    int S = 0, T = 0;
    for (int64_t i = r.begin; i < r.end; ++i) {
        S = std::max(S, corpus_.src_length(order_[i]));
        T = std::max(T, corpus_.tgt_length(order_[i]) + 1);
    }
    out.B = B;
    out.S = S;
    out.T = T;
    out.src.assign(static_cast<std::size_t>(B) * S, Vocab::pad);
    out.tgt_in.assign(static_cast<std::size_t>(B) * T, Vocab::pad);
    out.tgt_out.assign(static_cast<std::size_t>(B) * T, Vocab::pad);
    out.src_lengths.resize(B);
    out.tgt_lengths.resize(B);
    out.index.resize(B);
    for (int b = 0; b < B; ++b) {
        const int64_t p = order_[r.begin + b];
        const auto src = corpus_.src(p), tgt = corpus_.tgt(p);
        const int n = static_cast<int>(tgt.size());
        std::copy(src.begin(), src.end(), out.src.begin() + static_cast<std::ptrdiff_t>(b) * S);
        int32_t* in = out.tgt_in.data() + static_cast<std::size_t>(b) * T;
        int32_t* outp = out.tgt_out.data() + static_cast<std::size_t>(b) * T;
        in[0] = Vocab::bos;
        std::copy(tgt.begin(), tgt.end(), in + 1);
        std::copy(tgt.begin(), tgt.end(), outp);
        outp[n] = Vocab::eos;
        out.src_lengths[b] = static_cast<int>(src.size());
        out.tgt_lengths[b] = n + 1;
        out.index[b] = p;
    }
    out.src_copy.clear();
    out.tgt_copy.clear();
    if (!corpus_.has_copy()) return;
    out.src_copy.assign(static_cast<std::size_t>(B) * S, Vocab::pad);
    out.tgt_copy.assign(static_cast<std::size_t>(B) * T, Vocab::pad);
    for (int b = 0; b < B; ++b) {
        const int64_t p = order_[r.begin + b];
        const auto src = corpus_.src_copy(p), tgt = corpus_.tgt_copy(p);
        std::copy(src.begin(), src.end(),
                  out.src_copy.begin() + static_cast<std::ptrdiff_t>(b) * S);
        int32_t* outp = out.tgt_copy.data() + static_cast<std::size_t>(b) * T;
        std::copy(tgt.begin(), tgt.end(), outp);
        outp[tgt.size()] = Vocab::eos;
    }
}

}  // namespace nazar
