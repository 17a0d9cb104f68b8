#include "apps/demo/demo.h"

#include "nazar/core/check.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/model_file.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <set>

namespace nazar::demo {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::string> pieces_of(const Tokenizer& tok, std::string_view text) {
    return tok.encode(text);
}
}  // namespace

// MoChA's chunk in the demo: the dates' fields are a few characters wide
constexpr int kDemoMochaChunk = 3;

const std::vector<std::string>& demo_attention_names() {
    static const std::vector<std::string> names{"bahdanau", "dot",     "general",   "concat",
                                                "local-m",  "local-p", "monotonic", "mocha"};
    return names;
}

ModelConfig demo_model_config(const DemoConfig& cfg, int src_vocab_size, int tgt_vocab_size) {
    const auto& names = demo_attention_names();
    if (std::find(names.begin(), names.end(), cfg.attention) == names.end())
        throw UsageError(fmt::format("demo: unknown attention '{}' (expected one of {})",
                                     cfg.attention, fmt::join(names, ", ")));
    ModelConfig m;
    m.src_vocab_size = src_vocab_size;
    m.tgt_vocab_size = tgt_vocab_size;
    m.embedding_size = cfg.embedding_size;
    m.encoder.hidden_size = cfg.hidden_size;
    m.encoder.bidirectional = true;
    m.decoder.hidden_size = 2 * cfg.hidden_size;
    if (cfg.attention == "bahdanau" || cfg.attention == "monotonic" || cfg.attention == "mocha") {
        m.decoder.kind = DecoderKind::bahdanau;
        m.attention.score = ScoreKind::additive;
        m.attention.monotonic = cfg.attention != "bahdanau";  // Raffel et al.: additive energy
        if (cfg.attention == "mocha") m.attention.mocha_chunk = kDemoMochaChunk;
        return m;
    }
    m.decoder.kind = DecoderKind::luong;
    m.attention.score = cfg.attention == "dot"      ? ScoreKind::dot
                        : cfg.attention == "concat" ? ScoreKind::concat
                                                    : ScoreKind::general;
    if (cfg.attention == "local-m") m.attention.local = LocalMode::monotonic;
    if (cfg.attention == "local-p") m.attention.local = LocalMode::predictive;
    m.attention.window = cfg.window;
    return m;
}

std::vector<int32_t> DemoModel::encode_source(std::string_view text) const {
    Pieces p;
    tokenizer.encode(text, p);
    std::vector<int32_t> ids;
    src_vocab.encode(p, ids);
    return ids;
}

std::vector<int32_t> DemoModel::encode_target(std::string_view text) const {
    Pieces p;
    tokenizer.encode(text, p);
    std::vector<int32_t> ids;
    tgt_vocab.encode(p, ids);
    return ids;
}

std::map<std::string, std::string> DemoModel::metadata() const {
    return {{kSrcVocabKey, src_vocab.to_json()},
            {kTgtVocabKey, tgt_vocab.to_json()},
            {kSrcTokenizerKey, tokenizer.to_string()},
            {kTgtTokenizerKey, tokenizer.to_string()}};
}

DemoModel build_demo_model(const DemoConfig& cfg, const TaskData& data) {
    DemoModel m;
    std::set<std::string> src, tgt;
    for (const auto* set : {&data.train, &data.dev, &data.test})
        for (const Example& e : *set) {
            for (auto& p : pieces_of(m.tokenizer, e.source)) src.insert(p);
            for (auto& p : pieces_of(m.tokenizer, e.target)) tgt.insert(p);
        }
    m.src_vocab = Vocab::from_pieces(std::vector<std::string>(src.begin(), src.end()));
    m.tgt_vocab = Vocab::from_pieces(std::vector<std::string>(tgt.begin(), tgt.end()));
    m.model = std::make_unique<Seq2Seq>(
        demo_model_config(cfg, m.src_vocab.size(), m.tgt_vocab.size()), cfg.seed);
    return m;
}

TrainConfig demo_train_config(const DemoConfig& cfg, const std::string& save_dir) {
    TrainConfig t = TrainConfig::defaults();
    t.tokenizer = "char";
    t.embedding_size = cfg.embedding_size;
    t.hidden_size = cfg.hidden_size;
    t.bidirectional = true;
    if (cfg.attention == "bahdanau" || cfg.attention == "monotonic" || cfg.attention == "mocha") {
        t.decoder = "bahdanau";
        t.attention = "additive";
        t.monotonic = cfg.attention != "bahdanau";
        if (cfg.attention == "mocha") t.mocha_chunk = kDemoMochaChunk;
    } else {
        t.decoder = "luong";
        t.attention = cfg.attention == "dot" || cfg.attention == "concat" ? cfg.attention
                                                                          : std::string("general");
        if (cfg.attention.rfind("local-", 0) == 0) t.attention_local = cfg.attention;
        t.attention_window = cfg.window;
    }
    t.batch_size = cfg.batch_size;
    t.optimizer = "adam";
    t.lr = cfg.lr;
    t.clip_norm = cfg.clip;
    t.schedule = "plateau";  // halve the lr after each validation without a better dev loss
    t.decay_factor = 0.5;
    t.plateau_patience = 0;
    t.max_steps = cfg.max_steps;
    t.max_minutes = cfg.max_seconds / 60;  // of training time (the demo's clock: no validation)
    t.valid_interval = cfg.valid_interval;
    t.log_interval = cfg.valid_interval;  // the train record before each validation: its window
    t.valid_metric = "exact";
    t.keep_best = false;
    t.keep_last = false;
    t.progress = "none";
    t.seed = static_cast<int>(cfg.seed);
    t.save_dir = save_dir;
    return t;
}

namespace {

// A directory of its own for the Trainer's files (model.safetensors), removed afterwards.
struct ScratchDir {
    std::string path;
    ScratchDir() {
        static std::atomic<int> count{0};
        path = (std::filesystem::temp_directory_path() /
                fmt::format("nazar-demo-{}-{}", ::getpid(), count.fetch_add(1)))
                   .string();
        std::filesystem::remove_all(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

TrainReport train_demo(DemoModel& m, const DemoConfig& cfg, const TaskData& data,
                       const std::function<void(const TrainProgress&)>& on_progress) {
    NZ_CHECK(!data.train.empty(), "train_demo: no training pairs");
    NZ_CHECK(cfg.batch_size >= 1 && cfg.max_steps >= 0, "train_demo: batch_size {} / max_steps {}",
             cfg.batch_size, cfg.max_steps);
    TrainReport rep;
    if (cfg.max_steps == 0) {
        rep.parameters = count_params(m.model->parameters());
        return rep;
    }
    const ScratchDir dir;
    const TrainConfig tc = demo_train_config(cfg, dir.path);
    NZ_CHECK(to_json_string(model_config_from(tc, m.src_vocab.size(), m.tgt_vocab.size())) ==
                 to_json_string(m.model->config()),
             "train_demo: the training configuration describes another model");
    std::vector<TextPair> train, dev;
    for (const Example& e : data.train) train.emplace_back(e.source, e.target);
    for (const Example& e : data.dev) dev.emplace_back(e.source, e.target);
    // The training time leaves validation out: each one runs between an update and its record.
    auto t0 = Clock::now();
    double valid_time = 0, last_update = 0, window_loss = 0, lr = cfg.lr;
    std::atomic<bool> good_enough{false};
    TrainerHooks hooks;  // (not a designated initializer: -Wmissing-field-initializers)
    hooks.quiet = true;
    hooks.finish = &good_enough;
    hooks.clock = [&] { return since(t0) - valid_time; };
    hooks.stop_after = [&](int64_t) {
        last_update = since(t0);
        rep.seconds = last_update - valid_time;
        return false;
    };
    const auto progress = [&](int step, double dev_exact) {
        rep.final_loss = window_loss;
        if (dev_exact >= 0) rep.dev_exact = dev_exact;
        if (on_progress)
            on_progress({.step = step,
                         .seconds = rep.seconds,
                         .loss = window_loss,
                         .dev_exact = dev_exact,
                         .lr = lr});
        if (dev_exact >= cfg.stop_exact) good_enough = true;
    };
    hooks.on_record = [&](const nlohmann::json& r) {
        if (r["type"] == "train") {
            window_loss = r["loss"].get<double>();
            lr = r["lr"].get<double>();
            if (data.dev.empty()) progress(r["step"].get<int>(), -1);
        } else if (r["type"] == "valid") {
            valid_time += since(t0) - last_update;
            progress(r["step"].get<int>(), r["exact"].get<double>());
        }
    };
    Trainer trainer(
        tc,
        TrainingSource::from_text(m.tokenizer, m.tokenizer, m.src_vocab, m.tgt_vocab, train, dev),
        hooks);
    t0 = Clock::now();  // the run's clock starts with the data and the model ready
    const TrainResult r = trainer.run();
    rep.steps = static_cast<int>(r.state.step);
    rep.ms_per_step = rep.steps ? 1000.0 * rep.seconds / rep.steps : 0;
    rep.parameters = count_params(trainer.model().parameters());
    rep.stopped_by_time = cfg.max_seconds > 0 && !good_enough && rep.steps < cfg.max_steps;
    m.model = std::move(load_model(r.model_path).model);  // the trained weights, bit for bit
    return rep;
}

EvalReport evaluate(DemoModel& m, std::span<const Example> examples, int batch_size) {
    NZ_CHECK(batch_size >= 1, "evaluate: batch_size {} < 1", batch_size);
    EvalReport r;
    const int n = static_cast<int>(examples.size());
    r.decoded.resize(static_cast<std::size_t>(n));
    std::vector<std::vector<int32_t>> ids(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ids[i] = m.encode_source(examples[i].source);
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return ids[a].size() < ids[b].size(); });
    int correct = 0;
    DecodeSession session(*m.model);  // its buffers reused by every batch
    const auto t0 = Clock::now();
    for (int b0 = 0; b0 < n; b0 += batch_size) {
        const int B = std::min(batch_size, n - b0);
        int S = 0;
        for (int k = 0; k < B; ++k) S = std::max(S, static_cast<int>(ids[order[b0 + k]].size()));
        std::vector<int32_t> src(static_cast<std::size_t>(B) * S, Vocab::pad);
        std::vector<int> len(static_cast<std::size_t>(B));
        for (int k = 0; k < B; ++k) {
            const auto& s = ids[order[b0 + k]];
            std::copy(s.begin(), s.end(), src.begin() + static_cast<std::ptrdiff_t>(k) * S);
            len[k] = static_cast<int>(s.size());
        }
        std::vector<GreedyResult> out = greedy_decode(session, src, len, S);
        int64_t steps = 0;
        for (int k = 0; k < B; ++k) {
            const int i = order[b0 + k];
            GreedyResult& g = out[k];
            steps = std::max<int64_t>(steps, static_cast<int64_t>(g.tokens.size()));
            Decoded& d = r.decoded[i];
            d.source = examples[i].source;
            d.reference = examples[i].target;
            d.hypothesis = m.tgt_vocab.decode(g.tokens, m.tokenizer);
            d.source_pieces = pieces_of(m.tokenizer, d.source);
            for (int32_t t : g.tokens) d.output_pieces.emplace_back(m.tgt_vocab.piece(t));
            d.attention = std::move(g.attention);
            d.correct = g.finished && d.hypothesis == d.reference;
            correct += d.correct;
        }
        r.steps += steps;
    }
    r.seconds = since(t0);
    r.exact = n ? 100.0 * correct / n : 0;
    r.us_per_step = r.steps ? 1e6 * r.seconds / static_cast<double>(r.steps) : 0;
    return r;
}

std::vector<BucketAccuracy> accuracy_by_length(const EvalReport& r, std::span<const int> edges) {
    std::vector<BucketAccuracy> out;
    for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
        BucketAccuracy b{.lo = edges[k], .hi = edges[k + 1]};
        int correct = 0;
        for (const Decoded& d : r.decoded) {
            const int len = static_cast<int>(d.source_pieces.size());
            if (len < b.lo || len >= b.hi) continue;
            ++b.n;
            correct += d.correct;
        }
        b.exact = b.n ? 100.0 * correct / b.n : 0;
        out.push_back(b);
    }
    return out;
}

double date_alignment_accuracy(const EvalReport& r, std::span<const Example> examples,
                               int64_t* checked) {
    NZ_CHECK(r.decoded.size() == examples.size(),
             "date_alignment_accuracy: {} results for {} examples", r.decoded.size(),
             examples.size());
    int64_t total = 0, hit = 0;
    for (std::size_t i = 0; i < examples.size(); ++i) {
        const Decoded& d = r.decoded[i];
        const Example& e = examples[i];
        if (!d.correct || e.day.empty() || e.month.empty()) continue;
        const ConstTensorView a = d.attention;  // (n, S_b); rows 0..9 are the ISO characters
        for (int row : {5, 6, 8, 9}) {
            const Span& span = row < 8 ? e.month : e.day;
            const float* w = a.data() + static_cast<int64_t>(row) * a.dim(1);
            const int arg = static_cast<int>(std::max_element(w, w + a.dim(1)) - w);
            ++total;
            hit += span.contains(arg);
        }
    }
    if (checked) *checked = total;
    return total ? 100.0 * static_cast<double>(hit) / static_cast<double>(total) : 0;
}

}  // namespace nazar::demo
