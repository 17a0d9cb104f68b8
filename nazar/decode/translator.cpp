// Translator: a pool of model replicas behind a thread-safe translate() (translator.h).
#include "nazar/decode/translator.h"

#include "nazar/core/check.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/utf8.h"
#include "nazar/data/vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>

namespace nazar {

struct Translator::Impl {
    std::string path;
    Tokenizer src_tok, tgt_tok;
    Vocab src_vocab, tgt_vocab;
    SpecialIds special;
    std::vector<std::unique_ptr<Seq2Seq>> models;
    std::vector<Seq2Seq*> free;  // replicas not in use
    std::mutex m;
    std::condition_variable cv;

    Seq2Seq* acquire() {
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return !free.empty(); });
        Seq2Seq* model = free.back();
        free.pop_back();
        return model;
    }
    void release(Seq2Seq* model) {
        {
            std::lock_guard lk(m);
            free.push_back(model);
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
}  // namespace

Translator::Translator(const std::string& model_path, const TranslatorConfig& config)
    : impl_(std::make_unique<Impl>()) {
    if (config.replicas < 1)
        throw UsageError(fmt::format("replicas must be >= 1, got {}", config.replicas));
    Impl& d = *impl_;
    d.path = model_path;
    const SafeTensors st = load_safetensors(model_path);  // read once, every replica built from it
    for (int r = 0; r < config.replicas; ++r) {
        LoadedModel m = model_from_safetensors(st, /*inference=*/true);
        if (config.precision) m.model->set_precision(*config.precision);
        if (r == 0) {
            d.src_tok =
                Tokenizer::from_string(require_meta(m.metadata, kSrcTokenizerKey, model_path));
            d.tgt_tok =
                Tokenizer::from_string(require_meta(m.metadata, kTgtTokenizerKey, model_path));
            d.src_vocab = Vocab::from_json(require_meta(m.metadata, kSrcVocabKey, model_path));
            d.tgt_vocab = Vocab::from_json(require_meta(m.metadata, kTgtVocabKey, model_path));
            d.special = m.model->config().special_ids;
        }
        d.models.push_back(std::move(m.model));
        d.free.push_back(d.models.back().get());
    }
}

Translator::~Translator() = default;

int Translator::replicas() const {
    return static_cast<int>(impl_->models.size());
}
const std::string& Translator::model_path() const {
    return impl_->path;
}

std::vector<Translation> Translator::translate(std::span<const std::string> sentences,
                                               const TranslationOptions& o) const {
    const BeamOptions beam{.beam_size = o.beam_size,
                           .n_best = o.n_best,
                           .length_penalty = o.length_penalty,
                           .coverage_penalty = o.coverage_penalty,
                           .max_length_ratio = o.max_length_ratio,
                           .max_length_extra = o.max_length_extra,
                           .max_length = o.max_length};
    validate(beam);
    if (o.batch_size < 1)
        throw UsageError(fmt::format("batch size must be >= 1, got {}", o.batch_size));
    const Impl& d = *impl_;
    const int n = static_cast<int>(sentences.size());
    std::vector<Translation> out(n);
    std::vector<std::vector<int32_t>> ids(n);
    Pieces pieces;
    for (int i = 0; i < n; ++i) {
        const std::size_t bad = utf8::find_invalid(sentences[i]);
        if (bad != utf8::npos)
            throw Error(fmt::format("sentence {} of {}: invalid UTF-8 at byte {} (0x{:02x})", i + 1,
                                    n, bad + 1, static_cast<unsigned char>(sentences[i][bad])));
        d.src_tok.encode(sentences[i], pieces);
        d.src_vocab.encode(pieces, ids[i]);
        out[i].source_tokens.assign(pieces.views.begin(), pieces.views.end());
    }

    Seq2Seq* model = impl_->acquire();
    std::vector<std::vector<Hypothesis>> hyps;
    try {
        hyps = beam_search_sorted(*model, ids, beam, o.batch_size);
    } catch (...) {
        impl_->release(model);
        throw;
    }
    impl_->release(model);

    for (int i = 0; i < n; ++i) {
        for (Hypothesis& h : hyps[i]) {
            // The output is the tokens before </s> without <pad>/<s> (as Vocab::decode reads ids;
            // the search never emits those, so this only guards); alignments and attention keep the
            // same rows.
            std::vector<int32_t> kept;
            std::vector<int> rows;
            for (std::size_t j = 0; j < h.tokens.size(); ++j) {
                const int32_t y = h.tokens[j];
                if (y == d.special.pad || y == d.special.bos) continue;
                kept.push_back(y);
                rows.push_back(static_cast<int>(j));
                if (y == d.special.eos) break;
            }
            const int S_b = h.attention.dim(1);
            Tensor attention({static_cast<int64_t>(rows.size()), S_b});
            for (std::size_t r = 0; r < rows.size(); ++r)
                attention.select(r).copy_from(h.attention.select(rows[r]));
            TranslationHypothesis t;
            t.tokens = output_pieces(kept, attention, d.tgt_vocab, d.special.eos, d.special.unk,
                                     o.replace_unk, out[i].source_tokens, o.dictionary);
            t.text = d.tgt_tok.decode(t.tokens);
            t.score = h.score;
            t.log_prob = h.log_prob;
            t.finished = h.finished;
            if (o.alignments)
                t.alignment = hard_alignment(attention, static_cast<int>(t.tokens.size()));
            if (o.attention) t.attention = std::move(attention);
            out[i].hypotheses.push_back(std::move(t));
        }
    }
    return out;
}

}  // namespace nazar
