// Batches for training and evaluation: padded id matrices built from a Corpus.
//
// Per epoch e the batcher (1) orders pair indices: a Fisher-Yates shuffle with
// Rng(seed).split(e) when `shuffle`, then, when `bucket`, a stable sort (equal keys keep their
// shuffled order) into 2-D buckets: source lengths in bands of `bucket_width`, and within a
// band by target length, ascending in even bands and descending in odd ones (a snake, so
// neighbouring bands join smoothly), then by source length. Bands wider than 1 trade a little
// source padding for much less target padding when the two lengths vary independently;
// bucket_width = 0 picks, once, the width in {1,2,3,4,6,8,12,16} whose epoch-0 plan pads
// least (only lengths matter, so the choice holds for every epoch); (2) cuts the order into
// batches greedily: by sentence count (batch_size) or by token budget (batch_tokens: a batch
// of B pairs costs B * max(S, T) padded positions; a single pair over the budget gets a batch
// of its own); (3) shuffles the batch order with the same generator when `shuffle`.
// The plan depends only on (corpus, options, epoch), so position() / set_position() resume
// exactly: set_position({epoch, batch}) rebuilds that epoch's plan and continues from `batch`.
//
// Batch layout (docs/shapes.md): right-padded with <pad> (id 0), row-major.
//   src      (B, S)  source ids, no <s>/</s>
//   tgt_in   (B, T)  <s> y_1 .. y_n      decoder inputs (teacher forcing)
//   tgt_out  (B, T)  y_1 .. y_n </s>     what the decoder must predict
// with T = max over the batch of n + 1; tgt_lengths[b] = n_b + 1.
#pragma once

#include "nazar/data/corpus.h"

#include <cstdint>
#include <vector>

namespace nazar {

class Rng;

struct BatchOptions {
    int batch_tokens = 0;  // token budget per batch (B * max(S, T)); 0 = use batch_size
    int batch_size = 0;    // sentences per batch, when batch_tokens == 0
    bool bucket = true;    // group similar lengths to limit padding
    int bucket_width = 0;  // source-length band of a bucket; 0 = choose automatically
    bool shuffle = true;
    uint64_t seed = 1;
};

struct Batch {
    int B = 0, S = 0, T = 0;
    std::vector<int32_t> src;      // (B, S)
    std::vector<int> src_lengths;  // (B)
    std::vector<int32_t> tgt_in;   // (B, T)
    std::vector<int32_t> tgt_out;  // (B, T)
    std::vector<int> tgt_lengths;  // (B)   target length + 1 (the </s>)
    std::vector<int64_t> index;    // (B)   pair index in the corpus
    // Copy attention (data/extended_vocab.h), when the corpus has extended ids; else empty:
    std::vector<int32_t> src_copy;  // (B, S)  extended ids x̂ of the source (pad: <pad>)
    std::vector<int32_t> tgt_copy;  // (B, T)  tgt_out in extended ids (pad: <pad>)

    int64_t src_tokens() const;  // real (non-pad) positions
    int64_t tgt_tokens() const;
    int32_t src_at(int b, int s) const { return src[static_cast<std::size_t>(b) * S + s]; }
    int32_t tgt_in_at(int b, int t) const { return tgt_in[static_cast<std::size_t>(b) * T + t]; }
    int32_t tgt_out_at(int b, int t) const { return tgt_out[static_cast<std::size_t>(b) * T + t]; }
};

struct BatchPosition {
    int64_t epoch = 0;
    int64_t batch = 0;  // next batch of that epoch
    bool operator==(const BatchPosition&) const = default;
};

class Batcher {
public:
    Batcher(const Corpus& corpus, const BatchOptions& options);

    // Fills `out` with the next batch; after the last batch of an epoch, starts the next one.
    void next(Batch& out);
    int64_t num_batches() const { return static_cast<int64_t>(bounds_.size()); }  // this epoch
    BatchPosition position() const { return pos_; }
    void set_position(const BatchPosition& pos);

    // The k-th batch of the current epoch's plan, without moving the position.
    void make_batch(int64_t k, Batch& out) const;
    int bucket_width() const { return width_; }  // the band in use (0 without bucketing)
    double planned_padding() const;              // padding fraction of this epoch's plan

private:
    void plan(int64_t epoch);
    void order(Rng* rng);  // fills order_ (shuffled when rng, bucketed by width_)
    void cut();            // fills bounds_ from order_

    const Corpus& corpus_;
    BatchOptions options_;
    BatchPosition pos_;
    int width_ = 0;
    std::vector<int64_t> order_;  // pair indices in batch order
    struct Range {
        int64_t begin, end;
    };
    std::vector<Range> bounds_;  // batch k = order_[bounds_[k].begin, bounds_[k].end)
};

// Fraction of padding positions in a set of batches: pad / (B*S + B*T) summed over batches.
struct PaddingStats {
    int64_t positions = 0, real = 0;
    void add(const Batch& b);
    double padding_fraction() const {
        return positions ? 1.0 - static_cast<double>(real) / positions : 0.0;
    }
};

}  // namespace nazar
