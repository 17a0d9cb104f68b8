// `nazar demo --compare`: bucket edges, one row per mechanism with the parameter counts of the
// notes' table (docs/spec.md §11; attention + Luong's W_c), and the printed table's shape.
#include "apps/demo/compare.h"
#include "nazar/core/threads.h"

#include <gtest/gtest.h>

namespace test_demo_compare {

using namespace nazar;
using namespace nazar::demo;

TEST(DemoCompare, Buckets) {
    EXPECT_EQ(compare_buckets(Task::reversal, 100), (std::vector<int>{1, 11, 26, 51, 76, 101}));
    EXPECT_EQ(compare_buckets(Task::reversal, 30), (std::vector<int>{1, 11, 26, 31}));
    EXPECT_EQ(compare_buckets(Task::reversal, 5), (std::vector<int>{1, 6}));
    EXPECT_EQ(compare_buckets(Task::dates, 100).front(), 0);
}

TEST(DemoCompare, RowsAndTable) {
    set_num_threads(2);
    CompareConfig cfg;
    cfg.steps = 3;
    cfg.seconds = 0;
    cfg.reversal_max_length = 12;
    const TaskData data = make_task(Task::reversal, 200, 10, 30, 1, 12);
    std::vector<CompareRow> rows;
    for (const std::string& m : cfg.mechanisms)
        rows.push_back(compare_one(Task::reversal, m, data, cfg));
    ASSERT_EQ(rows.size(), 5u);
    // default demo sizes: hidden 64 per direction -> C = H = 128, A = 128
    EXPECT_EQ(rows[0].attention_parameters, 128 * 128 + 128 * 128 + 128);  // bahdanau W_a, U_a, v_a
    EXPECT_EQ(rows[1].attention_parameters, 128 * 256);                    // dot: W_c only
    EXPECT_EQ(rows[2].attention_parameters, 128 * 128 + 128 * 256);        // general W_a + W_c
    for (const CompareRow& r : rows) {
        EXPECT_EQ(r.steps, 3);
        EXPECT_GT(r.parameters, r.attention_parameters);
        EXPECT_GT(r.train_ms_per_step, 0);
        ASSERT_EQ(r.buckets.size(), 2u);  // edges {1, 11, 13}: 1-10, 11-12
        int n = 0;
        for (const auto& b : r.buckets) n += b.n;
        EXPECT_EQ(n, 30);
    }
    const std::string table = format_compare_table(rows);
    for (const char* part :
         {"bahdanau", "dot", "general", "concat", "local-p", "1-10", "n per bucket"})
        EXPECT_NE(table.find(part), std::string::npos) << part;
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 5 + 1);
}

}  // namespace test_demo_compare
