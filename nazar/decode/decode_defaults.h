// Decoding settings stored in a model file: what `nazar tune` chose on a dev set (beam size,
// length and coverage penalties) and the length limits it measured them with. translate, the
// Python Translator and `nazar serve` start from them; an explicit flag, argument or request
// field still wins (docs/decoding.md "Settings chosen on dev").
//
// Stored as JSON under the metadata key "nazar.decode_defaults":
//   {"beam": 10, "length_penalty": 1.2, "coverage_penalty": 0.0, "max_length_ratio": 3.0,
//    "max_length_extra": 5, "max_length": 512,
//    "tuned": {"metric": "exact", "score": 75.1, "default_score": 74.8, "dev": "dev.tsv",
//              "sources": 5391}}
// Every settings field is optional (absent: TranslationOptions' own default). A model file is
// untrusted input: a field of the wrong type or out of range is an Error naming the file and the
// field, never a silent fallback.
#pragma once

#include "nazar/decode/translator.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace nazar {

inline constexpr const char* kDecodeDefaultsKey = "nazar.decode_defaults";

// What the stored settings were chosen by (printed by translate --progress, kept for the user).
struct TuningRecord {
    std::string metric;        // exact, bleu, chrf, wer, cer or per
    double score = 0;          // the metric with the stored settings, on the dev set
    double default_score = 0;  // the metric with TranslationOptions' defaults, same dev set
    std::string dev;           // the dev file's name as given to tune
    int64_t sources = 0;       // distinct dev sources decoded
};

struct DecodeDefaults {
    std::optional<int> beam_size;
    std::optional<float> length_penalty, coverage_penalty, max_length_ratio;
    std::optional<int> max_length_extra, max_length;
    std::optional<TuningRecord> tuned;

    bool empty() const;  // no settings (a record alone counts as none)
};

// The same settings (the tuning records aside).
bool same_settings(const DecodeDefaults& a, const DecodeDefaults& b);

std::string to_json(const DecodeDefaults& d);
// Throws Error "'<source>': metadata 'nazar.decode_defaults': <problem>" on malformed JSON, an
// unknown field, a wrong type, or a value outside what translate accepts.
DecodeDefaults decode_defaults_from_json(std::string_view text, const std::string& source);
// The file's defaults (empty when it has none).
DecodeDefaults decode_defaults_from_metadata(const std::map<std::string, std::string>& metadata,
                                             const std::string& source);

// Which TranslationOptions fields the caller set explicitly (those keep their value).
struct ExplicitOptions {
    bool beam_size = false, length_penalty = false, coverage_penalty = false;
    bool max_length_ratio = false, max_length_extra = false, max_length = false;
};

// Fills every field of `o` the caller did not set from `d`. When the beam comes from `d` and is
// smaller than o.n_best, the beam becomes o.n_best (an n-best list needs that many).
void apply_decode_defaults(const DecodeDefaults& d, const ExplicitOptions& given,
                           TranslationOptions& o);

// "beam 10, length penalty 1.2, coverage penalty 0, max length ratio 3 (tuned for exact on
// 'dev.tsv': 75.10, defaults 74.80)": the settings in a line for logs.
std::string describe(const DecodeDefaults& d);

}  // namespace nazar
