#include "apps/demo/demo.h"

#include "nazar/core/check.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/model_file.h"
#include "nazar/train/clip.h"
#include "nazar/train/optim.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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

const std::vector<std::string>& demo_attention_names() {
    static const std::vector<std::string> names{"bahdanau", "dot",     "general",
                                                "concat",   "local-m", "local-p"};
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
    if (cfg.attention == "bahdanau") {
        m.decoder.kind = DecoderKind::bahdanau;
        m.attention.score = ScoreKind::additive;
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

TrainReport train_demo(DemoModel& m, const DemoConfig& cfg, const TaskData& data,
                       const std::function<void(const TrainProgress&)>& on_progress) {
    NZ_CHECK(!data.train.empty(), "train_demo: no training pairs");
    NZ_CHECK(cfg.batch_size >= 1 && cfg.max_steps >= 0, "train_demo: batch_size {} / max_steps {}",
             cfg.batch_size, cfg.max_steps);
    Seq2Seq& model = *m.model;
    ParamList params = model.parameters();
    Optimizer optim = Optimizer::adam(params, {.lr = cfg.lr});
    Rng rng(cfg.seed, 0xd370);
    const int n = static_cast<int>(data.train.size());
    std::vector<std::vector<int32_t>> src(static_cast<std::size_t>(n)),
        tgt(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        src[i] = m.encode_source(data.train[i].source);
        tgt[i] = m.encode_target(data.train[i].target);
    }
    std::vector<int> order(static_cast<std::size_t>(n));
    int pos = n, epoch = 0;
    TrainReport rep;
    rep.parameters = count_params(params);
    double window_loss = 0, best_dev = -1, lr = cfg.lr;
    int64_t window_tokens = 0;
    std::vector<std::vector<int32_t>> bs, bt;
    const auto t0 = Clock::now();
    double valid_time = 0;
    for (int step = 1; step <= cfg.max_steps; ++step) {
        bs.clear();
        bt.clear();
        for (int k = 0; k < cfg.batch_size; ++k) {
            if (pos == n) {  // new epoch: Fisher-Yates from the seed and the epoch
                std::iota(order.begin(), order.end(), 0);
                Rng er = rng.split(static_cast<uint64_t>(epoch++));
                for (int i = n - 1; i > 0; --i)
                    std::swap(order[i], order[er.below(static_cast<uint64_t>(i) + 1)]);
                pos = 0;
            }
            bs.push_back(src[order[pos]]);
            bt.push_back(tgt[order[pos++]]);
        }
        const Batch batch = batch_from_ids(bs, bt);
        zero_grads(params);
        const LossStats st = model.train_step(batch, {}, rng);
        const float norm = clip_grad_norm(params, static_cast<float>(cfg.clip));
        if (std::isfinite(st.loss) && std::isfinite(norm)) {
            optim.set_lr(lr);
            optim.step();
            window_loss += st.loss;
            window_tokens += st.tokens;
        }
        rep.steps = step;
        rep.seconds = since(t0) - valid_time;
        const bool out_of_time = cfg.max_seconds > 0 && rep.seconds >= cfg.max_seconds;
        const bool validate =
            step % cfg.valid_interval == 0 || step == cfg.max_steps || out_of_time;
        if (!validate) continue;
        TrainProgress pr{.step = step,
                         .seconds = rep.seconds,
                         .loss = window_tokens ? window_loss / window_tokens : 0,
                         .lr = lr};
        rep.final_loss = pr.loss;
        window_loss = 0;
        window_tokens = 0;
        const auto v0 = Clock::now();
        if (!data.dev.empty()) {
            pr.dev_exact = evaluate(m, data.dev).exact;
            rep.dev_exact = pr.dev_exact;
            if (pr.dev_exact <= best_dev) lr *= 0.5;  // plateau: halve the step size
            best_dev = std::max(best_dev, pr.dev_exact);
        }
        valid_time += since(v0);
        if (on_progress) on_progress(pr);
        if (out_of_time) {
            rep.stopped_by_time = true;
            break;
        }
        if (!data.dev.empty() && pr.dev_exact >= cfg.stop_exact) break;
    }
    rep.ms_per_step = rep.steps ? 1000.0 * rep.seconds / rep.steps : 0;
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
        std::vector<GreedyResult> out = greedy_decode(*m.model, src, len, S);
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
