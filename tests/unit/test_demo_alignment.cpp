// The demo model "highlights" the right source characters: trained in the test (a small dates
// model, seconds), the hard alignment (argmax of the attention row) of each month and day output
// character lies inside the source characters that spell the month / day for >= 90% of those
// characters of a held-out sample (the acceptance check). Also: the model learns the task
// (held-out exact match well above chance), training is deterministic, and the report's pieces
// fit together (attention rows per output character, source pieces per column).
#include "apps/demo/demo.h"
#include "nazar/core/threads.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

namespace test_demo_alignment {

using namespace nazar;
using namespace nazar::demo;

namespace {
DemoConfig small_config() {
    DemoConfig c;
    c.n_train = 12000;
    c.n_dev = 200;
    c.n_test = 300;
    c.embedding_size = 24;
    c.hidden_size = 48;
    c.batch_size = 64;
    c.max_steps = 1500;
    c.valid_interval = 250;
    c.stop_exact = 98.0;
    c.lr = 5e-3;
    c.seed = 3;
    return c;
}
}  // namespace

TEST(DemoAlignment, MonthAndDayCharactersAttendToTheirSource) {
    set_num_threads(2);
    DemoConfig cfg = small_config();
    // Under AddressSanitizer (18x slower here) a short run of the same code, without the
    // learning thresholds: the instrumented suite checks its memory, the Release suite its result.
    if (test::kAddressSanitized) {
        cfg.max_steps = 40;
        cfg.valid_interval = 20;
        cfg.n_test = 60;
    }
    const TaskData data = make_task(cfg.task, cfg.n_train, cfg.n_dev, cfg.n_test, cfg.seed);
    DemoModel m = build_demo_model(cfg, data);
    const TrainReport tr = train_demo(m, cfg, data);
    const EvalReport ev = evaluate(m, data.test);
    RecordProperty("steps", tr.steps);
    RecordProperty("exact", std::to_string(ev.exact));
    int64_t checked = 0;
    const double al = date_alignment_accuracy(ev, data.test, &checked);
    RecordProperty("alignment", std::to_string(al));
    if (!test::kAddressSanitized) {
        EXPECT_GE(ev.exact, 90.0) << "after " << tr.steps << " steps";
        EXPECT_GE(checked, 4 * 200);  // 4 characters per correctly translated sentence
        EXPECT_GE(al, 90.0) << checked << " characters checked";
    }
    EXPECT_EQ(ev.decoded.size(), data.test.size());
    // pieces line up: one attention row per emitted piece, one column per source character
    for (const Decoded& d : ev.decoded) {
        ASSERT_EQ(d.attention.dim(0), static_cast<int64_t>(d.output_pieces.size()));
        ASSERT_EQ(d.attention.dim(1), static_cast<int64_t>(d.source_pieces.size()));
        if (d.correct) {
            EXPECT_EQ(d.output_pieces.back(), "</s>");
        }
    }
}

TEST(DemoAlignment, TrainingIsDeterministicAndMechanismsBuild) {
    set_num_threads(2);
    DemoConfig cfg = small_config();
    cfg.n_train = 500;
    cfg.n_dev = 20;
    cfg.n_test = 20;
    cfg.max_steps = 20;
    cfg.valid_interval = 10;
    const TaskData data = make_task(cfg.task, cfg.n_train, cfg.n_dev, cfg.n_test, cfg.seed);
    DemoModel a = build_demo_model(cfg, data), b = build_demo_model(cfg, data);
    const TrainReport ra = train_demo(a, cfg, data), rb = train_demo(b, cfg, data);
    EXPECT_EQ(ra.final_loss, rb.final_loss);
    const ParamList pa = a.model->parameters(), pb = b.model->parameters();
    for (std::size_t k = 0; k < pa.size(); ++k)
        EXPECT_EQ(max_abs_diff(*pa[k].value, *pb[k].value), 0.0f) << pa[k].name;
    for (const std::string& name : demo_attention_names()) {
        DemoConfig c = cfg;
        c.attention = name;
        c.max_steps = 2;
        DemoModel m = build_demo_model(c, data);
        EXPECT_NO_THROW(train_demo(m, c, data)) << name;
    }
    cfg.attention = "luong";
    EXPECT_THROW(build_demo_model(cfg, data), UsageError);
}

TEST(DemoAlignment, AccuracyByLength) {
    EvalReport r;
    for (int len : {3, 5, 12, 12, 30}) {
        Decoded d;
        d.source_pieces.assign(static_cast<std::size_t>(len), "a");
        d.correct = len != 12 || r.decoded.size() == 2;
        r.decoded.push_back(d);
    }
    const std::vector<int> edges{0, 10, 20, 40};
    const auto b = accuracy_by_length(r, edges);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].n, 2);
    EXPECT_DOUBLE_EQ(b[0].exact, 100.0);
    EXPECT_EQ(b[1].n, 2);
    EXPECT_DOUBLE_EQ(b[1].exact, 50.0);
    EXPECT_EQ(b[2].n, 1);
}

}  // namespace test_demo_alignment
