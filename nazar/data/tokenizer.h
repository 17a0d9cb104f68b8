// Tokenizers: text <-> pieces (strings); vocab.h maps pieces to ids.
//
//   character  one piece per Unicode code point (not byte). Spaces are pieces too (" "), so
//              decode(encode(s)) == s exactly, for every valid UTF-8 s; combining marks are
//              pieces of their own (no normalisation).
//   word       pieces are the maximal runs of non-separators; separators are ASCII whitespace
//              (utf8::is_space). decode joins pieces with one space, so
//              decode(encode(s)) == normalize_spaces(s): runs of separators become one space,
//              leading/trailing separators are dropped. No-break spaces are not separators.
//   spm        SentencePiece (unigram or BPE), trained by nazar or loaded from a .model. A model
//              trained here uses identity normalisation, keeps extra whitespace and falls back to
//              bytes for unseen characters, so decode(encode(s)) == s. A user's .model decodes
//              as that model's normalisation rules say.
//
// A tokenizer serialises to a string (to_string/from_string: JSON; the SentencePiece model
// proto is base64-encoded inside) that the model file stores in its metadata.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace nazar {

enum class TokenizerKind { character, word, spm };
enum class SpmModelType { unigram, bpe };

std::string_view to_string(TokenizerKind kind);             // "char", "word", "spm"
TokenizerKind parse_tokenizer_kind(std::string_view name);  // throws UsageError

struct SpmTrainOptions {
    int vocab_size = 8000;  // including SentencePiece's <unk>, <s>, </s>
    SpmModelType model_type = SpmModelType::unigram;
    float character_coverage = 1.0f;  // 1.0: every character of the training text gets a piece
    bool byte_fallback = true;  // unseen characters become byte pieces (needs vocab_size > ~260)
    int64_t input_sentence_size = 2'000'000;  // SentencePiece samples this many sentences at most
    int num_threads = 1;
};

// Pieces of one sentence. For char/word tokenizers the views point into the encoded text;
// for spm into `storage`. Reused across calls to avoid allocation.
struct Pieces {
    std::vector<std::string_view> views;
    std::vector<std::string> storage;
    std::size_t size() const { return views.size(); }
};

class Tokenizer {
public:
    Tokenizer();  // word
    static Tokenizer character();
    static Tokenizer word();
    static Tokenizer spm_from_file(const std::string& path);
    static Tokenizer spm_from_proto(std::string serialized_model_proto);
    // Trains a model on the sentences `next` yields (it returns false at the end).
    static Tokenizer train_spm(const std::function<bool(std::string&)>& next,
                               const SpmTrainOptions& options);

    ~Tokenizer();
    Tokenizer(const Tokenizer& o);
    Tokenizer& operator=(const Tokenizer& o);
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;

    TokenizerKind kind() const { return kind_; }

    // `text` must be valid UTF-8 (the readers check). Clears and fills `out`.
    void encode(std::string_view text, Pieces& out) const;
    std::vector<std::string> encode(std::string_view text) const;  // convenience
    // spm only: SentencePiece's own ids (faster than pieces; map them with a table).
    void encode_spm_ids(std::string_view text, std::vector<int>& ids) const;
    std::string decode(std::span<const std::string_view> pieces) const;
    std::string decode(const std::vector<std::string>& pieces) const;

    // spm only: the model's pieces by SentencePiece id, and which of them are control/unknown
    // symbols (<unk>, <s>, </s>) that nazar's own specials replace.
    std::vector<std::string> spm_pieces(std::vector<bool>* is_special = nullptr) const;
    const std::string& spm_model_proto() const { return spm_proto_; }

    std::string to_string() const;  // {"kind": "...", "spm_model_base64": "..."}
    static Tokenizer from_string(std::string_view s);

private:
    TokenizerKind kind_ = TokenizerKind::word;
    std::string spm_proto_;
    std::shared_ptr<const sentencepiece::SentencePieceProcessor> spm_;  // immutable once loaded
};

// Word-tokenizer normal form: separator runs -> one space, none at the ends.
std::string normalize_spaces(std::string_view s);

std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);  // throws Error on malformed input

}  // namespace nazar
