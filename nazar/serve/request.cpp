// Request parsing and JSON bodies of the server (request.h).
#include "nazar/serve/request.h"

#include "nazar/core/text_limits.h"
#include "nazar/data/utf8.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/protect.h"
#include "nazar/models/config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unordered_set>

namespace nazar::serve {

using nlohmann::json;

namespace {

// Deeper nesting than any valid request needs is refused before the parser sees it (a body of
// a million '[' would otherwise build a million nested values).
constexpr int kMaxJsonDepth = 32;

void check_depth(std::string_view body) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                throw HttpError(400, fmt::format("malformed JSON: nested deeper than {} levels "
                                                 "at byte {}",
                                                 kMaxJsonDepth, i + 1));
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix, and at most 200
// bytes (it may quote a token of the input: a number of a million digits), cut at a UTF-8
// boundary (the body was checked to be valid UTF-8).
std::string parse_reason(const char* what) {
    const char* p = std::strstr(what, "] ");
    std::string r = p ? std::string(p + 2) : std::string(what);
    constexpr std::size_t kMax = 200;
    if (r.size() > kMax) {
        std::size_t cut = kMax;
        while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
        r = r.substr(0, cut) + "...";
    }
    return r;
}

const char* type_name(const json& v) {
    return v.type_name();  // "string", "number", "array", "object", "null", "boolean"
}

int get_int(const json& v, const char* key, int lo, int hi, const char* flag) {
    if (!v.is_number_integer())
        throw HttpError(400, fmt::format("'{}' must be an integer, got {}", key, type_name(v)));
    // get<int64_t> of an unsigned above INT64_MAX would wrap: compare as unsigned first.
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
        throw HttpError(400, fmt::format("'{}' must be in [{}, {}]{}, got {}", key, lo, hi, flag,
                                         v.get<uint64_t>()));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
        throw HttpError(400,
                        fmt::format("'{}' must be in [{}, {}]{}, got {}", key, lo, hi, flag, x));
    return static_cast<int>(x);
}

float get_penalty(const json& v, const char* key) {
    if (!v.is_number())
        throw HttpError(400, fmt::format("'{}' must be a number, got {}", key, type_name(v)));
    const double x = v.get<double>();
    if (!(x >= 0 && x <= 100))
        throw HttpError(400, fmt::format("'{}' must be in [0, 100], got {}", key, x));
    return static_cast<float>(x);
}

bool get_bool(const json& v, const char* key) {
    if (!v.is_boolean())
        throw HttpError(400, fmt::format("'{}' must be true or false, got {}", key, type_name(v)));
    return v.get<bool>();
}

void read_text(const json& v, const RequestLimits& limits, std::vector<std::string>& out) {
    if (v.is_string()) {
        out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
        if (v.size() > static_cast<std::size_t>(limits.max_sentences))
            throw HttpError(400, fmt::format("{} sentences exceed the limit of {} per request "
                                             "(--max-sentences)",
                                             v.size(), limits.max_sentences));
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_string())
                throw HttpError(400, fmt::format("'text' item {} must be a string, got {}", i + 1,
                                                 type_name(v[i])));
            out.push_back(v[i].get<std::string>());
        }
    } else {
        throw HttpError(400, fmt::format("'text' must be a string or an array of strings, got {}",
                                         type_name(v)));
    }
    if (out.empty()) throw HttpError(400, "'text' has no sentences");
}

json matrix(ConstTensorView m, int rows) {
    json out = json::array();
    for (int r = 0; r < rows; ++r) {
        json row = json::array();
        const float* p = m.data() + static_cast<int64_t>(r) * m.dim(1);
        // 6 decimals: weights are in [0, 1], and the shortest form keeps the body small.
        for (int64_t c = 0; c < m.dim(1); ++c)
            row.push_back(std::round(static_cast<double>(p[c]) * 1e6) / 1e6);
        out.push_back(std::move(row));
    }
    return out;
}

// Parses the body; a key given twice in one object is refused (nlohmann keeps the last one
// silently).
json parse_json(std::string_view body) {
    json j;
    std::vector<std::unordered_set<std::string>> keys;  // per open object
    const json::parser_callback_t no_duplicates = [&](int, json::parse_event_t event,
                                                      json& parsed) {
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == json::parse_event_t::key && !keys.empty()) {
            const std::string k = parsed.get<std::string>();
            if (!keys.back().insert(k).second)
                throw HttpError(
                    400, fmt::format("malformed JSON: key '{}' given twice", k.substr(0, 100)));
        }
        return true;
    };
    try {
        j = json::parse(body, no_duplicates);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
        throw HttpError(400, "malformed JSON: " + parse_reason(e.what()));
    }
    return j;
}

// "constraints": a list with one entry per sentence: {"include": [...], "exclude": [...]}, a
// list of include phrases, or null.
// At most this many phrases per sentence: the search's work per step grows with them.
constexpr std::size_t kMaxPhrases = 64;

std::vector<std::string> read_phrases(const json& v, const std::string& where) {
    if (!v.is_array())
        throw HttpError(400,
                        fmt::format("{} must be a list of strings, got {}", where, type_name(v)));
    if (v.size() > kMaxPhrases)
        throw HttpError(
            400, fmt::format("{} has {} phrases, more than {}", where, v.size(), kMaxPhrases));
    std::vector<std::string> out;
    for (const json& p : v) {
        if (!p.is_string() || p.get<std::string>().empty())
            throw HttpError(400, fmt::format("{} must hold non-empty strings", where));
        out.push_back(p.get<std::string>());
    }
    return out;
}

std::vector<TextConstraints> read_constraints(const json& v) {
    if (!v.is_array())
        throw HttpError(400, fmt::format("'constraints' must be a list (one entry per sentence), "
                                         "got {}",
                                         type_name(v)));
    std::vector<TextConstraints> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const json& c = v[i];
        const std::string where = fmt::format("constraints[{}]", i);
        TextConstraints t;
        if (c.is_array()) {
            t.include = read_phrases(c, where);
        } else if (c.is_object()) {
            for (const auto& [key, x] : c.items()) {
                if (key == "include")
                    t.include = read_phrases(x, where + ".include");
                else if (key == "exclude")
                    t.exclude = read_phrases(x, where + ".exclude");
                else
                    throw HttpError(400, fmt::format("{}: unknown field '{}' (fields: include, "
                                                     "exclude)",
                                                     where, excerpt(key)));
            }
        } else if (!c.is_null()) {
            throw HttpError(400, fmt::format("{} must be an object, a list of phrases or null, "
                                             "got {}",
                                             where, type_name(c)));
        }
        out.push_back(std::move(t));
    }
    return out;
}

// "protect": the spans of each sentence that must come out verbatim join its include phrases.
void add_protected_spans(TranslateRequest& r) {
    static const SpanProtector builtin = SpanProtector::builtin();
    r.constraints.resize(r.text.size());
    for (std::size_t i = 0; i < r.text.size(); ++i) {
        auto& inc = r.constraints[i].include;
        builtin.add_spans(r.text[i], inc);
        if (inc.size() > kMaxPhrases)  // the same bound as a list the client sends
            throw HttpError(400, fmt::format("sentence {}: {} include phrases with its protected "
                                             "spans, more than {}",
                                             i + 1, inc.size(), kMaxPhrases));
    }
}

}  // namespace

TranslationOptions TranslateRequest::options() const {
    TranslationOptions o;
    o.beam_size = beam;
    o.n_best = n_best;
    o.length_penalty = length_penalty;
    o.coverage_penalty = coverage_penalty;
    o.max_length_ratio = max_length_ratio;
    o.max_length_extra = max_length_extra;
    o.max_length = max_length;
    o.replace_unk = replace_unk;
    o.attention = needs_attention();
    return o;
}

void TranslateRequest::apply_model_settings(const DecodeDefaults& stored) {
    TranslationOptions o = options();
    apply_decode_defaults(stored, given, o);
    beam = o.beam_size;
    length_penalty = o.length_penalty;
    coverage_penalty = o.coverage_penalty;
    max_length_ratio = o.max_length_ratio;
    max_length_extra = o.max_length_extra;
    max_length = o.max_length;
    if (n_best > beam) throw HttpError(400, fmt::format("n_best {} exceeds beam {}", n_best, beam));
}

std::string TranslateRequest::batch_key() const {
    uint32_t lp = 0, cp = 0;
    std::memcpy(&lp, &length_penalty, sizeof lp);
    std::memcpy(&cp, &coverage_penalty, sizeof cp);
    return fmt::format("{}\x1f{}\x1f{}\x1f{:08x}\x1f{:08x}\x1f{}\x1f{}", model, beam, n_best, lp,
                       cp, replace_unk ? 1 : 0, needs_attention() ? 1 : 0);
}

TranslateRequest parse_translate_request(std::string_view body, const RequestLimits& limits) {
    if (body.size() > limits.max_body_bytes)
        throw HttpError(413, fmt::format("request body of {} bytes exceeds the limit of {} bytes "
                                         "(--max-body-bytes)",
                                         body.size(), limits.max_body_bytes));
    if (const std::size_t bad = utf8::find_invalid(body); bad != utf8::npos)
        throw HttpError(400, fmt::format("request body: invalid UTF-8 at byte {} (0x{:02x})",
                                         bad + 1, static_cast<unsigned char>(body[bad])));
    check_depth(body);
    const json j = parse_json(body);
    if (!j.is_object())
        throw HttpError(400,
                        fmt::format("the request must be a JSON object, got {}", type_name(j)));

    TranslateRequest r;
    bool has_text = false;
    for (const auto& [key, v] : j.items()) {
        if (key == "text") {
            read_text(v, limits, r.text);
            has_text = true;
        } else if (key == "model") {
            if (!v.is_string() && !v.is_null())
                throw HttpError(400, fmt::format("'model' must be a string, got {}", type_name(v)));
            r.model = v.is_null() ? std::string() : v.get<std::string>();
            if (v.is_string() && r.model.empty())
                throw HttpError(400,
                                "'model' is empty: name a model, or omit it (or null) for "
                                "the default");
        } else if (key == "beam") {
            r.beam = get_int(v, "beam", 1, limits.max_beam, " (--max-beam)");
            r.given.beam_size = true;
        } else if (key == "n_best") {
            r.n_best = get_int(v, "n_best", 1, limits.max_beam, " (--max-beam)");
        } else if (key == "attention") {
            r.attention = get_bool(v, "attention");
        } else if (key == "alignment") {
            if (v.is_null()) {
                r.alignment = AlignmentFormat::none;
            } else if (v.is_string() && (v == "none" || v == "hard" || v == "soft")) {
                r.alignment = parse_alignment_format(v.get<std::string>());
            } else {
                throw HttpError(400, fmt::format("'alignment' must be null, \"hard\" or \"soft\", "
                                                 "got {}",
                                                 v.dump()));
            }
        } else if (key == "length_penalty") {
            r.length_penalty = get_penalty(v, "length_penalty");
            r.given.length_penalty = true;
        } else if (key == "coverage_penalty") {
            r.coverage_penalty = get_penalty(v, "coverage_penalty");
            r.given.coverage_penalty = true;
        } else if (key == "replace_unk") {
            r.replace_unk = get_bool(v, "replace_unk");
        } else if (key == "constraints") {
            r.constraints = v.is_null() ? std::vector<TextConstraints>{} : read_constraints(v);
        } else if (key == "protect") {
            r.protect = get_bool(v, "protect");
        } else {
            throw HttpError(400, fmt::format("unknown field '{}' (fields: text, model, beam, "
                                             "n_best, attention, alignment, length_penalty, "
                                             "coverage_penalty, replace_unk, constraints, "
                                             "protect)",
                                             excerpt(key)));
        }
    }
    if (!has_text) throw HttpError(400, "the request has no 'text'");
    if (!r.constraints.empty() && r.constraints.size() != r.text.size())
        throw HttpError(400, fmt::format("'constraints' has {} entries for {} sentences",
                                         r.constraints.size(), r.text.size()));
    if (r.protect) add_protected_spans(r);
    if (r.given.beam_size && r.n_best > r.beam)  // else once the model's beam is known
        throw HttpError(400, fmt::format("n_best {} exceeds beam {}", r.n_best, r.beam));
    return r;
}

RequestCost check_cost(const TranslateRequest& r, std::span<const int> source_lengths,
                       const RequestLimits& limits) {
    constexpr int64_t kTokenBytes = 32, kNumberBytes = 9, kHypothesisBytes = 120;
    const TranslationOptions o = r.options();
    RequestCost c;
    for (std::size_t i = 0; i < source_lengths.size(); ++i) {
        const int S = source_lengths[i];
        const int64_t T =
            max_output_length(S, o.max_length_ratio, o.max_length_extra, o.max_length);
        // a sentence with constraints may be searched twice (decode/translator.h)
        const bool twice = i < r.constraints.size() && !r.constraints[i].empty();
        c.work += (twice ? 2 : 1) * r.beam * T;
        int64_t per_hyp = kHypothesisBytes + T * kTokenBytes;
        if (r.attention) per_hyp += (T + 1) * S * kNumberBytes;
        if (r.alignment == AlignmentFormat::soft) per_hyp += T * S * kNumberBytes;
        if (r.alignment == AlignmentFormat::hard) per_hyp += T * kTokenBytes;
        c.answer_bytes += S * kTokenBytes + r.n_best * per_hyp;
    }
    if (c.work > limits.max_work)
        throw HttpError(413, fmt::format("the request could take {} hypothesis steps (sentences x "
                                         "beam x maximum output length), above the limit of {} "
                                         "(--max-work); send fewer or shorter sentences or a "
                                         "smaller beam",
                                         c.work, limits.max_work));
    if (c.answer_bytes > static_cast<int64_t>(limits.max_answer_bytes))
        throw HttpError(413, fmt::format("the answer could reach {} bytes, above the limit of {} "
                                         "(--max-answer-bytes); ask for fewer sentences, a "
                                         "smaller n_best, or no attention matrices",
                                         c.answer_bytes, limits.max_answer_bytes));
    return c;
}

std::string to_json(const TranslateRequest& r) {
    json j;
    j["text"] = r.text;
    j["model"] = r.model.empty() ? json(nullptr) : json(r.model);  // "" is refused on input
    // beam and the penalties only where the body gave them: the others come from the model's
    // stored settings (apply_model_settings), and n_best may exceed a beam not given
    if (r.given.beam_size) j["beam"] = r.beam;
    j["n_best"] = r.n_best;
    j["attention"] = r.attention;
    j["alignment"] = r.alignment == AlignmentFormat::none
                         ? json(nullptr)
                         : json(r.alignment == AlignmentFormat::hard ? "hard" : "soft");
    if (r.given.length_penalty) j["length_penalty"] = r.length_penalty;
    if (r.given.coverage_penalty) j["coverage_penalty"] = r.coverage_penalty;
    j["replace_unk"] = r.replace_unk;
    if (!r.constraints.empty()) {
        json list = json::array();
        for (const TextConstraints& c : r.constraints)
            list.push_back({{"include", c.include}, {"exclude", c.exclude}});
        j["constraints"] = std::move(list);
    }
    return j.dump();
}

std::string translation_response(const TranslateRequest& r, const std::string& model_name,
                                 const std::vector<Translation>& translations,
                                 const BatchInfo& batch) {
    json out;
    out["model"] = model_name;
    json list = json::array();
    for (const Translation& t : translations) {
        json hyps = json::array();
        for (const TranslationHypothesis& h : t.hypotheses) {
            json jh;
            jh["text"] = h.text;
            jh["tokens"] = h.tokens;
            jh["score"] = h.score;
            jh["log_prob"] = h.log_prob;
            jh["finished"] = h.finished;
            if (!r.constraints.empty()) jh["constraints_met"] = h.constraints_met;
            const int n_tgt = static_cast<int>(h.tokens.size());
            const bool have = h.attention.ndim() == 2;
            if (r.attention && have) jh["attention"] = matrix(h.attention, h.attention.dim(0));
            if (r.alignment == AlignmentFormat::soft)
                jh["alignment"] = have ? matrix(h.attention, n_tgt) : json::array();
            if (r.alignment == AlignmentFormat::hard) {
                json links = json::array();
                if (have)
                    for (const AlignmentLink& l : hard_alignment(h.attention, n_tgt))
                        links.push_back({l.src, l.tgt});
                jh["alignment"] = std::move(links);
            }
            hyps.push_back(std::move(jh));
        }
        json entry = {{"source_tokens", t.source_tokens}, {"hypotheses", std::move(hyps)}};
        if (!r.constraints.empty()) entry["unmet"] = t.unmet;
        list.push_back(std::move(entry));
    }
    out["translations"] = std::move(list);
    out["batch"] = {{"requests", batch.requests},
                    {"sentences", batch.sentences},
                    {"queue_ms", batch.queue_ms},
                    {"decode_ms", batch.decode_ms}};
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_body(int status, std::string_view message) {
    json j = {{"error", std::string(message)}, {"status", status}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string models_body(std::span<const NamedModel> models) {
    json list = json::array();
    for (const NamedModel& m : models) {
        const ModelConfig& c = m.translator->config();
        list.push_back(
            {{"name", m.name},
             {"file", std::filesystem::path(m.translator->model_path()).filename().string()},
             {"config", nazar::to_json(c)},
             {"src_vocab_size", c.src_vocab_size},
             {"tgt_vocab_size", c.tgt_vocab_size},
             {"src_tokenizer", m.translator->source_tokenizer()},
             {"tgt_tokenizer", m.translator->target_tokenizer()},
             {"decode_defaults", json::parse(to_json(m.translator->decode_defaults()))}});
    }
    json j = {{"default", models.empty() ? json(nullptr) : json(models.front().name)},
              {"models", std::move(list)}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace nazar::serve
