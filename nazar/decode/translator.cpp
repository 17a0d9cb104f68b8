// Translator: one shared model per member and a pool of decoding sessions behind a thread-safe
// translate() (translator.h).
#include "nazar/decode/translator.h"

#include "nazar/core/precision.h"

#include "nazar/core/block_cache.h"
#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/extended_vocab.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/utf8.h"
#include "nazar/data/vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/ensemble.h"
#include "nazar/decode/shortlist.h"
#include "nazar/decode/stream.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>

namespace nazar {

struct Translator::Impl {
    std::vector<std::string> paths;
    Tokenizer src_tok, tgt_tok;
    Vocab src_vocab, tgt_vocab;
    SpecialIds special;
    DecodeDefaults defaults;  // the members' shared settings (decode_defaults.h)
    // One per member, loaded once and read by every replica's sessions (never written after
    // loading: decode_session.h).
    std::vector<std::shared_ptr<const Seq2Seq>> models;
    // A replica: one decoding session per member (buffers only, no weights).
    std::vector<std::vector<DecodeSession>> replicas;
    std::vector<int> free;  // replicas not in use
    std::mutex m;
    std::condition_variable cv;

    int acquire() {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return !free.empty(); });
        const int r = free.back();
        free.pop_back();
        return r;
    }
    void release(int r) {
        {
            std::lock_guard lk(m);
            free.push_back(r);
        }
        cv.notify_one();
    }
};

namespace {
const std::string& require_meta(const std::map<std::string, std::string>& meta, const char* key,
                                const std::string& path) {
    const auto it = meta.find(key);
    if (it == meta.end())
        throw Error(fmt::format(
            "'{}' lacks metadata '{}' (vocabularies and tokenizers are needed to translate text)",
            path, key));
    return it->second;
}

// One search result as the user sees it: the tokens before </s> without <pad>/<s>, copied
// source words (extended ids, `ext`) as themselves, the text, and the alignment or attention
// rows of the kept tokens when asked.
TranslationHypothesis output_hypothesis(const Hypothesis& h, const Tokenizer& tgt_tok,
                                        const Vocab& tgt_vocab, const SpecialIds& special,
                                        const std::vector<std::string>& source_tokens,
                                        const ExtendedVocab* ext, const TranslationOptions& o) {
    // The output is the tokens before </s> without <pad>/<s> (as Vocab::decode reads ids;
    // the search never emits those, so this only guards); alignments and attention keep the
    // same rows.
    std::vector<int32_t> kept, base;  // base: extended ids (copies) as <unk>
    std::vector<int> rows;
    for (std::size_t j = 0; j < h.tokens.size(); ++j) {
        const int32_t y = h.tokens[j];
        if (y == special.pad || y == special.bos) continue;
        kept.push_back(y);
        base.push_back(y >= tgt_vocab.size() ? special.unk : y);
        rows.push_back(static_cast<int>(j));
        if (y == special.eos) break;
    }
    const int S_b = h.attention.dim(1);
    Tensor attention({static_cast<int64_t>(rows.size()), S_b});
    for (std::size_t r = 0; r < rows.size(); ++r)
        attention.select(r).copy_from(h.attention.select(rows[r]));
    TranslationHypothesis t;
    t.tokens = output_pieces(base, attention, tgt_vocab, special.eos, special.unk, o.replace_unk,
                             source_tokens, o.dictionary);
    for (std::size_t j = 0; j < t.tokens.size(); ++j)  // copied words as themselves
        if (kept[j] >= tgt_vocab.size()) t.tokens[j] = ext->word(kept[j]);
    if (!h.p_gen.empty())
        for (int r : rows) t.p_gen.push_back(h.p_gen[static_cast<std::size_t>(r)]);
    if (!h.read.empty())
        for (int r : rows) t.read.push_back(h.read[static_cast<std::size_t>(r)]);
    t.text = tgt_tok.decode(t.tokens);
    t.score = h.score;
    t.log_prob = h.log_prob;
    t.finished = h.finished;
    t.constraints_met = h.constraints_met;
    if (o.alignments) t.alignment = hard_alignment(attention, static_cast<int>(t.tokens.size()));
    if (o.attention) t.attention = std::move(attention);
    return t;
}

// TranslationOptions::stream: one hypothesis, one model, no constraints or shortlist, a model
// that can stream (stream.h).
void check_stream_options(const TranslationOptions& o, int members, const ModelConfig& cfg) {
    NZ_CHECK_USAGE(o.n_best == 1, "streaming emits one hypothesis: n-best 1, got {}", o.n_best);
    NZ_CHECK_USAGE(members == 1, "streaming is for one model, not an ensemble of {}", members);
    NZ_CHECK_USAGE(o.constraints.empty() && o.shortlist == nullptr,
                   "streaming takes no constraints and no shortlist");
    check_streamable(cfg);
}

// One sentence as it would arrive: greedy, prefix by prefix (stream_greedy), or a beam search
// that records its reads (BeamOptions::stream). Empty: cancelled.
std::vector<Hypothesis> stream_one(DecodeSession& session, std::span<const int32_t> src,
                                   const TranslationOptions& o, BeamOptions beam, int i) {
    if (o.beam_size == 1)
        return {stream_greedy(session, src,
                              {.max_length_ratio = o.max_length_ratio,
                               .max_length_extra = o.max_length_extra,
                               .max_length = o.max_length})};
    beam.stream = true;
    if (o.cancelled)
        beam.cancelled = [&o, i](int) { return o.cancelled(static_cast<std::size_t>(i)); };
    const int S_b = static_cast<int>(src.size());
    const int lengths[1] = {S_b};
    return beam_search(session, src, lengths, S_b, beam).front();
}

// A phrase as target ids (its pieces), or empty when the vocabulary cannot spell it (<unk>).
std::vector<int32_t> phrase_ids(std::span<const std::string_view> pieces, const Vocab& vocab,
                                int32_t unk) {
    std::vector<int32_t> ids;
    for (const std::string_view p : pieces) {
        ids.push_back(vocab.id(p));
        if (ids.back() == unk) return {};
    }
    return ids;
}

// The ways the target tokenizer writes a phrase: on its own, and for SentencePiece also glued
// to what precedes it (no word-start mark: "(%d" is "▁(" "%" "d", not "▁%" "d"), found by
// tokenizing it after a probe character and dropping the probe's piece. Empty when the
// vocabulary cannot spell it at all.
std::vector<Spelling> spellings(const std::string& phrase, const Tokenizer& tok, const Vocab& vocab,
                                int32_t unk) {
    std::vector<Spelling> out;
    const auto add = [&](std::span<const std::string_view> pieces) {
        Spelling ids = phrase_ids(pieces, vocab, unk);
        if (!ids.empty() && std::find(out.begin(), out.end(), ids) == out.end())
            out.push_back(std::move(ids));
    };
    Pieces pieces;
    tok.encode(phrase, pieces);
    add(pieces.views);
    if (tok.kind() == TokenizerKind::spm)
        for (const std::string probe : {"x", "("}) {
            tok.encode(probe + phrase, pieces);
            if (pieces.views.size() > 1 && pieces.views[0] == "\u2581" + probe)
                add(std::span<const std::string_view>(pieces.views).subspan(1));
        }
    return out;
}

// Sentence i's constraints as ids (TokenConstraints; a phrase the vocabulary cannot spell is
// left out). Throws UsageError on an empty phrase or invalid UTF-8, naming them.
TokenConstraints token_constraints(const TextConstraints& c, std::size_t i, const Tokenizer& tok,
                                   const Vocab& vocab, int32_t unk) {
    TokenConstraints out;
    const auto check = [&](const std::string& p, const char* what) {
        if (p.empty())
            throw UsageError(fmt::format("sentence {}: an {} phrase is empty", i + 1, what));
        if (const std::size_t bad = utf8::find_invalid(p); bad != utf8::npos)
            throw UsageError(fmt::format("sentence {}: {} phrase '{}': invalid UTF-8 at byte {}",
                                         i + 1, what, excerpt(p.substr(0, bad)), bad + 1));
    };
    for (const std::string& p : c.include) {
        check(p, "include");
        std::vector<Spelling> ways = spellings(p, tok, vocab, unk);
        if (!ways.empty()) out.include.push_back(std::move(ways));
    }
    for (const std::string& p : c.exclude) {
        check(p, "exclude");
        for (Spelling& w : spellings(p, tok, vocab, unk)) out.exclude.push_back(std::move(w));
    }
    return out;
}

// token_constraints of every sentence (none when `text` is empty; UsageError when its size is
// not n).
std::vector<TokenConstraints> all_token_constraints(std::span<const TextConstraints> text, int n,
                                                    const Tokenizer& tok, const Vocab& vocab,
                                                    int32_t unk) {
    std::vector<TokenConstraints> out;
    if (text.empty()) return out;
    if (text.size() != static_cast<std::size_t>(n))
        throw UsageError(
            fmt::format("constraints for {} sentences, {} sentences given", text.size(), n));
    for (int i = 0; i < n; ++i) out.push_back(token_constraints(text[i], i, tok, vocab, unk));
    return out;
}

// Whether `text` holds `phrase` as words: not inside a longer word ("cat" is not in
// "category"; an ASCII letter or digit on either side makes it part of one).
bool has_words(std::string_view text, std::string_view phrase) {
    const auto word_char = [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    };
    for (std::size_t at = text.find(phrase); at != std::string_view::npos;
         at = text.find(phrase, at + 1)) {
        const std::size_t end = at + phrase.size();
        const bool open = at == 0 || !word_char(text[at - 1]) || !word_char(phrase.front());
        const bool close = end == text.size() || !word_char(text[end]) || !word_char(phrase.back());
        if (open && close) return true;
    }
    return false;
}

// Whether a hypothesis's text holds every include phrase and no exclude phrase (the text, so
// that a phrase the model wrote with other pieces — "(%d" as "▁(%" "d" — counts). An include
// phrase counts anywhere; an exclude phrase only as words.
bool text_meets(const TextConstraints& c, const TranslationHypothesis& h) {
    const auto has = [&h](const std::string& p) { return h.text.find(p) != std::string::npos; };
    const auto has_as_words = [&h](const std::string& p) { return has_words(h.text, p); };
    return std::all_of(c.include.begin(), c.include.end(), has) &&
           std::none_of(c.exclude.begin(), c.exclude.end(), has_as_words);
}

// Every hypothesis of t meets c (a cancelled sentence, with none, does).
bool all_meet(const TextConstraints& c, const Translation& t) {
    return std::all_of(t.hypotheses.begin(), t.hypotheses.end(),
                       [&c](const TranslationHypothesis& h) { return text_meets(c, h); });
}

// Each hypothesis's constraints_met, and Translation::unmet: the include phrases the best one's
// text lacks.
void mark_constraints(const TextConstraints& c, Translation& t) {
    for (TranslationHypothesis& h : t.hypotheses) h.constraints_met = text_meets(c, h);
    if (t.hypotheses.empty()) return;
    for (const std::string& p : c.include)
        if (t.hypotheses[0].text.find(p) == std::string::npos) t.unmet.push_back(p);
}

// The second pass of constrained translation (Translator::translate): the sentences whose
// outputs do not all meet their constraints, searched again with them; then each sentence's
// constraints_met and unmet.
template <class Search, class Output>
void constrain_again(const TranslationOptions& o, const std::vector<TokenConstraints>& cons,
                     const std::vector<std::vector<int32_t>>& ids,
                     const std::vector<std::vector<int32_t>>& copy_ids, const BeamOptions& beam,
                     const Search& search, const Output& output, std::vector<Translation>& out) {
    const int n = static_cast<int>(out.size());
    std::vector<int> retry;
    for (int i = 0; i < n; ++i)
        if (!o.constraints[i].empty() && !all_meet(o.constraints[i], out[i])) retry.push_back(i);
    if (!retry.empty()) {
        std::vector<std::vector<int32_t>> src, cp;
        std::vector<TokenConstraints> c;
        for (const int i : retry) {
            src.push_back(ids[i]);
            if (!copy_ids.empty()) cp.push_back(copy_ids[i]);
            c.push_back(cons[i]);
        }
        BeamOptions again = beam;
        again.constraints = c;
        if (o.cancelled)
            again.cancelled = [&](int j) { return o.cancelled(std::size_t(retry[j])); };
        const std::vector<std::vector<Hypothesis>> more = search(again, src, cp);
        for (std::size_t j = 0; j < retry.size(); ++j) output(retry[j], more[j]);
    }
    for (int i = 0; i < n; ++i)
        if (!o.constraints[i].empty()) mark_constraints(o.constraints[i], out[i]);
}

}  // namespace

Translator::Translator(const std::string& model_path, const TranslatorConfig& config)
    : Translator(std::vector<std::string>{model_path}, config) {}

Translator::Translator(const std::vector<std::string>& model_paths, const TranslatorConfig& config)
    : impl_(std::make_unique<Impl>()) {
    if (config.replicas < 1)
        throw UsageError(fmt::format("replicas must be >= 1, got {}", config.replicas));
    if (model_paths.empty()) throw UsageError("no model file given");
    Impl& d = *impl_;
    d.paths = model_paths;
    const std::string& first = model_paths[0];
    for (std::size_t k = 0; k < model_paths.size(); ++k) {
        const std::string& path = model_paths[k];
        {
            // inference: no gradients; the model takes the file's tensors (no copy)
            LoadedModel m = model_from_safetensors(load_safetensors(path), ParamMode::inference);
            if (config.precision) m.model->set_precision(*config.precision);
            {
                const char* keys[] = {kSrcTokenizerKey, kTgtTokenizerKey, kSrcVocabKey,
                                      kTgtVocabKey};
                std::string text[4];
                for (int i = 0; i < 4; ++i) text[i] = require_meta(m.metadata, keys[i], path);
                if (k == 0) {
                    d.src_tok = Tokenizer::from_string(text[0]);
                    d.tgt_tok = Tokenizer::from_string(text[1]);
                    d.src_vocab = Vocab::from_json(text[2]);
                    d.tgt_vocab = Vocab::from_json(text[3]);
                    d.special = m.model->config().special_ids;
                } else {
                    const std::string mine[4] = {d.src_tok.to_string(), d.tgt_tok.to_string(),
                                                 d.src_vocab.to_json(), d.tgt_vocab.to_json()};
                    const char* what[4] = {"source tokenizer", "target tokenizer",
                                           "source vocabulary", "target vocabulary"};
                    const std::string theirs[4] = {Tokenizer::from_string(text[0]).to_string(),
                                                   Tokenizer::from_string(text[1]).to_string(),
                                                   Vocab::from_json(text[2]).to_json(),
                                                   Vocab::from_json(text[3]).to_json()};
                    for (int i = 0; i < 4; ++i)
                        if (theirs[i] != mine[i])
                            throw Error(fmt::format(
                                "ensemble: '{}' has another {} than '{}': members must share the "
                                "source and target vocabularies and tokenizers",
                                path, what[i], first));
                }
            }
            DecodeDefaults defaults = decode_defaults_from_metadata(m.metadata, path);
            if (k == 0)
                d.defaults = std::move(defaults);
            else if (!same_settings(defaults, d.defaults))
                d.defaults = {};  // members tuned apart: none holds for the ensemble
            d.models.push_back(std::shared_ptr<const Seq2Seq>(std::move(m.model)));
        }
    }
    d.replicas.resize(config.replicas);
    for (int r = 0; r < config.replicas; ++r) {
        for (const auto& model : d.models) d.replicas[r].emplace_back(*model);
        d.free.push_back(config.replicas - 1 - r);  // replica 0 is taken first
    }
    // What loading read but the model does not keep (a checkpoint's optimizer moments and
    // averaged weights, three times the model) was freed into the block cache, which keeps large
    // blocks for reuse, and glibc's heap: give it back, or every decoding process would carry it
    // (42 MB for a 16 MB model's best.safetensors).
    release_free_memory();
    // Decoding threads' freed scratch goes back to the system, not into per-thread heaps.
    keep_large_allocations_mapped();
}

Translator::~Translator() = default;

int Translator::replicas() const {
    return static_cast<int>(impl_->replicas.size());
}
const std::string& Translator::model_path() const {
    return impl_->paths[0];
}
const std::vector<std::string>& Translator::model_paths() const {
    return impl_->paths;
}
const ModelConfig& Translator::config() const {
    return impl_->models.front()->config();
}
Shortlist Translator::load_shortlist(const std::string& path,
                                     const ShortlistOptions& options) const {
    return Shortlist::load(path, impl_->src_vocab, impl_->tgt_vocab, options);
}

const DecodeDefaults& Translator::decode_defaults() const {
    return impl_->defaults;
}
std::string_view Translator::source_tokenizer() const {
    return to_string(impl_->src_tok.kind());
}
std::string_view Translator::target_tokenizer() const {
    return to_string(impl_->tgt_tok.kind());
}
std::vector<std::string> Translator::source_pieces(std::string_view sentence) const {
    const std::size_t bad = utf8::find_invalid(sentence);
    if (bad != utf8::npos)
        throw Error(fmt::format("invalid UTF-8 at byte {} (0x{:02x})", bad + 1,
                                static_cast<unsigned char>(sentence[bad])));
    return impl_->src_tok.encode(sentence);
}

std::vector<Translation> Translator::translate(std::span<const std::string> sentences,
                                               const TranslationOptions& o) const {
    BeamOptions beam{.beam_size = o.beam_size,
                     .n_best = o.n_best,
                     .length_penalty = o.length_penalty,
                     .coverage_penalty = o.coverage_penalty,
                     .max_length_ratio = o.max_length_ratio,
                     .max_length_extra = o.max_length_extra,
                     .max_length = o.max_length};
    beam.shortlist = o.shortlist;
    validate(beam);
    if (o.cancelled)
        beam.cancelled = [&o](int i) { return o.cancelled(static_cast<std::size_t>(i)); };
    if (o.batch_size < 1)
        throw UsageError(fmt::format("batch size must be >= 1, got {}", o.batch_size));
    const Impl& d = *impl_;
    const int n = static_cast<int>(sentences.size());
    std::vector<Translation> out(n);
    std::vector<std::vector<int32_t>> ids(n);
    const bool copy = d.models.front()->config().copy_attention;
    std::vector<std::vector<int32_t>> copy_ids(copy ? n : 0);  // extended ids (copy models)
    std::vector<ExtendedVocab> ext(copy ? n : 0);
    Pieces pieces;
    for (int i = 0; i < n; ++i) {
        const std::size_t bad = utf8::find_invalid(sentences[i]);
        if (bad != utf8::npos)
            throw Error(fmt::format("sentence {} of {}: invalid UTF-8 at byte {} (0x{:02x})", i + 1,
                                    n, bad + 1, static_cast<unsigned char>(sentences[i][bad])));
        d.src_tok.encode(sentences[i], pieces);
        d.src_vocab.encode(pieces, ids[i]);
        out[i].source_tokens.assign(pieces.views.begin(), pieces.views.end());
        if (copy) ext[i] = extend_source(pieces.views, d.tgt_vocab, copy_ids[i]);
    }

    const std::vector<TokenConstraints> cons =  // as ids: the second pass's (see below)
        all_token_constraints(o.constraints, n, d.tgt_tok, d.tgt_vocab, d.special.unk);

    const int members = static_cast<int>(d.paths.size());
    if (o.ensemble_attention != kMeanAttention &&
        (o.ensemble_attention < 0 || o.ensemble_attention >= members))
        throw UsageError(fmt::format(
            "ensemble attention: member {} does not exist (the ensemble has {} member{}: 0..{}, "
            "or mean)",
            o.ensemble_attention, members, members == 1 ? "" : "s", members - 1));
    if (o.stream) check_stream_options(o, members, d.models.front()->config());
    const int r = impl_->acquire();
    std::vector<DecodeSession>& sessions = impl_->replicas[r];
    const auto search = [&](const BeamOptions& b, std::span<const std::vector<int32_t>> src,
                            std::span<const std::vector<int32_t>> cp) {
        if (members == 1) return beam_search_sorted(sessions[0], src, b, o.batch_size, cp);
        std::vector<DecodeSession*> each;
        for (DecodeSession& s : sessions) each.push_back(&s);
        Ensemble ensemble(Ensemble::Sessions(std::move(each)), o.ensemble_attention);
        return beam_search_sorted(ensemble, src, b, o.batch_size, cp);
    };
    const auto output = [&](int i, const std::vector<Hypothesis>& hs) {
        out[i].cancelled = o.cancelled && hs.empty();
        out[i].hypotheses.clear();
        for (const Hypothesis& h : hs)
            out[i].hypotheses.push_back(output_hypothesis(h, d.tgt_tok, d.tgt_vocab, d.special,
                                                          out[i].source_tokens,
                                                          copy ? &ext[i] : nullptr, o));
    };
    try {
        if (o.stream) {  // one sentence at a time, as it would arrive
            for (int i = 0; i < n; ++i) output(i, stream_one(sessions[0], ids[i], o, beam, i));
            impl_->release(r);
            return out;
        }
        // Constraints: every sentence is searched without them first; those whose outputs do
        // not all meet theirs (by their text) are searched again with them (dynamic beam
        // allocation, beam_search.h). A sentence the model already translates as asked keeps
        // that translation, and the cost is a second search of the others.
        const std::vector<std::vector<Hypothesis>> hyps = search(beam, ids, copy_ids);
        for (int i = 0; i < n; ++i) output(i, hyps[i]);
        if (!cons.empty()) constrain_again(o, cons, ids, copy_ids, beam, search, output, out);
    } catch (...) {
        impl_->release(r);
        throw;
    }
    impl_->release(r);
    return out;
}

}  // namespace nazar
