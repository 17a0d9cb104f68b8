// `nazar demo`: the embedded default behind `make demo` (apps/demo/demo.h). Generates the dates
// task, trains a char-level attention model in memory, prints the held-out exact match, a few
// translations and a terminal heatmap, and writes demo-attention.svg, demo-report.html and the
// model (demo.safetensors, usable with `nazar attention` / `nazar translate`).
// `--compare` runs apps/demo/compare.h instead: every mechanism on the same tasks and budget.
#include "apps/demo/compare.h"
#include "apps/demo/demo.h"
#include "cli/command.h"
#include "cli/options.h"
#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/threads.h"
#include "nazar/decode/alignment.h"
#include "nazar/models/model_file.h"
#include "nazar/viz/heatmap.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace nazar::cli {
namespace {

struct DemoArgs {
    demo::DemoConfig cfg;
    std::string task = "dates";
    std::string out_dir = ".";
    std::string save = "demo.safetensors";
    std::string color = "auto";
    int examples = 8;
    int threads = -1;
    bool compare = false;
    demo::CompareConfig compare_cfg;
};

viz::Heatmap heatmap_of(const demo::Decoded& d, const std::string& caption) {
    viz::Heatmap h;
    h.source = d.source_pieces;
    h.target = d.output_pieces;
    h.weights = Tensor::like(d.attention);
    h.weights.copy_from(d.attention);
    h.source_text = d.source;
    h.target_text = d.hypothesis;
    h.caption = caption;
    return h;
}

// The showcase sentences of the issue and README, all of them 3 May 1979.
std::vector<demo::Example> showcase() {
    return {demo::format_date(0, 1979, 5, 3),    demo::format_date(9, 1979, 5, 3),
            demo::format_date(17, 1979, 5, 3),   demo::format_date(19, 2024, 2, 29),
            demo::format_date(22, 1999, 12, 31), demo::format_date(3, 2001, 9, 11)};
}

void write_file(const std::string& path, const std::string& text) {
    atomic_write_file(path, text);
}

// Exact match on the held-out test set (and, for dates, the alignment accuracy).
demo::EvalReport report_held_out(demo::DemoModel& m, const demo::DemoConfig& cfg,
                                 const demo::TaskData& data) {
    const demo::EvalReport ev = demo::evaluate(m, data.test);
    int correct = 0;
    for (const auto& d : ev.decoded) correct += d.correct;
    fmt::print(
        "\nheld-out exact match: {:.1f}% ({} / {})   greedy decoding {:.0f} µs per batched step\n",
        ev.exact, correct, ev.decoded.size(), ev.us_per_step);
    if (cfg.task == demo::Task::dates) {
        int64_t n = 0;
        const double al = demo::date_alignment_accuracy(ev, data.test, &n);
        fmt::print(
            "alignment: {:.1f}% of {} month/day output characters attend most to the source "
            "characters that "
            "spell them\n",
            al, n);
    }
    return ev;
}

// Prints the showcase (dates) and held-out translations, the wrong ones first; returns the
// showcase's decodings.
demo::EvalReport print_translations(demo::DemoModel& m, const demo::DemoConfig& cfg,
                                    const demo::EvalReport& ev, int examples) {
    std::vector<demo::Example> shown =
        cfg.task == demo::Task::dates ? showcase() : std::vector<demo::Example>{};
    const demo::EvalReport sh = demo::evaluate(m, shown);
    fmt::print("\ntranslations:\n");
    auto line = [](const demo::Decoded& d) {
        fmt::print("  {:<36} -> {:<12} {}\n", d.source, d.hypothesis,
                   d.correct ? "ok" : "expected " + d.reference);
    };
    for (const auto& d : sh.decoded) line(d);
    int listed = 0;
    for (const auto& d : ev.decoded)
        if (!d.correct && listed < examples) line(d), ++listed;
    for (const auto& d : ev.decoded)
        if (d.correct && listed < examples) line(d), ++listed;
    return sh;
}

// Heatmaps of the showcase and the first held-out sentences, 12 at most.
std::vector<viz::Heatmap> heatmaps(const std::string& mech, const demo::EvalReport& sh,
                                   const demo::EvalReport& ev) {
    std::vector<viz::Heatmap> maps;
    for (const auto& d : sh.decoded)
        maps.push_back(heatmap_of(
            d, mech + " · " + (d.correct ? "correct" : "wrong: expected " + d.reference)));
    for (std::size_t k = 0; k < ev.decoded.size() && maps.size() < 12; ++k)
        maps.push_back(
            heatmap_of(ev.decoded[k],
                       mech + " · held-out " +
                           (ev.decoded[k].correct ? "correct"
                                                  : "wrong: expected " + ev.decoded[k].reference)));
    return maps;
}

// Writes demo-attention.svg, demo-report.html and the model file into the output directory.
void write_outputs(const DemoArgs& a, const demo::DemoModel& m,
                   const std::vector<viz::Heatmap>& maps, const std::string& mech,
                   const demo::TrainReport& tr, const demo::EvalReport& ev) {
    const demo::DemoConfig& cfg = a.cfg;
    std::filesystem::create_directories(a.out_dir);
    const std::string svg = (std::filesystem::path(a.out_dir) / "demo-attention.svg").string();
    const std::string html = (std::filesystem::path(a.out_dir) / "demo-report.html").string();
    if (!maps.empty()) write_file(svg, viz::render_svg(maps[0]));
    const std::string summary = fmt::format(
        "task: {}; attention: {}\ntraining: {} steps, {:.1f} s ({:.1f} ms/step), {} parameters\n"
        "held-out exact match: {:.1f}% of {} sentences",
        demo::to_string(cfg.task), mech, tr.steps, tr.seconds, tr.ms_per_step, tr.parameters,
        ev.exact, ev.decoded.size());
    write_file(html, viz::render_html(
                         maps, {.title = "nazar demo: attention as highlighting",
                                .intro = "A character-level seq2seq model trained by `nazar demo`. "
                                         "For every output character, the row shows which source "
                                         "characters lit up.",
                                .sections = {{"Run", summary}}}));
    if (!a.save.empty()) {
        const std::string model_path = (std::filesystem::path(a.out_dir) / a.save).string();
        save_model(model_path, *m.model, m.metadata());
        fmt::print(
            "\nwrote {}, {} and {} (try: echo '14 juillet 1989' | nazar attention --model {})\n",
            svg, html, model_path, model_path);
    } else {
        fmt::print("\nwrote {} and {}\n", svg, html);
    }
}

int run_demo(DemoArgs& a) {
    apply_threads_option(a.threads);
    if (a.compare) {
        demo::run_compare(a.compare_cfg, stdout);
        return 0;
    }
    demo::DemoConfig& cfg = a.cfg;
    cfg.task = demo::parse_task(a.task);
    const bool color = viz::use_color(viz::parse_color_mode(a.color), fileno(stdout));
    const auto t0 = std::chrono::steady_clock::now();
    fmt::print(
        "nazar demo — {} at character level, {} attention ({} thread{})\n",
        cfg.task == demo::Task::dates ? "human-written dates -> ISO 8601" : "string reversal",
        cfg.attention, num_threads(), num_threads() == 1 ? "" : "s");
    const demo::TaskData data =
        demo::make_task(cfg.task, cfg.n_train, cfg.n_dev, cfg.n_test, cfg.seed, cfg.max_length);
    demo::DemoModel m = demo::build_demo_model(cfg, data);
    fmt::print(
        "data: {} training pairs, {} dev, {} held-out test pairs (generated; no source repeats "
        "across sets)\n",
        data.train.size(), data.dev.size(), data.test.size());
    for (int k = 0; k < 3 && k < static_cast<int>(data.train.size()); ++k)
        fmt::print("  e.g. {:<34} -> {}\n", data.train[k].source, data.train[k].target);
    fmt::print("model: {}\n", describe(attention_config(m.model->config())));
    std::fflush(stdout);
    const demo::TrainReport tr = demo::train_demo(m, cfg, data, [](const demo::TrainProgress& p) {
        fmt::print("  step {:>5}  {:>6.1f} s  loss {:.4f}  dev exact {:5.1f}%  lr {:.2g}\n", p.step,
                   p.seconds, p.loss, p.dev_exact, p.lr);
        std::fflush(stdout);
    });
    fmt::print("trained {} steps of {} pairs in {:.1f} s ({:.1f} ms/step), {} parameters{}\n",
               tr.steps, cfg.batch_size, tr.seconds, tr.ms_per_step, tr.parameters,
               tr.stopped_by_time ? " (stopped by --seconds)" : "");

    const demo::EvalReport ev = report_held_out(m, cfg, data);
    const demo::EvalReport sh = print_translations(m, cfg, ev, a.examples);
    const std::string mech = describe(attention_config(m.model->config()));
    const std::vector<viz::Heatmap> maps = heatmaps(mech, sh, ev);
    if (!maps.empty()) {
        fmt::print(
            "\nattention of \"{}\" -> \"{}\" (rows: output characters; columns: source "
            "characters)\n",
            maps[0].source_text, maps[0].target_text);
        fmt::print("{}", viz::render_terminal(maps[0], {.color = color}));
    }
    write_outputs(a, m, maps, mech, tr, ev);
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("total time {:.1f} s\n", total);
    return 0;
}

void setup_demo(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<DemoArgs>();
    app.add_option("--attention", a->cfg.attention,
                   "bahdanau | dot | general | concat | local-m | local-p | monotonic | mocha "
                   "(the last two: Bahdanau decoder, hard monotonic decoding; mocha: chunks of 3)")
        ->capture_default_str();
    app.add_option("--task", a->task, "dates | reversal")->capture_default_str();
    app.add_option("--steps", a->cfg.max_steps, "Maximum training steps")
        ->check(CLI::Range(0, 1 << 24))
        ->capture_default_str();
    app.add_option("--seconds", a->cfg.max_seconds, "Training-time budget in seconds (0 = none)")
        ->check(CLI::Range(0.0, 1e7))
        ->capture_default_str();
    app.add_option("--train-size", a->cfg.n_train, "Training pairs")
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str();
    app.add_option("--test-size", a->cfg.n_test, "Held-out test pairs")
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str();
    app.add_option("--hidden-size", a->cfg.hidden_size,
                   "Encoder hidden size per direction (decoder: twice)")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--embedding-size", a->cfg.embedding_size, "Embedding size")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--batch-size", a->cfg.batch_size, "Sentences per step")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--lr", a->cfg.lr, "Adam learning rate")
        ->check(CLI::Range(1e-7, 1.0))
        ->capture_default_str();
    app.add_option("--window", a->cfg.window, "Local attention half-window D")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--max-length", a->cfg.max_length, "Reversal: longest source")
        ->check(CLI::Range(1, 10000))
        ->capture_default_str();
    app.add_option("--seed", a->cfg.seed, "Seed (data, initialisation, batches)")
        ->capture_default_str();
    add_threads_option(app, a->threads);
    app.add_option("--out-dir", a->out_dir,
                   "Where demo-attention.svg, demo-report.html and the model go")
        ->multi_option_policy(
            CLI::MultiOptionPolicy::TakeLast)  // make demo DEMO_FLAGS='--out-dir x'
        ->capture_default_str();
    app.add_option("--save", a->save, "Model file name in --out-dir ('' = do not save)")
        ->capture_default_str();
    app.add_option("--examples", a->examples, "Held-out translations to print")
        ->check(CLI::Range(0, 10000))
        ->capture_default_str();
    app.add_option("--color", a->color, "auto | always | never (auto: a TTY without NO_COLOR)")
        ->capture_default_str();
    app.add_flag("--compare", a->compare,
                 "Train every mechanism (bahdanau, luong dot/general/concat, local-p) on dates and "
                 "reversal with "
                 "the same budget and print one table");
    app.add_option("--compare-steps", a->compare_cfg.steps, "--compare: training steps per model")
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str();
    app.add_option("--compare-seconds", a->compare_cfg.seconds,
                   "--compare: training-time cap per model (0 = none)")
        ->check(CLI::Range(0.0, 1e7))
        ->capture_default_str();
    app.add_option("--compare-tasks", a->compare_cfg.tasks, "--compare: tasks to run")
        ->capture_default_str();
    run = [a] { return run_demo(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(demo,
                    "Train the built-in dates task in about two minutes and show its attention",
                    setup_demo);

}  // namespace nazar::cli
