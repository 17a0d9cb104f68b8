// AttentionConfig: names, validation, the cost model of docs/spec.md §9.
#include "nazar/attention/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace nazar {

namespace {
template <class... Args>
void usage_check(bool ok, fmt::format_string<Args...> f, Args&&... args) {
    if (!ok) throw UsageError(fmt::format(f, std::forward<Args>(args)...));
}
}  // namespace

ScoreKind parse_score_kind(std::string_view s) {
    if (s == "bahdanau" || s == "additive") return ScoreKind::additive;
    if (s == "dot") return ScoreKind::dot;
    if (s == "general") return ScoreKind::general;
    if (s == "concat") return ScoreKind::concat;
    throw UsageError(fmt::format(
        "unknown attention score '{}' (expected bahdanau, additive, dot, general or concat)", s));
}

ScaleMode parse_scale_mode(std::string_view s) {
    if (s == "none") return ScaleMode::none;
    if (s == "sqrt") return ScaleMode::inv_sqrt;
    if (s == "learned") return ScaleMode::learned;
    throw UsageError(
        fmt::format("unknown attention scale '{}' (expected none, sqrt or learned)", s));
}

LocalMode parse_local_mode(std::string_view s) {
    if (s == "global") return LocalMode::global;
    if (s == "local-m") return LocalMode::monotonic;
    if (s == "local-p") return LocalMode::predictive;
    throw UsageError(
        fmt::format("unknown attention locality '{}' (expected global, local-m or local-p)", s));
}

const char* to_string(ScoreKind k) {
    switch (k) {
        case ScoreKind::additive:
            return "additive";
        case ScoreKind::dot:
            return "dot";
        case ScoreKind::general:
            return "general";
        case ScoreKind::concat:
            return "concat";
    }
    return "?";
}

const char* to_string(ScaleMode m) {
    switch (m) {
        case ScaleMode::none:
            return "none";
        case ScaleMode::inv_sqrt:
            return "sqrt";
        case ScaleMode::learned:
            return "learned";
    }
    return "?";
}

const char* to_string(LocalMode m) {
    switch (m) {
        case LocalMode::global:
            return "global";
        case LocalMode::monotonic:
            return "local-m";
        case LocalMode::predictive:
            return "local-p";
    }
    return "?";
}

void apply_attention_name(std::string_view name, AttentionConfig& cfg) {
    if (name == "monotonic") {
        cfg.monotonic = true;
    } else if (name == "local-m" || name == "local-p" || name == "global") {
        cfg.local = parse_local_mode(name);
    } else if (name == "scaled-dot" || name == "scaled-general") {
        cfg.score = parse_score_kind(name.substr(7));
        cfg.scale = ScaleMode::inv_sqrt;
    } else if (name == "bahdanau" || name == "additive" || name == "dot" || name == "general" ||
               name == "concat") {
        cfg.score = parse_score_kind(name);
    } else {
        throw UsageError(fmt::format(
            "unknown attention '{}' (expected bahdanau, dot, general, concat, scaled-dot, "
            "scaled-general, global, local-m, local-p or monotonic)",
            name));
    }
}

std::string describe(const AttentionConfig& cfg) {
    std::string s;
    if (cfg.mocha_chunk > 0)
        s += fmt::format("MoChA w={} ", cfg.mocha_chunk);
    else if (cfg.monotonic)
        s += "monotonic ";
    if (cfg.local != LocalMode::global) s += fmt::format("{} ", to_string(cfg.local));
    if (cfg.scale != ScaleMode::none) s += fmt::format("scaled({}) ", to_string(cfg.scale));
    s += to_string(cfg.score);
    if (cfg.local != LocalMode::global) s += fmt::format(" D={}", cfg.window);
    s += fmt::format(" (H={}, C={}", cfg.query_size, cfg.context_size);
    if (cfg.score == ScoreKind::additive || cfg.score == ScoreKind::concat)
        s += fmt::format(", A={}", cfg.attention_size);
    if (cfg.local == LocalMode::predictive)
        s += fmt::format(", P={}", cfg.position_size > 0 ? cfg.position_size : cfg.query_size);
    if (cfg.coverage) s += ", coverage";
    return s + ")";
}

void validate(const AttentionConfig& cfg) {
    const int H = cfg.query_size, C = cfg.context_size;
    usage_check(H > 0, "attention: query size H (decoder state) must be positive, got {}", H);
    usage_check(C > 0, "attention: context size C (encoder output) must be positive, got {}", C);
    usage_check(cfg.score != ScoreKind::dot || H == C,
                "dot attention needs the decoder state size H to equal the encoder output size C, "
                "got H={} and "
                "C={}; use the 'general' score (a learned {}x{} W_a maps one onto the other) or "
                "make the sizes equal",
                H, C, H, C);
    const bool additive = cfg.score == ScoreKind::additive || cfg.score == ScoreKind::concat;
    usage_check(!additive || cfg.attention_size > 0,
                "{} attention needs an attention size A > 0, got {}", to_string(cfg.score),
                cfg.attention_size);
    usage_check(!additive || cfg.scale == ScaleMode::none,
                "attention scale '{}' applies to dot and general scores only, not to {}",
                to_string(cfg.scale), to_string(cfg.score));
    usage_check(cfg.local == LocalMode::global || cfg.window >= 1,
                "{} attention needs a half-window D >= 1, got {}", to_string(cfg.local),
                cfg.window);
    usage_check(!cfg.coverage || additive,
                "coverage needs an additive or concat attention score (it enters the score's "
                "hidden layer as w_c cov), got '{}'; use attention: additive or concat",
                to_string(cfg.score));
    usage_check(!cfg.monotonic || cfg.local == LocalMode::global,
                "monotonic attention reads the whole source left to right: it needs global "
                "attention, got {}",
                to_string(cfg.local));
    usage_check(!cfg.monotonic || !cfg.coverage,
                "monotonic attention and coverage cannot be combined (each carries its own "
                "state from step to step); choose one");
    usage_check(!cfg.monotonic || (std::isfinite(cfg.monotonic_bias_init) &&
                                   std::isfinite(cfg.monotonic_noise) && cfg.monotonic_noise >= 0),
                "monotonic attention: bias init must be finite and noise >= 0, got {} and {}",
                cfg.monotonic_bias_init, cfg.monotonic_noise);
    usage_check(cfg.mocha_chunk >= 0 && cfg.mocha_chunk <= 256,
                "MoChA: the chunk w must be in [1, 256] (0 = plain monotonic attention), got {}",
                cfg.mocha_chunk);
    usage_check(cfg.mocha_chunk == 0 || cfg.monotonic,
                "mocha_chunk {} needs monotonic attention (MoChA attends to the chunk ending where "
                "the monotonic reader stops); set monotonic: true",
                cfg.mocha_chunk);
    usage_check(cfg.mocha_chunk == 0 || additive,
                "MoChA needs an additive or concat score (its chunk energy shares the score's "
                "hidden layer), got '{}'",
                to_string(cfg.score));
    usage_check(cfg.position_size >= 0, "local-p position size must be >= 0 (0 = H), got {}",
                cfg.position_size);
}

AttentionCost attention_cost(const AttentionConfig& cfg, int S) {
    const int64_t H = cfg.query_size, C = cfg.context_size, A = cfg.attention_size;
    const int64_t P = cfg.position_size > 0 ? cfg.position_size : H;
    AttentionCost c;
    c.positions = cfg.local == LocalMode::global ? S : std::min(2 * cfg.window + 1, S);
    const int64_t n = c.positions;
    switch (cfg.score) {
        case ScoreKind::additive:
        case ScoreKind::concat:
            c.keys = S * A * C;
            c.query = A * H;
            c.scores = n * 2 * A;  // add + tanh, then v_a ·
            c.params = A * (H + C + 1);
            break;
        case ScoreKind::general:
            c.keys = S * H * C;
            c.scores = n * H;
            c.params = H * C;
            break;
        case ScoreKind::dot:
            c.scores = n * C;
            break;
    }
    if (cfg.scale == ScaleMode::learned) c.params += 1;
    if (cfg.coverage) {  // u + w_c cov_i per scored position; w_c (A)
        c.scores += n * A;
        c.params += A;
    }
    if (cfg.monotonic) {  // + r, sigmoid and the recurrence per scored position; r (1)
        c.scores += 3 * n;
        c.params += 1;
    }
    if (cfg.mocha_chunk > 0) {  // u: add + tanh, v_c ·; each window's softmax and β, ~3 per cell
        c.scores += n * 2 * A + 3 * n * std::min<int64_t>(cfg.mocha_chunk, n);
        c.params += A;
    }
    if (cfg.local == LocalMode::predictive) {
        c.query += P * H + P;
        c.params += P * (H + 1);
    }
    c.context = n * C;
    return c;
}

}  // namespace nazar
