// Decoding settings stored in a model file (decode_defaults.h).
#include "nazar/decode/decode_defaults.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace nazar {
namespace {

using json = nlohmann::json;

// The command line's limits (cli/cmd_translate.cpp): a stored value translate would refuse as a
// flag is refused here too.
constexpr int kMaxBeam = 1024, kMaxLength = 1 << 20;
constexpr double kMaxPenalty = 1e6, kMaxRatio = 1e9;

struct Reader {
    const std::string& source;

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(fmt::format("'{}': metadata '{}': {}", source, kDecodeDefaultsKey, what));
    }
    int integer(const json& v, const char* key, int64_t lo, int64_t hi) const {
        if (!v.is_number_integer())
            fail(fmt::format("'{}' must be an integer, got {}", key, v.dump()));
        const auto x = v.get<int64_t>();
        if (x < lo || x > hi || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)))
            fail(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v.dump()));
        return static_cast<int>(x);
    }
    double number(const json& v, const char* key, double lo, double hi) const {
        if (!v.is_number()) fail(fmt::format("'{}' must be a number, got {}", key, v.dump()));
        const auto x = v.get<double>();
        if (!std::isfinite(x) || x < lo || x > hi)
            fail(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v.dump()));
        return x;
    }
    std::string text(const json& v, const char* key) const {
        if (!v.is_string()) fail(fmt::format("'{}' must be a string, got {}", key, v.dump()));
        return v.get<std::string>();
    }

    TuningRecord record(const json& j) const {
        if (!j.is_object()) fail(fmt::format("'tuned' must be an object, got {}", j.dump()));
        TuningRecord r;
        for (const auto& [key, v] : j.items()) {
            constexpr double kBig = std::numeric_limits<double>::max();
            if (key == "metric")
                r.metric = text(v, "tuned.metric");
            else if (key == "score")
                r.score = number(v, "tuned.score", -kBig, kBig);
            else if (key == "default_score")
                r.default_score = number(v, "tuned.default_score", -kBig, kBig);
            else if (key == "dev")
                r.dev = text(v, "tuned.dev");
            else if (key == "sources")
                r.sources = integer(v, "tuned.sources", 0, std::numeric_limits<int>::max());
            else
                fail(fmt::format("unknown field 'tuned.{}'", key));
        }
        return r;
    }
};

}  // namespace

bool DecodeDefaults::empty() const {
    return !beam_size && !length_penalty && !coverage_penalty && !max_length_ratio &&
           !max_length_extra && !max_length;
}

bool same_settings(const DecodeDefaults& a, const DecodeDefaults& b) {
    return a.beam_size == b.beam_size && a.length_penalty == b.length_penalty &&
           a.coverage_penalty == b.coverage_penalty && a.max_length_ratio == b.max_length_ratio &&
           a.max_length_extra == b.max_length_extra && a.max_length == b.max_length;
}

// A float as the shortest decimal that reads back as it ("0.6", not 0.6000000238418579).
static double shortest(float x) {
    return std::stod(fmt::format("{}", x));
}

std::string to_json(const DecodeDefaults& d) {
    json j = json::object();
    if (d.beam_size) j["beam"] = *d.beam_size;
    if (d.length_penalty) j["length_penalty"] = shortest(*d.length_penalty);
    if (d.coverage_penalty) j["coverage_penalty"] = shortest(*d.coverage_penalty);
    if (d.max_length_ratio) j["max_length_ratio"] = shortest(*d.max_length_ratio);
    if (d.max_length_extra) j["max_length_extra"] = *d.max_length_extra;
    if (d.max_length) j["max_length"] = *d.max_length;
    if (d.tuned) {
        const TuningRecord& r = *d.tuned;
        j["tuned"] = {{"metric", r.metric},
                      {"score", r.score},
                      {"default_score", r.default_score},
                      {"dev", r.dev},
                      {"sources", r.sources}};
    }
    return j.dump();
}

DecodeDefaults decode_defaults_from_json(std::string_view text, const std::string& source) {
    const Reader in{source};
    json j;
    try {
        check_nesting(text, fmt::format("'{}': metadata '{}'", source, kDecodeDefaultsKey),
                      TextSyntax::json);  // before the recursive parser
        j = json::parse(text);
    } catch (const json::exception& e) {
        in.fail(fmt::format("not JSON ({})", e.what()));
    }
    if (!j.is_object()) in.fail(fmt::format("must be a JSON object, got {}", j.dump()));
    DecodeDefaults d;
    for (const auto& [key, v] : j.items()) {
        if (key == "beam")
            d.beam_size = in.integer(v, "beam", 1, kMaxBeam);
        else if (key == "length_penalty")
            d.length_penalty = static_cast<float>(in.number(v, "length_penalty", 0, kMaxPenalty));
        else if (key == "coverage_penalty")
            d.coverage_penalty =
                static_cast<float>(in.number(v, "coverage_penalty", 0, kMaxPenalty));
        else if (key == "max_length_ratio")
            d.max_length_ratio = static_cast<float>(in.number(v, "max_length_ratio", 0, kMaxRatio));
        else if (key == "max_length_extra")
            d.max_length_extra = in.integer(v, "max_length_extra", std::numeric_limits<int>::min(),
                                            std::numeric_limits<int>::max());
        else if (key == "max_length")
            d.max_length = in.integer(v, "max_length", 1, kMaxLength);
        else if (key == "tuned")
            d.tuned = in.record(v);
        else
            in.fail(
                fmt::format("unknown field '{}' (fields: beam, length_penalty, "
                            "coverage_penalty, max_length_ratio, max_length_extra, "
                            "max_length, tuned)",
                            key));
    }
    return d;
}

DecodeDefaults decode_defaults_from_metadata(const std::map<std::string, std::string>& metadata,
                                             const std::string& source) {
    const auto it = metadata.find(kDecodeDefaultsKey);
    return it == metadata.end() ? DecodeDefaults{} : decode_defaults_from_json(it->second, source);
}

void apply_decode_defaults(const DecodeDefaults& d, const ExplicitOptions& given,
                           TranslationOptions& o) {
    if (d.beam_size && !given.beam_size) o.beam_size = std::max(*d.beam_size, o.n_best);
    if (d.length_penalty && !given.length_penalty) o.length_penalty = *d.length_penalty;
    if (d.coverage_penalty && !given.coverage_penalty) o.coverage_penalty = *d.coverage_penalty;
    if (d.max_length_ratio && !given.max_length_ratio) o.max_length_ratio = *d.max_length_ratio;
    if (d.max_length_extra && !given.max_length_extra) o.max_length_extra = *d.max_length_extra;
    if (d.max_length && !given.max_length) o.max_length = *d.max_length;
}

std::string describe(const DecodeDefaults& d) {
    std::string s;
    const auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
    if (d.beam_size) add(fmt::format("beam {}", *d.beam_size));
    if (d.length_penalty) add(fmt::format("length penalty {:g}", *d.length_penalty));
    if (d.coverage_penalty) add(fmt::format("coverage penalty {:g}", *d.coverage_penalty));
    if (d.max_length_ratio) add(fmt::format("max length ratio {:g}", *d.max_length_ratio));
    if (d.max_length_extra) add(fmt::format("max length extra {}", *d.max_length_extra));
    if (d.max_length) add(fmt::format("max length {}", *d.max_length));
    if (d.tuned)
        s += fmt::format(" (tuned for {} on '{}': {:.2f}, defaults {:.2f})", d.tuned->metric,
                         d.tuned->dev, d.tuned->score, d.tuned->default_score);
    return s.empty() ? "none" : s;
}

}  // namespace nazar
