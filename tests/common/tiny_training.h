// Small training runs for the trainer tests (unit, e2e and dist): generated reversal-task data in
// a directory, a tiny fast TrainConfig on it, and bit-for-bit weight comparison. A test changes
// only the fields it is about; the data sizes and seeds are arguments, so a test keeps the exact
// files it was written for.
#pragma once

#include "nazar/core/fileio.h"
#include "nazar/models/seq2seq.h"
#include "nazar/train/train_config.h"
#include "tests/common/test_util.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace nazar::test {

// The reversal-task files of a tiny run: train.tsv (`train_pairs` pairs drawn with `train_seed`)
// and dev.tsv (`dev_pairs` pairs, seed 2; none when 0: the run has no dev set).
struct TinyData {
    int train_pairs = 200;
    int dev_pairs = 30;
    uint64_t train_seed = 1;
};

// Writes `data` into `dir` and returns a configuration that trains on it in well under a second:
// E = 8, hidden 16, batches of 16, lr 0.01, 40 steps, validation every 20 steps decoding 10 dev
// sentences, the run directory `dir`/model, no progress output.
inline TrainConfig tiny_train_config(const std::string& dir, const TinyData& data = {}) {
    TrainConfig c = TrainConfig::defaults();
    c.train = dir + "/train.tsv";
    atomic_write_file(c.train, reversal_task(data.train_pairs, data.train_seed));
    if (data.dev_pairs > 0) {
        c.dev = dir + "/dev.tsv";
        atomic_write_file(c.dev, reversal_task(data.dev_pairs, 2));
    }
    c.embedding_size = 8;
    c.hidden_size = 16;
    c.batch_size = 16;
    c.lr = 0.01;
    c.max_steps = 40;
    c.valid_interval = 20;
    c.valid_sample = 10;
    c.save_dir = dir + "/model";
    c.progress = "none";
    return c;
}

// Whether the two models hold the same parameters, bit for bit.
inline bool same_weights(Seq2Seq& a, Seq2Seq& b) {
    const ParamList pa = a.parameters(), pb = b.parameters();
    if (pa.size() != pb.size()) return false;
    for (std::size_t i = 0; i < pa.size(); ++i)
        if (pa[i].value->numel() != pb[i].value->numel() ||
            std::memcmp(pa[i].value->data(), pb[i].value->data(),
                        sizeof(float) * pa[i].value->numel()) != 0)
            return false;
    return true;
}

}  // namespace nazar::test
