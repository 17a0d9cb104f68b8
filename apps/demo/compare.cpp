#include "apps/demo/compare.h"

#include "nazar/core/threads.h"

#include <fmt/format.h>

namespace nazar::demo {

std::vector<int> compare_buckets(Task task, int max_length) {
    if (task == Task::dates) return {0, 12, 18, 24, 30, 64};
    std::vector<int> e{1, 11, 26, 51, 76};
    for (auto it = e.begin(); it != e.end();)  // keep edges below the longest source
        it = *it > max_length ? e.erase(it) : it + 1;
    e.push_back(max_length + 1);
    return e;
}

CompareRow compare_one(Task task, const std::string& mechanism, const TaskData& data,
                       const CompareConfig& cfg) {
    DemoConfig dc;
    dc.task = task;
    dc.attention = mechanism;
    dc.max_steps = cfg.steps;
    dc.max_seconds = cfg.seconds;
    dc.max_length = cfg.reversal_max_length;
    dc.seed = cfg.seed;
    dc.stop_exact = 101;            // same budget for every row: never stop early
    dc.valid_interval = cfg.steps;  // one validation, at the end (dev set is not used for stopping)
    DemoModel m = build_demo_model(dc, data);
    const TrainReport tr = train_demo(m, dc, data);
    const EvalReport ev = evaluate(m, data.test);
    CompareRow row;
    row.task = to_string(task);
    row.mechanism = mechanism;
    row.parameters = tr.parameters;
    ParamList att;
    collect_params(m.model->attention.params, m.model->attention.grad, "attention.", att);
    row.attention_parameters = count_params(att);
    if (m.model->config().decoder.kind ==
        DecoderKind::luong)  // W_c belongs to the decoder but is Luong's
        row.attention_parameters += m.model->decoder.combine.params.weight.numel();
    row.steps = tr.steps;
    row.train_ms_per_step = tr.ms_per_step;
    row.decode_us_per_step = ev.us_per_step;
    row.exact = ev.exact;
    row.buckets = accuracy_by_length(ev, compare_buckets(task, cfg.reversal_max_length));
    return row;
}

std::string format_compare_table(const std::vector<CompareRow>& rows) {
    if (rows.empty()) return "";
    std::string o =
        fmt::format("  {:<10}{:>9}{:>10}{:>7}{:>10}{:>11}{:>8}  exact by source length",
                    "mechanism", "params", "attn+W_c", "steps", "train ms", "decode µs", "exact");
    o += "\n  " + std::string(67, ' ');
    for (const auto& b : rows[0].buckets)
        o += fmt::format("{:>9}", fmt::format("{}-{}", b.lo, b.hi - 1));
    o += "\n";
    for (const CompareRow& r : rows) {
        o += fmt::format("  {:<10}{:>9}{:>10}{:>7}{:>10.2f}{:>11.0f}{:>7.1f}%  ", r.mechanism,
                         r.parameters, r.attention_parameters, r.steps, r.train_ms_per_step,
                         r.decode_us_per_step, r.exact);
        for (const auto& b : r.buckets)
            o += b.n ? fmt::format("{:>8.1f}%", b.exact) : fmt::format("{:>9}", "-");
        o += "\n";
    }
    o += "  n per bucket:" + std::string(54, ' ');
    for (const auto& b : rows[0].buckets) o += fmt::format("{:>9}", b.n);
    return o + "\n";
}

std::vector<CompareRow> run_compare(const CompareConfig& cfg, std::FILE* out) {
    std::vector<CompareRow> all;
    fmt::print(out,
               "nazar demo --compare: every mechanism, same data, same seed, {} training steps of "
               "64 pairs{} "
               "({} thread{})\n",
               cfg.steps, cfg.seconds > 0 ? fmt::format(" (at most {} s each)", cfg.seconds) : "",
               num_threads(), num_threads() == 1 ? "" : "s");
    fmt::print(
        out,
        "train ms: per step (forward + backward + Adam); decode µs: per batched greedy step (100 "
        "sentences); attn+W_c: attention parameters plus Luong's combine W_c\n");
    for (const std::string& name : cfg.tasks) {
        const Task task = parse_task(name);
        const TaskData data =
            make_task(task, cfg.n_train, 200, cfg.n_test, cfg.seed, cfg.reversal_max_length);
        fmt::print(out, "\ntask {}: {} training pairs, {} held-out\n", name, data.train.size(),
                   data.test.size());
        std::fflush(out);
        std::vector<CompareRow> rows;
        for (const std::string& mech : cfg.mechanisms) {
            rows.push_back(compare_one(task, mech, data, cfg));
            fmt::print(out, "  ... {} done: {:.1f}% exact\n", mech, rows.back().exact);
            std::fflush(out);
        }
        fmt::print(out, "{}", format_compare_table(rows));
        std::fflush(out);
        all.insert(all.end(), rows.begin(), rows.end());
    }
    return all;
}

}  // namespace nazar::demo
