// ModelConfig: names, derived sizes, validation, JSON (config.h).
#include "nazar/models/config.h"

#include "nazar/core/text_limits.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdio>
#include <set>
#include <type_traits>
#include <utility>

namespace nazar {

using json = nlohmann::json;

namespace {

template <class... Args>
void usage_check(bool ok, fmt::format_string<Args...> f, Args&&... args) {
    if (!ok) throw UsageError(fmt::format(f, std::forward<Args>(args)...));
}

bool multiplicative(ScoreKind k) {
    return k == ScoreKind::dot || k == ScoreKind::general;
}

}  // namespace

const char* to_string(DecoderKind k) {
    return k == DecoderKind::bahdanau ? "bahdanau" : "luong";
}
const char* to_string(BridgeKind k) {
    switch (k) {
        case BridgeKind::automatic:
            return "auto";
        case BridgeKind::backward_first:
            return "backward-first";
        case BridgeKind::mean:
            return "mean";
        case BridgeKind::last:
            return "last";
        case BridgeKind::zero:
            return "zero";
    }
    return "?";
}
const char* to_string(AttentionTiming k) {
    switch (k) {
        case AttentionTiming::automatic:
            return "auto";
        case AttentionTiming::before:
            return "before";
        case AttentionTiming::after:
            return "after";
    }
    return "?";
}
const char* to_string(CellType k) {
    return k == CellType::gru ? "gru" : "lstm";
}

DecoderKind parse_decoder_kind(std::string_view s) {
    if (s == "bahdanau") return DecoderKind::bahdanau;
    if (s == "luong") return DecoderKind::luong;
    throw UsageError(fmt::format("unknown decoder kind '{}' (expected bahdanau or luong)", s));
}
BridgeKind parse_bridge_kind(std::string_view s) {
    if (s == "auto") return BridgeKind::automatic;
    if (s == "backward-first") return BridgeKind::backward_first;
    if (s == "mean") return BridgeKind::mean;
    if (s == "last") return BridgeKind::last;
    if (s == "zero") return BridgeKind::zero;
    throw UsageError(
        fmt::format("unknown bridge '{}' (expected auto, backward-first, mean, last or zero)", s));
}
AttentionTiming parse_attention_timing(std::string_view s) {
    if (s == "auto") return AttentionTiming::automatic;
    if (s == "before") return AttentionTiming::before;
    if (s == "after") return AttentionTiming::after;
    throw UsageError(
        fmt::format("unknown attention_timing '{}' (expected auto, before or after)", s));
}
CellType parse_cell_type(std::string_view s) {
    if (s == "gru") return CellType::gru;
    if (s == "lstm") return CellType::lstm;
    throw UsageError(fmt::format("unknown cell '{}' (expected gru or lstm)", excerpt(s)));
}

int encoder_output_size(const ModelConfig& cfg) {
    return cfg.encoder.hidden_size * (cfg.encoder.bidirectional ? 2 : 1);
}

int generator_input_size(const ModelConfig& cfg) {
    if (cfg.decoder.deep_output)
        return cfg.decoder.deep_output_size > 0 ? cfg.decoder.deep_output_size
                                                : cfg.decoder.hidden_size;
    return cfg.decoder.hidden_size;
}

BridgeKind effective_bridge(const ModelConfig& cfg) {
    if (cfg.decoder.bridge != BridgeKind::automatic) return cfg.decoder.bridge;
    return (cfg.decoder.kind == DecoderKind::bahdanau && cfg.encoder.bidirectional)
               ? BridgeKind::backward_first
               : BridgeKind::mean;
}

AttentionTiming effective_timing(const ModelConfig& cfg) {
    if (cfg.decoder.attention_timing != AttentionTiming::automatic)
        return cfg.decoder.attention_timing;
    return cfg.decoder.kind == DecoderKind::bahdanau ? AttentionTiming::before
                                                     : AttentionTiming::after;
}

AttentionConfig attention_config(const ModelConfig& cfg) {
    AttentionConfig a = cfg.attention;
    a.query_size = cfg.decoder.hidden_size;
    a.context_size = encoder_output_size(cfg);
    if (a.attention_size <= 0) a.attention_size = cfg.decoder.hidden_size;
    if (a.position_size <= 0) a.position_size = cfg.decoder.hidden_size;
    return a;
}

namespace {

// Sizes: lower bounds, and upper bounds that keep derived sizes within int.
void check_sizes(const ModelConfig& cfg) {
    const auto& enc = cfg.encoder;
    const auto& dec = cfg.decoder;
    usage_check(cfg.src_vocab_size >= 5 && cfg.tgt_vocab_size >= 5,
                "vocabulary sizes must be >= 5 (4 specials + 1 piece), got src_vocab_size {} and "
                "tgt_vocab_size {}",
                cfg.src_vocab_size, cfg.tgt_vocab_size);
    usage_check(cfg.embedding_size >= 1, "embedding_size must be >= 1, got {}", cfg.embedding_size);
    usage_check(enc.hidden_size >= 1 && enc.num_layers >= 1,
                "encoder hidden_size and num_layers must be >= 1, got {} and {}", enc.hidden_size,
                enc.num_layers);
    usage_check(dec.hidden_size >= 1 && dec.num_layers >= 1,
                "decoder hidden_size and num_layers must be >= 1, got {} and {}", dec.hidden_size,
                dec.num_layers);
    usage_check(!enc.residual || enc.num_layers >= 2,
                "encoder residual connections (encoder_residual) need at least 2 encoder layers "
                "(encoder_layers; layer k > 0 adds the input it read, layer 0 reads the "
                "embeddings), got {}",
                enc.num_layers);
    usage_check(enc.transition_depth >= 1 && enc.transition_depth <= 8,
                "encoder transition_depth (encoder_transition_depth) must be in [1, 8], got {}",
                enc.transition_depth);
    usage_check(enc.transition_depth == 1 || enc.cell == CellType::gru,
                "encoder transition_depth {} (deep transition) needs GRU cells (cell: gru)",
                enc.transition_depth);
    usage_check(enc.dropout >= 0 && enc.dropout < 1, "encoder dropout must be in [0, 1), got {}",
                enc.dropout);
    usage_check(dec.dropout >= 0 && dec.dropout < 1, "decoder dropout must be in [0, 1), got {}",
                dec.dropout);
    usage_check(dec.deep_output_size >= 0, "decoder deep_output_size must be >= 0, got {}",
                dec.deep_output_size);
    // Upper bounds, far above any real model, so that derived sizes (C = 2·hidden, G·H, L·H,
    // H + C, 2·window + 1) stay within int: beyond them a hostile nazar.config would be
    // undefined behaviour (signed overflow) before any shape check.
    const std::pair<const char*, int> sizes[] = {
        {"embedding_size", cfg.embedding_size},
        {"encoder hidden_size", enc.hidden_size},
        {"decoder hidden_size", dec.hidden_size},
        {"decoder deep_output_size", dec.deep_output_size},
        {"attention attention_size", cfg.attention.attention_size},
        {"attention position_size", cfg.attention.position_size},
        {"attention window", cfg.attention.window}};
    for (const auto& [name, v] : sizes)
        usage_check(v <= kMaxModelSize, "{} must be <= {}, got {}", name, kMaxModelSize, v);
    usage_check(cfg.src_vocab_size <= kMaxVocabSize && cfg.tgt_vocab_size <= kMaxVocabSize,
                "vocabulary sizes must be <= {}, got src_vocab_size {} and tgt_vocab_size {}",
                kMaxVocabSize, cfg.src_vocab_size, cfg.tgt_vocab_size);
    usage_check(enc.num_layers <= kMaxLayers && dec.num_layers <= kMaxLayers,
                "num_layers must be <= {}, got encoder {} and decoder {}", kMaxLayers,
                enc.num_layers, dec.num_layers);
}

// Options that contradict the decoder kind, the encoder or each other.
void check_combinations(const ModelConfig& cfg) {
    const auto& enc = cfg.encoder;
    const auto& dec = cfg.decoder;
    usage_check(!(dec.deep_output && dec.kind == DecoderKind::luong),
                "deep_output is Bahdanau's output layer; the luong decoder's output is tanh(W_c "
                "[s_t; c_t]) "
                "(set decoder kind bahdanau or deep_output false)");
    usage_check(!(dec.input_feeding && dec.kind == DecoderKind::bahdanau),
                "input_feeding applies to the luong decoder; the bahdanau decoder always feeds c_t "
                "into its RNN");
    const int C = encoder_output_size(cfg), H = dec.hidden_size;
    if (cfg.attention.score == ScoreKind::dot)
        usage_check(H == C,
                    "dot attention needs decoder hidden_size == encoder output size, got {} vs {}; "
                    "use 'general' (a learned {}x{} W_a) or change the sizes",
                    H, C, H, C);
    usage_check(!(effective_bridge(cfg) == BridgeKind::backward_first && !enc.bidirectional),
                "bridge backward-first needs a bidirectional encoder (it reads h_0 of the backward "
                "direction); "
                "use mean, last or zero");
    const int d_out = generator_input_size(cfg);
    if (cfg.tie_target_embeddings)
        usage_check(d_out == cfg.embedding_size,
                    "tie_target_embeddings needs the generator input size ({}: {}) to equal "
                    "embedding_size ({})",
                    d_out, dec.deep_output ? "deep_output_size" : "decoder hidden_size",
                    cfg.embedding_size);
    usage_check(!(cfg.copy_attention && cfg.attention.monotonic),
                "copy_attention cannot be combined with monotonic attention (copying reads the "
                "weights as a distribution; monotonic weights may sum to less than 1)");
}

// The special ids: inside both vocabularies and distinct.
void check_special_ids(const ModelConfig& cfg) {
    const auto& sp = cfg.special_ids;
    const std::pair<const char*, int> specials[] = {
        {"pad", sp.pad}, {"unk", sp.unk}, {"bos", sp.bos}, {"eos", sp.eos}};
    for (const auto& [name, id] : specials)
        usage_check(id >= 0 && id < cfg.tgt_vocab_size && id < cfg.src_vocab_size,
                    "special id {} = {} is outside the vocabularies (src {}, tgt {})", name, id,
                    cfg.src_vocab_size, cfg.tgt_vocab_size);
    // Equal ids would make padding end a sentence, or </s> start one (runaway decoding).
    usage_check(sp.pad != sp.unk && sp.pad != sp.bos && sp.pad != sp.eos && sp.unk != sp.bos &&
                    sp.unk != sp.eos && sp.bos != sp.eos,
                "special ids must be distinct, got pad {}, unk {}, bos {}, eos {}", sp.pad, sp.unk,
                sp.bos, sp.eos);
}

// Attention timing against the decoder and the score; the warning of an unusual pairing.
std::vector<std::string> check_timing(const ModelConfig& cfg) {
    const auto& dec = cfg.decoder;
    std::vector<std::string> warnings;
    const AttentionTiming timing = effective_timing(cfg);
    usage_check(!(dec.kind == DecoderKind::bahdanau && timing == AttentionTiming::after),
                "attention_timing 'after' is not supported by the bahdanau decoder (its RNN input "
                "needs c_t before "
                "the step); use decoder kind luong for attention after the step");
    const ScoreKind score = cfg.attention.score;
    const bool unusual = (score == ScoreKind::additive && timing == AttentionTiming::after) ||
                         (multiplicative(score) && timing == AttentionTiming::before);
    if (unusual) {
        const char* which = timing == AttentionTiming::after ? "after" : "before";
        usage_check(dec.attention_timing != AttentionTiming::automatic,
                    "score '{}' with the {} decoder computes attention {} the RNN step, an unusual "
                    "combination "
                    "(docs/spec.md §6.3); to run it as an ablation set decoder "
                    "attention_timing: {} explicitly",
                    to_string(score), to_string(dec.kind), which, which);
        warnings.push_back(fmt::format(
            "attention score '{}' with attention_timing '{}' mixes Bahdanau's and Luong's designs "
            "(ablation). "
            "The study notes' mistake 2 (docs/spec.md §6.3): with timing 'after' the query "
            "s_t is computed before the "
            "context, so s_t "
            "already 'knows' what it will emit and attention cannot inform that choice; with "
            "'before' a "
            "multiplicative score compares s_{{t-1}} with h_i although it was designed for s_t",
            to_string(score), which));
    }
    return warnings;
}

}  // namespace

std::vector<std::string> validate(const ModelConfig& cfg) {
    check_sizes(cfg);
    check_combinations(cfg);
    check_special_ids(cfg);
    validate(attention_config(cfg));
    return check_timing(cfg);
}

void validate_and_warn(const ModelConfig& cfg) {
    for (const auto& w : validate(cfg)) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

namespace {
json to_json_without_extensions(const ModelConfig& cfg) {
    const auto& e = cfg.encoder;
    const auto& d = cfg.decoder;
    const auto& a = cfg.attention;
    return json{
        {"src_vocab_size", cfg.src_vocab_size},
        {"tgt_vocab_size", cfg.tgt_vocab_size},
        {"embedding_size", cfg.embedding_size},
        {"encoder",
         {{"cell", to_string(e.cell)},
          {"hidden_size", e.hidden_size},
          {"num_layers", e.num_layers},
          {"bidirectional", e.bidirectional},
          {"dropout", e.dropout}}},
        {"decoder",
         {{"kind", to_string(d.kind)},
          {"cell", to_string(d.cell)},
          {"hidden_size", d.hidden_size},
          {"num_layers", d.num_layers},
          {"dropout", d.dropout},
          {"bridge", to_string(d.bridge)},
          {"attention_timing", to_string(d.attention_timing)},
          {"input_feeding", d.input_feeding},
          {"deep_output", d.deep_output},
          {"deep_output_size", d.deep_output_size}}},
        {"attention",
         {{"score", to_string(a.score)},
          {"scale", to_string(a.scale)},
          {"local", to_string(a.local)},
          {"window", a.window},
          {"attention_size", a.attention_size},
          {"position_size", a.position_size}}},
        {"tie_target_embeddings", cfg.tie_target_embeddings},
        {"special_ids",
         {{"pad", cfg.special_ids.pad},
          {"unk", cfg.special_ids.unk},
          {"bos", cfg.special_ids.bos},
          {"eos", cfg.special_ids.eos}}},
    };
}
}  // namespace

json to_json(const ModelConfig& cfg) {
    json j = to_json_without_extensions(cfg);
    // written only when on, so that a model without it keeps its JSON byte for byte
    if (cfg.attention.coverage) j["attention"]["coverage"] = true;
    if (cfg.attention.monotonic) {
        j["attention"]["monotonic"] = true;
        j["attention"]["monotonic_bias_init"] = cfg.attention.monotonic_bias_init;
        j["attention"]["monotonic_noise"] = cfg.attention.monotonic_noise;
    }
    if (cfg.attention.mocha_chunk > 0) j["attention"]["mocha_chunk"] = cfg.attention.mocha_chunk;
    if (cfg.copy_attention) j["copy_attention"] = true;
    if (cfg.encoder.layer_norm) j["encoder"]["layer_norm"] = true;
    if (cfg.decoder.layer_norm) j["decoder"]["layer_norm"] = true;
    if (cfg.encoder.residual) j["encoder"]["residual"] = true;
    if (cfg.encoder.transition_depth > 1)
        j["encoder"]["transition_depth"] = cfg.encoder.transition_depth;
    return j;
}

namespace {

// Reads the keys of one JSON object, rejecting unknown ones.
class Reader {
public:
    Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
        usage_check(j.is_object(), "model config: '{}' must be an object, got {}", where_,
                    excerpt(j.dump()));
    }
    template <class T>
    void get(const char* key, T& out) {
        seen_.insert(key);
        auto it = j_.find(key);
        if (it == j_.end()) return;
        try {
            if constexpr (std::is_same_v<T,
                                         int>) {  // not a float (UB when out of range), no wrapping
                const bool fits = it->is_number_unsigned()
                                      ? it->template get<uint64_t>() <= INT_MAX
                                      : it->is_number_integer() &&
                                            it->template get<int64_t>() >= INT_MIN &&
                                            it->template get<int64_t>() <= INT_MAX;
                usage_check(fits, "model config: '{}{}' must be an integer, got {}", prefix(), key,
                            excerpt(it->dump()));
            }
            out = it->template get<T>();
        } catch (const json::exception&) {
            throw UsageError(fmt::format("model config: '{}{}' has the wrong type: {}", prefix(),
                                         key, excerpt(it->dump())));
        }
    }
    template <class E, class Parse>
    void get_enum(const char* key, E& out, Parse parse) {
        std::string s;
        bool present = j_.contains(key);
        get(key, s);
        if (present) out = parse(s);
    }
    const json* object(const char* key) {
        seen_.insert(key);
        auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }
    void finish() const {
        for (auto it = j_.begin(); it != j_.end(); ++it)
            usage_check(seen_.count(it.key()) != 0, "model config: unknown key '{}{}'", prefix(),
                        it.key());
    }
    std::string prefix() const { return where_.empty() ? "" : where_ + "."; }

private:
    const json& j_;
    std::string where_;
    std::set<std::string> seen_;
};

}  // namespace

ModelConfig model_config_from_json(const json& j) {
    ModelConfig cfg;
    Reader r(j, "");
    r.get("src_vocab_size", cfg.src_vocab_size);
    r.get("tgt_vocab_size", cfg.tgt_vocab_size);
    r.get("embedding_size", cfg.embedding_size);
    r.get("tie_target_embeddings", cfg.tie_target_embeddings);
    r.get("copy_attention", cfg.copy_attention);
    if (const json* e = r.object("encoder")) {
        Reader re(*e, "encoder");
        re.get_enum("cell", cfg.encoder.cell, parse_cell_type);
        re.get("hidden_size", cfg.encoder.hidden_size);
        re.get("num_layers", cfg.encoder.num_layers);
        re.get("bidirectional", cfg.encoder.bidirectional);
        re.get("dropout", cfg.encoder.dropout);
        re.get("layer_norm", cfg.encoder.layer_norm);
        re.get("residual", cfg.encoder.residual);
        re.get("transition_depth", cfg.encoder.transition_depth);
        re.finish();
    }
    if (const json* d = r.object("decoder")) {
        Reader rd(*d, "decoder");
        auto& dc = cfg.decoder;
        rd.get_enum("kind", dc.kind, parse_decoder_kind);
        rd.get_enum("cell", dc.cell, parse_cell_type);
        rd.get("hidden_size", dc.hidden_size);
        rd.get("num_layers", dc.num_layers);
        rd.get("dropout", dc.dropout);
        rd.get_enum("bridge", dc.bridge, parse_bridge_kind);
        rd.get_enum("attention_timing", dc.attention_timing, parse_attention_timing);
        rd.get("input_feeding", dc.input_feeding);
        rd.get("deep_output", dc.deep_output);
        rd.get("deep_output_size", dc.deep_output_size);
        rd.get("layer_norm", dc.layer_norm);
        rd.finish();
    }
    if (const json* a = r.object("attention")) {
        Reader ra(*a, "attention");
        auto& ac = cfg.attention;
        ra.get_enum("score", ac.score, parse_score_kind);
        ra.get_enum("scale", ac.scale, parse_scale_mode);
        ra.get_enum("local", ac.local, parse_local_mode);
        ra.get("window", ac.window);
        ra.get("attention_size", ac.attention_size);
        ra.get("position_size", ac.position_size);
        ra.get("coverage", ac.coverage);
        ra.get("monotonic", ac.monotonic);
        ra.get("monotonic_bias_init", ac.monotonic_bias_init);
        ra.get("monotonic_noise", ac.monotonic_noise);
        ra.get("mocha_chunk", ac.mocha_chunk);
        ra.finish();
    }
    if (const json* s = r.object("special_ids")) {
        Reader rs(*s, "special_ids");
        rs.get("pad", cfg.special_ids.pad);
        rs.get("unk", cfg.special_ids.unk);
        rs.get("bos", cfg.special_ids.bos);
        rs.get("eos", cfg.special_ids.eos);
        rs.finish();
    }
    r.finish();
    return cfg;
}

std::string to_json_string(const ModelConfig& cfg) {
    return to_json(cfg).dump();
}

ModelConfig model_config_from_string(std::string_view text) {
    check_nesting(text, "model config", TextSyntax::json);
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw UsageError(fmt::format("model config is not valid JSON: {}", excerpt(e.what())));
    }
    return model_config_from_json(j);
}

}  // namespace nazar
