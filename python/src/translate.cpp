// Translation, scoring and forced alignment (docs/python.md "Translate").
//
//   Translator        nazar::Translator (thread-safe; `replicas` decoding sessions over one
//                     shared copy of the weights); translate()
//                     releases the GIL for the whole decode and returns plain tuples that
//                     python/nazar/_translate.py wraps in Translation / Hypothesis objects.
//                     Ctrl-C and a CancelToken stop it within a decoder step (interrupt.cpp).
//   limits            every argument is checked first (common.h): the flags' ranges of the
//                     command line, and its --max-line-bytes (64 KiB) on each sentence.
//   TextModel         one model with its tokenizers and vocabularies for score() and align(),
//                     as `nazar score` / `nazar align` load it; each call has its own buffers
//                     (a TrainPass or a DecodeSession over the one const model), so threads
//                     score and align at once; the GIL is released while it computes.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/data/extended_vocab.h"
#include "nazar/data/pipeline.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/decode/alignment.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/protect.h"
#include "nazar/decode/shortlist.h"
#include "nazar/decode/translator.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nazar::py {
namespace {

using IdRows = std::vector<std::vector<int32_t>>;

class TextModel {
public:
    explicit TextModel(const std::string& path)
        : path_(path), loaded_(load_model(path, ParamMode::inference)) {
        src_tok_ = Tokenizer::from_string(meta(kSrcTokenizerKey));
        tgt_tok_ = Tokenizer::from_string(meta(kTgtTokenizerKey));
        src_vocab_ = Vocab::from_json(meta(kSrcVocabKey));
        tgt_vocab_ = Vocab::from_json(meta(kTgtVocabKey));
    }

    // log p(target </s> | source) per pair, as `nazar score` (a copy model: the mixture's
    // log(P + ε) over each pair's extended vocabulary, data/extended_vocab.h).
    std::vector<double> score(const std::vector<std::string>& src,
                              const std::vector<std::string>& tgt, int batch_size,
                              const std::function<void()>& poll) {
        Encoded e;
        encode(src, tgt, e);
        std::vector<double> out;
        TrainPass pass(std::as_const(*loaded_.model));  // this call's buffers, reused per batch
        for_batches(e.s.size(), batch_size, [&](std::size_t i, std::size_t n) {
            poll();
            Batch b = batch_from_ids(slice(e.s, i, n), slice(e.t, i, n));
            if (copying()) set_copy_ids(b, slice(e.cs, i, n), slice(e.ct, i, n));
            std::vector<double> scores(n, 0.0);
            pass.score(b, scores);
            out.insert(out.end(), scores.begin(), scores.end());
        });
        return out;
    }

    // Forced decoding of each pair, as `nazar align`: (log p, attention (T_b + 1, S_b), and for a
    // copy model p_gen per target token).
    std::vector<ForcedAlignment> align(const std::vector<std::string>& src,
                                       const std::vector<std::string>& tgt, int batch_size,
                                       std::vector<std::vector<std::string>>& src_pieces,
                                       std::vector<std::vector<std::string>>& tgt_pieces,
                                       const std::function<void()>& poll) {
        Encoded e;
        encode(src, tgt, e);
        for (const auto& row : e.s) src_pieces.push_back(pieces(row, src_vocab_));
        for (const auto& row : e.t) tgt_pieces.push_back(pieces(row, tgt_vocab_));
        std::vector<ForcedAlignment> out;
        DecodeSession model(*loaded_.model);  // this call's buffers, reused by every batch
        const int32_t pad = model.config().special_ids.pad;
        for_batches(e.s.size(), batch_size, [&](std::size_t i, std::size_t n) {
            poll();
            int S = 0;
            for (std::size_t b = i; b < i + n; ++b)
                S = std::max(S, static_cast<int>(e.s[b].size()));
            std::vector<int32_t> ids(n * static_cast<std::size_t>(S), pad);
            std::vector<int32_t> copy_ids(copying() ? ids.size() : 0, pad);
            std::vector<int> lengths;
            for (std::size_t b = 0; b < n; ++b) {
                const auto at = static_cast<std::ptrdiff_t>(b * S);
                std::copy(e.s[i + b].begin(), e.s[i + b].end(), ids.begin() + at);
                if (copying())
                    std::copy(e.cs[i + b].begin(), e.cs[i + b].end(), copy_ids.begin() + at);
                lengths.push_back(static_cast<int>(e.s[i + b].size()));
            }
            auto res = forced_alignment(model, ids, lengths, S, slice(copying() ? e.ct : e.t, i, n),
                                        copy_ids);
            for (auto& r : res) out.push_back(std::move(r));
        });
        return out;
    }

    const std::string& path() const { return path_; }

private:
    struct Encoded {
        IdRows s, t;    // vocabulary ids
        IdRows cs, ct;  // a copy model's extended ids (data/extended_vocab.h), else empty
    };

    bool copying() const { return loaded_.model->config().copy_attention; }

    const std::string& meta(const char* key) const {
        const auto it = loaded_.metadata.find(key);
        if (it == loaded_.metadata.end())
            throw Error(fmt::format(
                "'{}' lacks metadata '{}' (vocabularies and tokenizers are needed to score text)",
                path_, key));
        return it->second;
    }

    void encode(const std::vector<std::string>& src, const std::vector<std::string>& tgt,
                Encoded& e) const {
        if (src.size() != tgt.size())
            throw UsageError(fmt::format("{} sources but {} targets: give one target per source",
                                         src.size(), tgt.size()));
        Pieces sp, tp;
        for (std::size_t i = 0; i < src.size(); ++i) {
            const std::string where = fmt::format("pair {}", i);
            e.s.push_back(encode_line(src[i], src_tok_, src_vocab_, where));
            e.t.push_back(encode_line(tgt[i], tgt_tok_, tgt_vocab_, where));
            if (!copying()) continue;  // the lines are valid UTF-8 now (encode_line checked)
            src_tok_.encode(src[i], sp);
            tgt_tok_.encode(tgt[i], tp);
            e.cs.emplace_back();
            e.ct.emplace_back();
            extend_pair(sp.views, tp.views, tgt_vocab_, e.cs.back(), e.ct.back());
        }
    }

    static std::vector<std::string> pieces(const std::vector<int32_t>& ids, const Vocab& v) {
        std::vector<std::string> p;
        for (int32_t id : ids) p.emplace_back(v.piece(id));
        return p;
    }

    static IdRows slice(const IdRows& rows, std::size_t i, std::size_t n) {
        return IdRows(rows.begin() + static_cast<std::ptrdiff_t>(i),
                      rows.begin() + static_cast<std::ptrdiff_t>(i + n));
    }

    // f(first, count) over consecutive batches of at most batch_size pairs
    template <class F>
    static void for_batches(std::size_t total, int batch_size, F&& f) {
        if (batch_size < 1) throw UsageError(fmt::format("batch_size {} is not >= 1", batch_size));
        for (std::size_t i = 0; i < total; i += static_cast<std::size_t>(batch_size))
            f(i, std::min(total - i, static_cast<std::size_t>(batch_size)));
    }

    std::string path_;
    LoadedModel loaded_;
    Tokenizer src_tok_ = Tokenizer::character(), tgt_tok_ = Tokenizer::character();
    Vocab src_vocab_, tgt_vocab_;
};

pb::list links_to_list(const std::vector<AlignmentLink>& links) {
    pb::list l;
    for (const AlignmentLink& a : links) l.append(pb::make_tuple(a.src, a.tgt));
    return l;
}

// The limits of the command line's flags (cli/cmd_translate.cpp, cmd_score.cpp, cmd_align.cpp).
constexpr int64_t kMaxBeam = 1024, kMaxBatch = 1 << 16, kMaxScoreBatch = 1 << 20;
constexpr int64_t kMaxLength = 1 << 20, kMaxLineBytesLimit = int64_t{1} << 30;
constexpr int64_t kIntMin = INT32_MIN, kIntMax = INT32_MAX;

std::size_t max_line_bytes(const pb::handle& v) {
    return static_cast<std::size_t>(int_arg(v, "max_line_bytes", 1, kMaxLineBytesLimit));
}

// The decoding settings of translate(): each argument None takes the model file's stored value
// (`nazar tune`, decode/decode_defaults.h), else translate's default.
struct SettingArgs {
    pb::handle beam, length_penalty, coverage_penalty, max_length_ratio, max_length_extra,
        max_length;
};

float float_arg(const pb::handle& v, const char* name) {
    if (pb::isinstance<pb::bool_>(v) ||
        !(pb::isinstance<pb::float_>(v) || pb::isinstance<pb::int_>(v)))
        throw pb::type_error(
            fmt::format("{} must be a number, got {}", name, Py_TYPE(v.ptr())->tp_name));
    return v.cast<float>();
}

TranslationOptions translation_options(const Translator& tr, const SettingArgs& a,
                                       const pb::handle& n_best, const pb::handle& batch_size) {
    TranslationOptions o;
    o.n_best = static_cast<int>(int_arg(n_best, "n_best", 1, kMaxBeam));
    o.batch_size = static_cast<int>(int_arg(batch_size, "batch_size", 1, kMaxBatch));
    const ExplicitOptions given{.beam_size = !a.beam.is_none(),
                                .length_penalty = !a.length_penalty.is_none(),
                                .coverage_penalty = !a.coverage_penalty.is_none(),
                                .max_length_ratio = !a.max_length_ratio.is_none(),
                                .max_length_extra = !a.max_length_extra.is_none(),
                                .max_length = !a.max_length.is_none()};
    if (given.beam_size) o.beam_size = static_cast<int>(int_arg(a.beam, "beam", 1, kMaxBeam));
    if (given.length_penalty) o.length_penalty = float_arg(a.length_penalty, "length_penalty");
    if (given.coverage_penalty)
        o.coverage_penalty = float_arg(a.coverage_penalty, "coverage_penalty");
    if (given.max_length_ratio)
        o.max_length_ratio = float_arg(a.max_length_ratio, "max_length_ratio");
    if (given.max_length_extra)
        o.max_length_extra =
            static_cast<int>(int_arg(a.max_length_extra, "max_length_extra", kIntMin, kIntMax));
    if (given.max_length)
        o.max_length = static_cast<int>(int_arg(a.max_length, "max_length", 1, kMaxLength));
    apply_decode_defaults(tr.decode_defaults(), given, o);
    if (o.n_best > o.beam_size)
        throw UsageError(fmt::format("n_best {} exceeds beam {}", o.n_best, o.beam_size));
    return o;
}

// translate()'s constraints: None, or one (include, exclude) pair of lists of str per sentence
// (python/nazar/_translate.py checks the shapes), plus the protected spans of each sentence
// (protect: the built-in expressions; protect_regex: more).
std::vector<TextConstraints> text_constraints(const pb::handle& constraints, bool protect,
                                              const std::vector<std::string>& protect_regex,
                                              const std::vector<std::string>& sentences) {
    std::vector<TextConstraints> out;
    if (!constraints.is_none()) {
        for (const pb::handle pair : constraints) {
            const auto t =
                pair.cast<std::pair<std::vector<std::string>, std::vector<std::string>>>();
            out.push_back({.include = t.first, .exclude = t.second});
        }
        if (out.size() != sentences.size())
            throw UsageError(fmt::format("constraints for {} sentences, {} sentences given",
                                         out.size(), sentences.size()));
    }
    if (!protect && protect_regex.empty()) return out;
    out.resize(sentences.size());
    const SpanProtector p = SpanProtector::from_patterns(protect_regex, protect);
    for (std::size_t i = 0; i < sentences.size(); ++i) p.add_spans(sentences[i], out[i].include);
    return out;
}

// Translator.decode_defaults: the stored settings as a dict (only those the file has), with
// "tuned" (metric, score, default_score, dev, sources) when tune chose them.
pb::dict decode_defaults_to_python(const DecodeDefaults& d) {
    pb::dict out;
    if (d.beam_size) out["beam"] = *d.beam_size;
    if (d.length_penalty) out["length_penalty"] = *d.length_penalty;
    if (d.coverage_penalty) out["coverage_penalty"] = *d.coverage_penalty;
    if (d.max_length_ratio) out["max_length_ratio"] = *d.max_length_ratio;
    if (d.max_length_extra) out["max_length_extra"] = *d.max_length_extra;
    if (d.max_length) out["max_length"] = *d.max_length;
    if (d.tuned) {
        pb::dict t;
        t["metric"] = d.tuned->metric;
        t["score"] = d.tuned->score;
        t["default_score"] = d.tuned->default_score;
        t["dev"] = d.tuned->dev;
        t["sources"] = d.tuned->sources;
        out["tuned"] = t;
    }
    return out;
}

pb::list translations_to_python(std::vector<Translation>& res, bool alignments, bool attention) {
    pb::list out;
    for (Translation& t : res) {
        pb::list hyps;
        for (TranslationHypothesis& h : t.hypotheses) {
            pb::object links =
                alignments ? pb::object(links_to_list(h.alignment)) : pb::object(pb::none());
            pb::object att =
                attention ? pb::object(to_numpy(std::move(h.attention))) : pb::object(pb::none());
            pb::object read = h.read.empty() ? pb::object(pb::none()) : pb::cast(h.read);
            hyps.append(pb::make_tuple(h.text, pb::cast(h.tokens), h.score, h.log_prob, h.finished,
                                       links, att, h.constraints_met, read));
        }
        out.append(pb::make_tuple(pb::cast(t.source_tokens), hyps, pb::cast(t.unmet)));
    }
    return out;
}

// Decodes with the GIL released; Ctrl-C (in the main thread) or `token` stops it within a
// decoder step (interrupt.cpp): KeyboardInterrupt, or nazar.Cancelled.
std::vector<Translation> translate_interruptibly(const Translator& tr,
                                                 const std::vector<std::string>& sentences,
                                                 TranslationOptions& o,
                                                 const std::string& dictionary,
                                                 const std::shared_ptr<CancelToken>& token) {
    InterruptPoll poll;
    o.cancelled = [&](std::size_t) {
        if (token && token->cancelled.load(std::memory_order_relaxed)) return true;
        poll.check();
        return false;
    };
    std::vector<Translation> res;
    {
        pb::gil_scoped_release nogil;
        UnkDictionary dict;
        if (!dictionary.empty()) {
            dict = load_unk_dictionary(dictionary);
            o.dictionary = &dict;
        }
        res = tr.translate(sentences, o);
    }
    if (token && token->cancelled.load()) {
        const auto done = std::count_if(res.begin(), res.end(),
                                        [](const Translation& t) { return !t.cancelled; });
        throw Cancelled(fmt::format(
            "translation cancelled by its CancelToken ({} of {} sentences were finished)", done,
            res.size()));
    }
    return res;
}

std::shared_ptr<CancelToken> cancel_token(const pb::handle& cancel) {
    if (cancel.is_none()) return nullptr;
    if (!pb::isinstance<CancelToken>(cancel))
        throw pb::type_error(fmt::format("cancel must be a nazar.CancelToken or None, got {}",
                                         Py_TYPE(cancel.ptr())->tp_name));
    return cancel.cast<std::shared_ptr<CancelToken>>();
}

// nazar.Translator: translate() returns plain tuples (python/nazar/_translate.py wraps them).
void bind_translator(pb::module_& m) {
    pb::class_<Translator>(m, "Translator")
        .def(pb::init([](const std::string& path, const pb::handle& replicas) {
                 const auto n = static_cast<int>(int_arg(replicas, "replicas", 1, kMaxThreads));
                 SigintBlocked blocked;
                 pb::gil_scoped_release nogil;
                 return std::make_unique<Translator>(path, TranslatorConfig{.replicas = n});
             }),
             pb::arg("path"), pb::arg("replicas") = 1)
        .def_property_readonly("replicas", &Translator::replicas)
        .def_property_readonly("model_path", &Translator::model_path)
        .def_property_readonly(
            "decode_defaults",
            [](const Translator& tr) { return decode_defaults_to_python(tr.decode_defaults()); })
        .def(
            "translate",
            [](const Translator& tr, const pb::handle& sentences, const pb::handle& beam,
               const pb::handle& n_best, bool alignments, bool attention, bool replace_unk,
               const pb::handle& batch_size, const pb::handle& length_penalty,
               const pb::handle& coverage_penalty, const pb::handle& max_length_ratio,
               const pb::handle& max_length_extra, const pb::handle& max_length,
               const std::string& dictionary, const pb::handle& max_bytes, const pb::handle& cancel,
               const pb::handle& constraints, bool protect,
               const std::vector<std::string>& protect_regex, const Shortlist* shortlist,
               bool stream) {
                TranslationOptions o =
                    translation_options(tr,
                                        {beam, length_penalty, coverage_penalty, max_length_ratio,
                                         max_length_extra, max_length},
                                        n_best, batch_size);
                o.alignments = alignments;
                o.attention = attention;
                o.replace_unk = replace_unk;
                if (!dictionary.empty() && !replace_unk)
                    throw UsageError("dictionary needs replace_unk=True");
                const std::shared_ptr<CancelToken> token = cancel_token(cancel);
                const std::vector<std::string> text =
                    text_list(sentences, "sentences", max_line_bytes(max_bytes));
                const std::vector<TextConstraints> cons =
                    text_constraints(constraints, protect, protect_regex, text);
                o.constraints = cons;
                o.shortlist = shortlist;
                o.stream = stream;
                if (stream && beam.is_none()) o.beam_size = 1;  // greedy, whatever is stored
                std::vector<Translation> res =
                    translate_interruptibly(tr, text, o, dictionary, token);
                return translations_to_python(res, alignments, attention);
            },
            pb::arg("sentences"), pb::arg("beam"), pb::arg("n_best"), pb::arg("alignments"),
            pb::arg("attention"), pb::arg("replace_unk"), pb::arg("batch_size"),
            pb::arg("length_penalty"), pb::arg("coverage_penalty"), pb::arg("max_length_ratio"),
            pb::arg("max_length_extra"), pb::arg("max_length"), pb::arg("dictionary"),
            pb::arg("max_line_bytes"), pb::arg("cancel"), pb::arg("constraints"),
            pb::arg("protect"), pb::arg("protect_regex"), pb::arg("shortlist").none(true),
            pb::arg("stream"))
        .def(
            "load_shortlist",
            [](const Translator& tr, const std::string& path, const pb::handle& frequent,
               const pb::handle& best) {
                const ShortlistOptions o{
                    .frequent = static_cast<int>(int_arg(frequent, "frequent", 0, 1 << 20)),
                    .best = static_cast<int>(int_arg(best, "best", 0, 1 << 20))};
                pb::gil_scoped_release nogil;
                return tr.load_shortlist(path, o);
            },
            pb::arg("path"), pb::arg("frequent"), pb::arg("best"));
    pb::class_<Shortlist>(m, "Shortlist")
        .def_property_readonly("entries", &Shortlist::entries)
        .def_property_readonly("target_vocab_size", &Shortlist::target_vocab_size);
}

// The sources and targets of score() / align(), checked (common.h text_list).
struct Pairs {
    std::vector<std::string> src, tgt;
    int batch_size = 0;
};

Pairs pairs(const pb::handle& sources, const pb::handle& targets, const pb::handle& batch_size,
            int64_t max_batch, const pb::handle& max_bytes) {
    Pairs p;
    p.batch_size = static_cast<int>(int_arg(batch_size, "batch_size", 1, max_batch));
    const std::size_t limit = max_line_bytes(max_bytes);
    p.src = text_list(sources, "sources", limit);
    p.tgt = text_list(targets, "targets", limit);
    return p;
}

// TextModel: score() and align() of `nazar score` / `nazar align`; Ctrl-C stops them between
// batches.
void bind_text_model(pb::module_& m) {
    pb::class_<TextModel>(m, "TextModel")
        .def(pb::init([](const std::string& path) {
                 SigintBlocked blocked;
                 pb::gil_scoped_release nogil;
                 return std::make_unique<TextModel>(path);
             }),
             pb::arg("path"))
        .def_property_readonly("path", &TextModel::path)
        .def(
            "score",
            [](TextModel& tm, const pb::handle& src, const pb::handle& tgt,
               const pb::handle& batch_size, const pb::handle& max_bytes) {
                const Pairs p = pairs(src, tgt, batch_size, kMaxScoreBatch, max_bytes);
                InterruptPoll poll;
                pb::gil_scoped_release nogil;
                return tm.score(p.src, p.tgt, p.batch_size, [&] { poll.check(); });
            },
            pb::arg("sources"), pb::arg("targets"), pb::arg("batch_size"),
            pb::arg("max_line_bytes"))
        .def(
            "align",
            [](TextModel& tm, const pb::handle& src, const pb::handle& tgt,
               const pb::handle& batch_size, const pb::handle& max_bytes) {
                const Pairs p = pairs(src, tgt, batch_size, kMaxBatch, max_bytes);
                std::vector<ForcedAlignment> res;
                std::vector<std::vector<std::string>> sp, tp;
                {
                    InterruptPoll poll;
                    pb::gil_scoped_release nogil;
                    res = tm.align(p.src, p.tgt, p.batch_size, sp, tp, [&] { poll.check(); });
                }
                pb::list out;
                for (std::size_t b = 0; b < res.size(); ++b) {
                    const int n_tgt = static_cast<int>(tp[b].size());
                    pb::list links = links_to_list(hard_alignment(res[b].attention, n_tgt));
                    pb::object p_gen = pb::none();  // copy attention: p_gen per target token
                    if (!res[b].p_gen.empty())
                        p_gen = pb::cast(
                            std::vector<float>(res[b].p_gen.begin(), res[b].p_gen.begin() + n_tgt));
                    out.append(pb::make_tuple(res[b].log_prob, pb::cast(sp[b]), pb::cast(tp[b]),
                                              to_numpy(std::move(res[b].attention)), links, p_gen));
                }
                return out;
            },
            pb::arg("sources"), pb::arg("targets"), pb::arg("batch_size"),
            pb::arg("max_line_bytes"));
}

}  // namespace

void init_translate(pb::module_& m) {
    bind_translator(m);
    bind_text_model(m);
}

}  // namespace nazar::py
