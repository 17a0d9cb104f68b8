// The server's request and response bodies (docs/serve.md): parsing and checking a
// POST /v1/translate body, and writing translations, errors and model descriptions as JSON.
// No HTTP and no model here, so the parser can be fuzzed alone (fuzz/fuzz_serve_request.cpp).
//
//   request   {"text": ["s1", "s2"] | "s1", "model": "name", "beam": 5, "n_best": 1,
//              "attention": false, "alignment": null | "hard" | "soft",
//              "length_penalty": 0.6, "coverage_penalty": 0, "replace_unk": false}
//   response  {"model": "name", "translations": [{"source_tokens": [...], "hypotheses": [
//              {"text", "tokens", "score", "log_prob", "finished"[, "attention"][, "alignment"]}
//              ]}], "batch": {"requests", "sentences", "queue_ms", "decode_ms"}}
//   error     {"error": "one-line message", "status": 400}
//
// Every refusal is an HttpError: the status and the one-line message the CLI would print for the
// same mistake (e.g. "n_best 3 exceeds beam 2", like translate's "--n-best 3 exceeds --beam 2").
#pragma once

#include "nazar/core/check.h"
#include "nazar/decode/alignment.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/translator.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar::serve {

// What a request may ask for; the server's flags (nazar serve --help) set these.
struct RequestLimits {
    std::size_t max_body_bytes = 1 << 20;  // 413 above
    int max_sentences = 64;                // per request (400 above)
    int max_tokens = 256;                  // source tokens per sentence (400 above)
    int max_beam = 32;                     // beam and n_best (400 above)
    // The cost of a request, bounded before it is queued (413 above; check_cost): hypothesis
    // steps Σ beam · max output length (decoding time and memory), and the answer's size.
    int64_t max_work = 1 << 18;
    std::size_t max_answer_bytes = 16 << 20;
};

// A refused request: HTTP status and a one-line message.
class HttpError : public Error {
public:
    HttpError(int status, const std::string& message) : Error(message), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

struct TranslateRequest {
    std::vector<std::string> text;
    std::string model;  // "" = the default model
    int beam = 5;
    int n_best = 1;
    bool attention = false;  // return the attention matrices
    AlignmentFormat alignment = AlignmentFormat::none;
    float length_penalty = 0.6f;
    float coverage_penalty = 0.0f;
    bool replace_unk = false;
    // Per sentence of `text` (empty: none): "constraints" and "protect" (docs/serve.md).
    std::vector<TextConstraints> constraints;
    bool protect = false;
    // Not request fields: the model's stored length limits (apply_model_settings).
    float max_length_ratio = TranslationOptions{}.max_length_ratio;
    int max_length_extra = TranslationOptions{}.max_length_extra;
    int max_length = TranslationOptions{}.max_length;
    ExplicitOptions given;  // which of beam, length_penalty, coverage_penalty the body set

    // The fields the body left out from the model's stored settings (`nazar tune`,
    // decode/decode_defaults.h), then the n_best <= beam check (HttpError 400). Called once
    // the model is known, before check_cost.
    void apply_model_settings(const DecodeDefaults& stored);

    // The decoding options; requests with equal options are decoded in one batch. The attention
    // matrices are kept only when the answer shows them (attention, alignment).
    TranslationOptions options() const;
    bool needs_attention() const { return attention || alignment != AlignmentFormat::none; }
    // Equal for requests that may share one batched beam search (same model and options).
    std::string batch_key() const;
};

// Parses and checks a body: invalid UTF-8 (the byte offset), malformed JSON (line and column),
// a body that is not an object, a key given twice, unknown or mistyped fields, an empty
// "model" (omit it, or null, for the default), no sentences, more than max_sentences,
// beam/n_best out of range all throw HttpError(400). The body size is checked
// by the HTTP layer (413) before this is called; here a larger body is refused as 413 too.
TranslateRequest parse_translate_request(std::string_view body, const RequestLimits& limits);

// The most a request can cost, from its sources' token counts: `work` hypothesis steps
// (Σ beam · max_len_b, the decoder's length limit of each sentence) and an estimate of the
// answer's bytes (per hypothesis: 32 bytes per output token, and 9 per attention or soft
// alignment number, max_len_b + 1 rows of S_b). Throws HttpError(413) naming the limit and the
// flag that raises it when either exceeds `limits`.
struct RequestCost {
    int64_t work = 0;
    int64_t answer_bytes = 0;
};
RequestCost check_cost(const TranslateRequest& r, std::span<const int> source_lengths,
                       const RequestLimits& limits);

// The request as JSON (the fields above; beam and the penalties only where the body gave them,
// so that which ones it gave survives): parse_translate_request of it gives an equal request
// (the fuzz target checks this).
std::string to_json(const TranslateRequest& r);

struct BatchInfo {
    int requests = 1;      // requests decoded together
    int sentences = 0;     // their sentences
    double queue_ms = 0;   // this request's wait before decoding
    double decode_ms = 0;  // the batched decode
};

// The response body of a request answered with `translations` (one per sentence, in order).
std::string translation_response(const TranslateRequest& r, const std::string& model_name,
                                 const std::vector<Translation>& translations,
                                 const BatchInfo& batch);

// {"error": message, "status": status}
std::string error_body(int status, std::string_view message);

// A model the server holds, under the name requests use.
struct NamedModel {
    std::string name;
    const Translator* translator = nullptr;
};

// GET /v1/models: {"default": name, "models": [{"name", "file", "config", "src_vocab_size",
// "tgt_vocab_size", "src_tokenizer", "tgt_tokenizer"}]}; the first model is the default.
std::string models_body(std::span<const NamedModel> models);

}  // namespace nazar::serve
