// The application API: load a model file once, translate batches of strings.
//
//   nazar::Translator tr("model.safetensors", {.replicas = 4});
//   auto out = tr.translate({"ein kleiner Test"}, {.beam_size = 5, .n_best = 2, .alignments =
//   true}); out[0].hypotheses[0].text, .score, .alignment (Pharaoh links)
//
// Thread safety: translate() may be called from any number of threads at once. The weights are
// loaded once and shared, read-only, by every call (std::shared_ptr<const Seq2Seq>); a replica is
// a set of decoding buffers (models/decode_session.h: one DecodeSession per member), and the
// Translator holds a pool of `replicas` of them; each call borrows one for its whole duration
// (callers beyond the pool size wait). Tokenizers and vocabularies are immutable and shared.
// Threads *inside* one call come from nazar::set_num_threads (BLAS and parallel_for, shared
// process-wide); with several concurrent callers, set it to cores/replicas.
// Memory: the parameters once, plus per replica the buffers of the batches it decodes
// (batch_size · beam_size rows), which stay allocated for the next call.
//
// Ensembles: Translator({"a.safetensors", "b.safetensors"}) decodes with every model at each step
// and averages their log-probabilities (decode/ensemble.h: the arithmetic mean of the members'
// log-probabilities, so a hypothesis's log_prob is the mean of the members' log p); the attention
// (alignments, coverage, replace_unk) is member TranslationOptions::ensemble_attention's or the
// mean (TranslationOptions::kMeanAttention). The files must share the source and target
// vocabularies and tokenizers (Error naming the file that differs); a replica then holds a
// session over every member.
//
// Sentences are tokenized with the model's source tokenizer, sorted by length into batches of
// at most batch_size (beam_search.h: detail::sorted_batch_ends), decoded with beam search
// (beam_search.h; beam_size 1 = greedy) and returned in input order. Output text is the target
// tokenizer's detokenisation of the pieces before </s>.
#pragma once

#include "nazar/core/tensor.h"
#include "nazar/decode/alignment.h"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

enum class Precision;  // core/precision.h (opaque here: keeps this header's own includes few)

struct ModelConfig;     // models/config.h (Translator::config)
struct DecodeDefaults;  // decode_defaults.h (Translator::decode_defaults)
class Shortlist;        // shortlist.h (TranslationOptions::shortlist)
struct ShortlistOptions;

struct TranslatorConfig {
    int replicas = 1;  // decoding sessions = concurrent translate() calls served without waiting
    // Precision of the weight products (core/gemm/packed.h). Unset: the file's own (fp32, or
    // the precision `nazar quantize` stored).
    std::optional<Precision> precision{};
};

// Lexical constraints of one sentence, as target text (docs/decoding.md "Constraints"): each
// phrase is tokenized with the model's target tokenizer on its own (a SentencePiece phrase
// starts a word). A phrase the target vocabulary cannot spell (it holds <unk>) is left out of
// the search and reported in Translation::unmet.
struct TextConstraints {
    std::vector<std::string> include;  // must appear in the output
    std::vector<std::string> exclude;  // must not
    bool empty() const { return include.empty() && exclude.empty(); }
};

struct TranslationOptions {
    int beam_size = 5;
    int n_best = 1;                 // in [1, beam_size]
    float length_penalty = 0.6f;    // GNMT α
    float coverage_penalty = 0.0f;  // GNMT β
    float max_length_ratio = 2.0f;  // output length <= min(max_length, ratio · S + extra)
    int max_length_extra = 5;
    int max_length = 512;
    int batch_size = 32;                        // sentences per decoder batch
    bool alignments = false;                    // fill Hypothesis::alignment (hard links)
    bool attention = false;                     // keep the attention matrices
    bool replace_unk = false;                   // copy the most-attended source token for <unk>
    const UnkDictionary* dictionary = nullptr;  // optional translations for replace_unk
    // Ensembles: the attention of this member (0-based), or the mean of all (kMeanAttention).
    static constexpr int kMeanAttention = -1;
    int ensemble_attention = 0;
    // Polled after every decoder step for each sentence still decoding (its index in the
    // input): true stops that sentence at once and frees what its search held; its
    // Translation then has no hypotheses and `cancelled` set, the others are unaffected. An
    // exception thrown here (an interrupt) leaves translate(). Empty: never polled.
    std::function<bool(std::size_t)> cancelled = nullptr;
    // Per input sentence (same length as the input), or empty: none. Sentences without
    // constraints decode exactly as with none (beam_search.h).
    std::span<const TextConstraints> constraints{};
    // A vocabulary shortlist (shortlist.h, Translator::load_shortlist; one model only): the
    // output layer computes only each batch's candidates. Null: the whole vocabulary.
    const Shortlist* shortlist = nullptr;
    // Streaming (stream.h): decoding as if the source arrived one token at a time, each output
    // token emitted once the monotonic reader stopped at a position already read (beam_size 1:
    // greedy, prefix by prefix) and, with a beam, once every hypothesis still in the search
    // begins with it; the same output as without. Needs n_best 1, one model, and a model that
    // can stream (monotonic attention, a unidirectional encoder, the zero bridge); fills
    // TranslationHypothesis::read.
    bool stream = false;
};

struct TranslationHypothesis {
    std::string text;                      // detokenised output (without </s>)
    std::vector<std::string> tokens;       // output pieces (after unk replacement), without </s>
                                           // (<pad>/<s> are never emitted: beam_search.h)
    double score = 0;                      // log p / lp + cp (what the list is sorted by)
    double log_prob = 0;                   // log p(Y | X), Y including </s> when finished
    bool finished = true;                  // false: cut at the maximum length
    std::vector<AlignmentLink> alignment;  // hard links (src token, tgt token), when asked
    Tensor attention;  // (n, S) rows of `tokens`, then of </s> when finished; when asked
    // Copy attention (models/copy.h): p_gen of each row of `attention` (the tokens, then </s>);
    // empty for other models. A copied out-of-vocabulary source word is emitted as its string.
    std::vector<float> p_gen;
    // Streaming: source tokens read when each row of `attention` (the tokens, then </s>) was
    // emitted; empty otherwise.
    std::vector<int> read;
    bool constraints_met = true;  // every include phrase is in `tokens` (constraints)
};

struct Translation {
    std::vector<std::string> source_tokens;         // the source pieces the model read
    std::vector<TranslationHypothesis> hypotheses;  // best first, at most n_best
    bool cancelled = false;  // TranslationOptions::cancelled stopped it: no hypotheses
    // Include phrases the best hypothesis lacks: the vocabulary cannot spell them, or the
    // search reached the maximum length before placing them. Empty: all placed (or none).
    std::vector<std::string> unmet;
};

class Translator {
public:
    explicit Translator(const std::string& model_path, const TranslatorConfig& config = {});
    // An ensemble of the models (one path: the same as above).
    explicit Translator(const std::vector<std::string>& model_paths,
                        const TranslatorConfig& config = {});
    ~Translator();
    Translator(const Translator&) = delete;
    Translator& operator=(const Translator&) = delete;

    // Thread-safe. Throws nazar::Error on invalid UTF-8 input (naming the sentence index) and
    // UsageError on invalid options.
    std::vector<Translation> translate(std::span<const std::string> sentences,
                                       const TranslationOptions& options = {}) const;

    int replicas() const;
    const std::string& model_path() const;                // the first model's
    const std::vector<std::string>& model_paths() const;  // every member's

    // What a front end needs to describe the model and to check a request before queueing it
    // (the server's /v1/models and its tokens-per-sentence limit): the loaded configuration
    // (vocabulary sizes included), the tokenizer kinds ("char", "word", "spm"), and the source
    // pieces the model would read for `sentence` (throws Error on invalid UTF-8). Thread-safe.
    const ModelConfig& config() const;
    std::string_view source_tokenizer() const;
    std::string_view target_tokenizer() const;
    std::vector<std::string> source_pieces(std::string_view sentence) const;
    // The decoding settings stored in the model file (`nazar tune`; decode_defaults.h), which
    // front ends apply to the options their caller did not set; translate() itself takes its
    // options as given. An ensemble has them when every member stores the same ones, else none.
    const DecodeDefaults& decode_defaults() const;
    // A shortlist table (`nazar shortlist`) read for this model's vocabularies.
    Shortlist load_shortlist(const std::string& path, const ShortlistOptions& options) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace nazar
