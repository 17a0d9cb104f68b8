// Batcher (nazar/data/batcher.h): batch layout (<s>/</s>/<pad>), token budget, each pair once
// per epoch, seed determinism, exact resume from a saved position, and the padding fraction
// with and without length bucketing on a corpus with lengths 1-100.
#include "nazar/core/check.h"
#include "nazar/core/rng.h"
#include "nazar/data/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

namespace test_data_batcher {

using namespace nazar;

namespace {

// Pair i: source of length ls filled with 100 + i, target of length lt filled with 200 + i.
Corpus make_corpus(const std::vector<std::pair<int, int>>& lengths) {
    Corpus c;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const std::vector<int32_t> src(lengths[i].first, 100 + static_cast<int32_t>(i));
        const std::vector<int32_t> tgt(lengths[i].second, 200 + static_cast<int32_t>(i));
        c.add(src, tgt);
    }
    return c;
}

Corpus random_corpus(int n, int max_len, uint64_t seed) {
    Rng rng(seed);
    std::vector<std::pair<int, int>> lengths;
    for (int i = 0; i < n; ++i)
        lengths.emplace_back(1 + static_cast<int>(rng.below(max_len)),
                             1 + static_cast<int>(rng.below(max_len)));
    return make_corpus(lengths);
}

std::vector<std::vector<int64_t>> epoch_indices(Batcher& b) {
    std::vector<std::vector<int64_t>> out;
    const int64_t n = b.num_batches();
    Batch batch;
    for (int64_t k = 0; k < n; ++k) {
        b.next(batch);
        out.push_back(batch.index);
    }
    return out;
}

}  // namespace

TEST(DataBatcher, LayoutOfOneBatch) {
    const Corpus c = make_corpus({{2, 1}, {3, 2}});
    Batcher b(c, {.batch_size = 2, .bucket = false, .shuffle = false});
    ASSERT_EQ(b.num_batches(), 1);
    Batch x;
    b.next(x);
    ASSERT_EQ(x.B, 2);
    ASSERT_EQ(x.S, 3);
    ASSERT_EQ(x.T, 3);
    EXPECT_EQ(x.src, (std::vector<int32_t>{100, 100, Vocab::pad, 101, 101, 101}));
    EXPECT_EQ(x.src_lengths, (std::vector<int>{2, 3}));
    EXPECT_EQ(x.tgt_in, (std::vector<int32_t>{Vocab::bos, 200, Vocab::pad, Vocab::bos, 201, 201}));
    EXPECT_EQ(x.tgt_out, (std::vector<int32_t>{200, Vocab::eos, Vocab::pad, 201, 201, Vocab::eos}));
    EXPECT_EQ(x.tgt_lengths, (std::vector<int>{2, 3}));
    EXPECT_EQ(x.index, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(x.src_at(1, 2), 101);
    EXPECT_EQ(x.tgt_out_at(0, 1), Vocab::eos);
    EXPECT_EQ(x.src_tokens(), 5);
    EXPECT_EQ(x.tgt_tokens(), 5);
    // The next call starts epoch 1.
    b.next(x);
    EXPECT_EQ(b.position(), (BatchPosition{1, 1}));
}

TEST(DataBatcher, TokenBudgetAndEveryPairOncePerEpoch) {
    const Corpus c = random_corpus(3000, 100, 3);
    const int budget = 1500;
    Batcher b(c, {.batch_tokens = budget, .seed = 9});
    for (int epoch = 0; epoch < 2; ++epoch) {
        std::vector<int> seen(c.size(), 0);
        Batch x;
        const int64_t n = b.num_batches();
        for (int64_t k = 0; k < n; ++k) {
            b.next(x);
            EXPECT_TRUE(x.B == 1 || static_cast<int64_t>(x.B) * std::max(x.S, x.T) <= budget)
                << x.B << " x max(" << x.S << ", " << x.T << ")";
            for (int i = 0; i < x.B; ++i) {
                ++seen[x.index[i]];
                EXPECT_EQ(x.src_lengths[i], c.src_length(x.index[i]));
                EXPECT_EQ(x.tgt_in_at(i, 1), c.tgt(x.index[i])[0]);
            }
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), c.size()) << "epoch " << epoch;
    }
    // A pair longer than the budget still gets a batch (of its own).
    const Corpus big = make_corpus({{50, 60}, {2, 2}});
    Batcher small(big, {.batch_tokens = 10, .shuffle = false});
    EXPECT_EQ(small.num_batches(), 2);
}

TEST(DataBatcher, ShuffleIsDeterministicBySeedAndDiffersByEpoch) {
    const Corpus c = random_corpus(500, 30, 4);
    Batcher a(c, {.batch_tokens = 300, .seed = 1});
    Batcher b(c, {.batch_tokens = 300, .seed = 1});
    Batcher other(c, {.batch_tokens = 300, .seed = 2});
    const auto ea0 = epoch_indices(a), eb0 = epoch_indices(b), eo0 = epoch_indices(other);
    EXPECT_EQ(ea0, eb0);
    EXPECT_NE(ea0, eo0);
    const auto ea1 = epoch_indices(a);
    EXPECT_EQ(a.position().epoch, 1);
    EXPECT_NE(ea0, ea1);
    // Unshuffled, unbucketed: corpus order.
    Batcher plain(c, {.batch_size = 100, .bucket = false, .shuffle = false});
    Batch x;
    plain.next(x);
    for (int i = 0; i < x.B; ++i) EXPECT_EQ(x.index[i], i);
}

TEST(DataBatcher, ResumesExactlyFromASavedPosition) {
    const Corpus c = random_corpus(800, 40, 5);
    const BatchOptions o{.batch_tokens = 400, .seed = 77};
    Batcher run(c, o);
    Batch x;
    // Train through epoch 0 and part of epoch 1, saving the position at some point.
    const int64_t n0 = run.num_batches();
    BatchPosition saved;
    std::vector<std::vector<int64_t>> after;
    for (int64_t step = 0; step < n0 + 7; ++step) {
        if (step == n0 - 3) saved = run.position();
        run.next(x);
        if (step >= n0 - 3) after.push_back(x.index);
    }
    // A fresh batcher (a restarted process) continues with the very same batches.
    Batcher resumed(c, o);
    resumed.set_position(saved);
    EXPECT_EQ(resumed.position(), saved);
    for (const auto& want : after) {
        resumed.next(x);
        EXPECT_EQ(x.index, want);
    }
    EXPECT_THROW(resumed.set_position({0, n0 + 1}), Error);
    EXPECT_THROW(resumed.set_position({-1, 0}), Error);
}

double padding_of_epoch(const Corpus& c, const BatchOptions& o, int* width = nullptr) {
    Batcher b(c, o);
    if (width) *width = b.bucket_width();
    PaddingStats stats;
    Batch x;
    const int64_t n = b.num_batches();
    for (int64_t k = 0; k < n; ++k) {
        b.next(x);
        stats.add(x);
    }
    EXPECT_NEAR(stats.padding_fraction(), b.planned_padding(), 1e-12);
    return stats.padding_fraction();
}

TEST(DataBatcher, BucketingKeepsPaddingBelowTenPercent) {
    // Source and target lengths 1-100, independent: the hardest case for padding.
    const Corpus c = random_corpus(20000, 100, 6);
    int width = 0;
    const double bucketed = padding_of_epoch(c, {.batch_tokens = 4096, .seed = 3}, &width);
    const double narrow = padding_of_epoch(c, {.batch_tokens = 4096, .bucket_width = 1, .seed = 3});
    const double unbucketed =
        padding_of_epoch(c, {.batch_tokens = 4096, .bucket = false, .seed = 3});
    // Realistic: target length = source length x U(0.8, 1.3), clamped to 1-100.
    Rng rng(8);
    std::vector<std::pair<int, int>> lengths;
    for (int i = 0; i < 20000; ++i) {
        const int ls = 1 + static_cast<int>(rng.below(100));
        lengths.emplace_back(
            ls, std::clamp(static_cast<int>(ls * rng.uniform(0.8f, 1.3f) + 0.5f), 1, 100));
    }
    const Corpus real = make_corpus(lengths);
    const double real_bucketed = padding_of_epoch(real, {.batch_tokens = 4096, .seed = 3});
    const double real_unbucketed =
        padding_of_epoch(real, {.batch_tokens = 4096, .bucket = false, .seed = 3});
    std::printf(
        "padding fraction, 20000 pairs, lengths 1-100, 4096-token batches:\n"
        "  independent lengths: %.2f%% bucketed (band %d), %.2f%% band 1, %.2f%% unbucketed\n"
        "  correlated lengths:  %.2f%% bucketed, %.2f%% unbucketed\n",
        100 * bucketed, width, 100 * narrow, 100 * unbucketed, 100 * real_bucketed,
        100 * real_unbucketed);
    RecordProperty("padding_percent_bucketed", std::to_string(100 * bucketed));
    RecordProperty("padding_percent_unbucketed", std::to_string(100 * unbucketed));
    EXPECT_LT(bucketed, 0.10);
    EXPECT_LT(real_bucketed, 0.10);
    EXPECT_LE(bucketed, narrow);  // the automatic band is never worse than band 1
    EXPECT_GT(unbucketed, 0.30);
    EXPECT_GT(real_unbucketed, 0.30);
}

TEST(DataBatcher, PaddingStatsByHand) {
    const Corpus c = make_corpus({{2, 1}, {3, 2}});
    Batcher b(c, {.batch_size = 2, .bucket = false, .shuffle = false});
    Batch x;
    b.next(x);
    PaddingStats s;
    s.add(x);
    EXPECT_EQ(s.positions, 2 * (3 + 3));
    EXPECT_EQ(s.real, 5 + 5);
    EXPECT_NEAR(s.padding_fraction(), 2.0 / 12.0, 1e-12);
}

TEST(DataBatcher, OptionErrors) {
    const Corpus c = make_corpus({{1, 1}});
    EXPECT_THROW(Batcher(c, {}), Error);
    EXPECT_THROW(Batcher(c, {.batch_tokens = 10, .batch_size = 2}), Error);
    const Corpus empty;
    EXPECT_THROW(Batcher(empty, {.batch_size = 2}), Error);
}

}  // namespace test_data_batcher
