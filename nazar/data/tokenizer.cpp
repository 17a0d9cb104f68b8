#include "nazar/data/tokenizer.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/utf8.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <unordered_map>

// Exported by libsentencepiece but not declared in the Debian 12 headers (0.1.97).
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
int GetMinLogLevel();
}  // namespace sentencepiece::logging

namespace nazar {

std::string_view to_string(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::character:
            return "char";
        case TokenizerKind::word:
            return "word";
        case TokenizerKind::spm:
            return "spm";
    }
    return "?";
}

TokenizerKind parse_tokenizer_kind(std::string_view name) {
    if (name == "char") return TokenizerKind::character;
    if (name == "word") return TokenizerKind::word;
    if (name == "spm") return TokenizerKind::spm;
    throw UsageError(
        fmt::format("unknown tokenizer '{}' (expected char, word or spm)", excerpt(name)));
}

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::character() {
    Tokenizer t;
    t.kind_ = TokenizerKind::character;
    return t;
}

Tokenizer Tokenizer::word() {
    return Tokenizer();
}

Tokenizer Tokenizer::spm_from_proto(std::string serialized_model_proto) {
    auto sp = std::make_shared<sentencepiece::SentencePieceProcessor>();
    const auto status = sp->LoadFromSerializedProto(serialized_model_proto);
    NZ_CHECK_INPUT(status.ok(), "cannot load SentencePiece model ({} bytes): {}",
                   serialized_model_proto.size(), status.ToString());
    Tokenizer t;
    t.kind_ = TokenizerKind::spm;
    t.spm_proto_ = std::move(serialized_model_proto);
    t.spm_ = std::move(sp);
    return t;
}

Tokenizer Tokenizer::spm_from_file(const std::string& path) {
    sentencepiece::SentencePieceProcessor sp;
    const auto status = sp.Load(path);
    if (!status.ok())
        throw Error(
            fmt::format("{}: cannot load SentencePiece model: {}", path, status.ToString()));
    return spm_from_proto(sp.serialized_model_proto());
}

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // ▁ (U+2581), SentencePiece's space

// Feeds SentencePiece from a callback; an exception in the callback (a reader error) is kept
// and rethrown after training instead of unwinding through SentencePiece.
class CallbackIterator : public sentencepiece::SentenceIterator {
public:
    explicit CallbackIterator(const std::function<bool(std::string&)>& next) : next_(next) {
        Next();
    }
    bool done() const override { return done_; }
    void Next() override {
        try {
            done_ = !next_(value_);
        } catch (...) {
            error_ = std::current_exception();
            done_ = true;
        }
    }
    const std::string& value() const override { return value_; }
    sentencepiece::util::Status status() const override {
        return error_ ? sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal,
                                                    "reader error")
                      : sentencepiece::util::Status();
    }
    std::exception_ptr error() const { return error_; }

private:
    const std::function<bool(std::string&)>& next_;
    std::string value_;
    bool done_ = false;
    std::exception_ptr error_;
};

}  // namespace

Tokenizer Tokenizer::train_spm(const std::function<bool(std::string&)>& next,
                               const SpmTrainOptions& o) {
    NZ_CHECK_USAGE(o.vocab_size >= 8, "SentencePiece vocab_size must be at least 8, got {}",
                   o.vocab_size);
    NZ_CHECK_USAGE(o.character_coverage > 0 && o.character_coverage <= 1,
                   "character_coverage must be in (0, 1], got {}", o.character_coverage);
    // Identity normalisation and kept whitespace make decode(encode(s)) == s.
    const std::unordered_map<std::string, std::string> args = {
        {"model_type", o.model_type == SpmModelType::bpe ? "bpe" : "unigram"},
        {"vocab_size", std::to_string(o.vocab_size)},
        {"hard_vocab_limit", "false"},  // small corpora: fewer pieces rather than an error
        {"character_coverage", fmt::format("{}", o.character_coverage)},
        {"byte_fallback", o.byte_fallback ? "true" : "false"},
        {"input_sentence_size", std::to_string(o.input_sentence_size)},
        {"shuffle_input_sentence", "true"},
        {"num_threads", std::to_string(std::max(1, o.num_threads))},
        {"normalization_rule_name", "identity"},
        {"remove_extra_whitespaces", "false"},
        {"split_digits", "false"},
        {"minloglevel", "2"},
    };
    const int old_level = sentencepiece::logging::GetMinLogLevel();
    sentencepiece::logging::SetMinLogLevel(2);  // errors only; training otherwise logs a page
    sentencepiece::SetRandomGeneratorSeed(1);   // deterministic sampling of the input sentences
    CallbackIterator it(next);
    std::string proto;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
    sentencepiece::logging::SetMinLogLevel(old_level);
    if (it.error()) std::rethrow_exception(it.error());
    if (!status.ok()) {
        // SentencePiece's own words name an option nazar does not have ("--character_coverage");
        // say the minimum for this data in nazar's. Its check: vocab_size >= characters kept +
        // special pieces, reported as "Vocabulary size is smaller than required_chars. V vs N".
        const std::string msg = status.ToString();
        const std::string tag = "smaller than required_chars. ";
        long long asked = 0, needed = 0;
        if (const auto at = msg.find(tag);
            at != std::string::npos &&
            std::sscanf(msg.c_str() + at + tag.size(), "%lld vs %lld", &asked, &needed) == 2)
            throw UsageError(fmt::format(
                "spm_vocab_size {} is below the minimum of {} for this data (one piece for each "
                "distinct character of the training text{}, plus the special pieces); use "
                "spm_vocab_size {} or more",
                o.vocab_size, needed, o.byte_fallback ? ", 256 byte pieces" : "", needed));
    }
    NZ_CHECK_INPUT(status.ok(), "SentencePiece training failed (vocab_size {}, {}): {}",
                   o.vocab_size, o.model_type == SpmModelType::bpe ? "bpe" : "unigram",
                   status.ToString());
    return spm_from_proto(std::move(proto));
}

void Tokenizer::encode(std::string_view text, Pieces& out) const {
    out.views.clear();
    switch (kind_) {
        case TokenizerKind::character: {
            std::size_t i = 0;
            while (i < text.size()) {
                const std::size_t len = utf8::sequence_length(static_cast<unsigned char>(text[i]));
                out.views.push_back(text.substr(i, len));
                i += len;
            }
            return;
        }
        case TokenizerKind::word: {
            std::size_t i = 0;
            const std::size_t n = text.size();
            while (i < n) {
                while (i < n && utf8::is_space(text[i])) ++i;
                const std::size_t b = i;
                while (i < n && !utf8::is_space(text[i])) ++i;
                if (i > b) out.views.push_back(text.substr(b, i - b));
            }
            return;
        }
        case TokenizerKind::spm: {
            const auto status = spm_->Encode(text, &out.storage);
            NZ_CHECK_INPUT(status.ok(), "SentencePiece encode failed: {}", status.ToString());
            for (const auto& p : out.storage) out.views.push_back(p);
            return;
        }
    }
}

void Tokenizer::encode_spm_ids(std::string_view text, std::vector<int>& ids) const {
    NZ_CHECK(kind_ == TokenizerKind::spm, "encode_spm_ids() on a {} tokenizer",
             nazar::to_string(kind_));
    const auto status = spm_->Encode(text, &ids);
    NZ_CHECK_INPUT(status.ok(), "SentencePiece encode failed: {}", status.ToString());
}

std::vector<std::string> Tokenizer::encode(std::string_view text) const {
    Pieces pieces;
    encode(text, pieces);
    return {pieces.views.begin(), pieces.views.end()};
}

std::string Tokenizer::decode(std::span<const std::string_view> pieces) const {
    std::string out;
    switch (kind_) {
        case TokenizerKind::character:
            for (auto p : pieces) out += p;
            return out;
        case TokenizerKind::word:
            for (std::size_t i = 0; i < pieces.size(); ++i) {
                if (i) out += ' ';
                out += pieces[i];
            }
            return out;
        case TokenizerKind::spm: {
            // A piece the model lacks (a copy model's copied source piece, extended_vocab.h)
            // would come back raw: its ▁ are written as spaces, as for the model's own pieces,
            // and a first piece's leading one is dropped like the dummy prefix.
            std::vector<std::string_view> v(pieces.begin(), pieces.end());
            std::vector<std::string> own(v.size());
            for (std::size_t i = 0; i < v.size(); ++i) {
                if (v[i].find(kSpmSpace) == std::string_view::npos ||
                    spm_->PieceToId(v[i]) != spm_->unk_id() ||
                    v[i] == spm_->IdToPiece(spm_->unk_id()))
                    continue;
                for (std::size_t k = 0; k < v[i].size();) {
                    const bool mark = v[i].substr(k, kSpmSpace.size()) == kSpmSpace;
                    own[i] += mark ? std::string_view(" ") : v[i].substr(k, 1);
                    k += mark ? kSpmSpace.size() : 1;
                }
                if (i == 0 && !own[i].empty() && own[i][0] == ' ') own[i].erase(0, 1);
                v[i] = own[i];
            }
            const auto status = spm_->Decode(v, &out);
            NZ_CHECK_INPUT(status.ok(), "SentencePiece decode failed: {}", status.ToString());
            return out;
        }
    }
    return out;
}

std::string Tokenizer::decode(const std::vector<std::string>& pieces) const {
    const std::vector<std::string_view> v(pieces.begin(), pieces.end());
    return decode(std::span<const std::string_view>(v));
}

std::vector<std::string> Tokenizer::spm_pieces(std::vector<bool>* is_special) const {
    NZ_CHECK(kind_ == TokenizerKind::spm, "spm_pieces() on a {} tokenizer",
             nazar::to_string(kind_));
    const int n = spm_->GetPieceSize();
    std::vector<std::string> pieces(n);
    if (is_special) is_special->assign(n, false);
    for (int i = 0; i < n; ++i) {
        pieces[i] = spm_->IdToPiece(i);
        if (is_special) (*is_special)[i] = spm_->IsControl(i) || spm_->IsUnknown(i);
    }
    return pieces;
}

std::string Tokenizer::to_string() const {
    nlohmann::json j;
    j["kind"] = std::string(nazar::to_string(kind_));
    if (kind_ == TokenizerKind::spm) j["spm_model_base64"] = base64_encode(spm_proto_);
    return j.dump();
}

Tokenizer Tokenizer::from_string(std::string_view s) {
    check_nesting(s, "tokenizer metadata", TextSyntax::json);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("tokenizer metadata is not valid JSON: {}", excerpt(e.what())));
    }
    NZ_CHECK_INPUT(j.is_object() && j.contains("kind") && j["kind"].is_string(),
                   "tokenizer metadata has no \"kind\": {:.80}", std::string(s));
    TokenizerKind kind;
    try {
        kind = parse_tokenizer_kind(j["kind"].get<std::string>());
    } catch (const UsageError& e) {  // from a file, not from the user: not a usage error
        throw Error(fmt::format("tokenizer metadata: {}", e.what()));
    }
    if (kind == TokenizerKind::character) return character();
    if (kind == TokenizerKind::word) return word();
    NZ_CHECK_INPUT(j.contains("spm_model_base64") && j["spm_model_base64"].is_string(),
                   "spm tokenizer metadata has no \"spm_model_base64\"");
    return spm_from_proto(base64_decode(j["spm_model_base64"].get<std::string>()));
}

std::string normalize_spaces(std::string_view s) {
    std::string out;
    std::size_t i = 0;
    const std::size_t n = s.size();
    while (i < n) {
        while (i < n && utf8::is_space(s[i])) ++i;
        const std::size_t b = i;
        while (i < n && !utf8::is_space(s[i])) ++i;
        if (i > b) {
            if (!out.empty()) out += ' ';
            out.append(s.substr(b, i - b));
        }
    }
    return out;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v =
            (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
        for (int k = 3; k >= 0; --k) out += kB64[(v >> (6 * k)) & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest) {
        uint32_t v = uint8_t(bytes[i]) << 16;
        if (rest == 2) v |= uint8_t(bytes[i + 1]) << 8;
        out += kB64[(v >> 18) & 63];
        out += kB64[(v >> 12) & 63];
        out += rest == 2 ? kB64[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string base64_decode(std::string_view text) {
    std::array<int, 256> value;
    value.fill(-1);
    for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(kB64[k])] = k;
    NZ_CHECK_INPUT(text.size() % 4 == 0, "base64 text length {} is not a multiple of 4",
                   text.size());
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const int d = k >= 4 - pad ? 0 : value[static_cast<unsigned char>(text[i + k])];
            NZ_CHECK_INPUT(d >= 0, "invalid base64 character at offset {}", i + k);
            v = (v << 6) | static_cast<uint32_t>(d);
        }
        out += static_cast<char>(v >> 16);
        if (pad < 2) out += static_cast<char>((v >> 8) & 255);
        if (pad < 1) out += static_cast<char>(v & 255);
    }
    return out;
}

}  // namespace nazar
