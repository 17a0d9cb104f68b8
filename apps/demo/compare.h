// `nazar demo --compare`: docs/spec.md §11's table (Bahdanau vs Luong: speed, parameters,
// "slightly better on long sequences") turned into a measurement on this machine. Every
// mechanism is trained on the same generated data, from the same seed, with the same budget
// (steps, and optionally a time cap), then decoded greedily on the same held-out set.
//
// Columns: attention parameters and all parameters, training time per step (forward + backward +
// Adam, batch_size pairs), greedy decode time per batched step (100 sentences), held-out exact
// match overall and by source-length bucket. Times are wall clock on a possibly shared machine:
// compare rows of one run, not runs of different days.
#pragma once

#include "apps/demo/demo.h"

#include <cstdio>
#include <string>
#include <vector>

namespace nazar::demo {

struct CompareConfig {
    std::vector<std::string> tasks{"dates", "reversal"};
    std::vector<std::string> mechanisms{"bahdanau", "dot", "general", "concat", "local-p"};
    int steps = 2000;     // training steps per model (at most)
    double seconds = 60;  // training-time cap per model (0 = none): about 12 minutes in all
    int n_train = 20000, n_test = 600;
    int reversal_max_length = 100;
    uint64_t seed = 1;
};

struct CompareRow {
    std::string task, mechanism;
    int64_t parameters = 0, attention_parameters = 0;
    int steps = 0;
    double train_ms_per_step = 0, decode_us_per_step = 0, exact = 0;
    std::vector<BucketAccuracy> buckets;
};

// Source-length bucket edges used for a task's table.
std::vector<int> compare_buckets(Task task, int max_length);
// Trains and evaluates one row.
CompareRow compare_one(Task task, const std::string& mechanism, const TaskData& data,
                       const CompareConfig& cfg);
// Runs every task x mechanism, printing each task's table to `out` as its rows complete.
std::vector<CompareRow> run_compare(const CompareConfig& cfg, std::FILE* out);
std::string format_compare_table(const std::vector<CompareRow>& rows);  // rows of one task

}  // namespace nazar::demo
