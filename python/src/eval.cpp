// Metrics over lists of strings (nazar/eval/, docs/metrics.md), the numbers `nazar eval` prints.
// Each returns a dict: "score", "name", "line" (the CLI's text line), "signature" where the
// metric has one, and the fields of `nazar eval --json`; python/nazar/eval.py wraps it in a
// Score object.
#include "common.h"

#include "nazar/core/check.h"

#include "nazar/eval/aer.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/references.h"
#include "nazar/eval/wer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace nazar::py {
namespace {

using Lines = std::vector<std::string>;
using Streams = std::vector<Lines>;

constexpr int64_t kMaxChrfBeta = INT32_MAX;

// The hypotheses and reference streams, checked as `nazar eval` checks its files: the same
// number of lines everywhere (a ValueError, as the CLI's usage error), and not empty (a
// corpus score of nothing is no score; the CLI prints 0 for empty files).
struct Corpus {
    Lines hyps;
    Streams refs;
};

[[noreturn]] void empty_input() {
    throw UsageError("the input is empty: hyps has no lines (there is nothing to score)");
}

// refs: one reference per hypothesis (a list of str) or several streams (a list of such lists).
Corpus corpus(const pb::handle& hyps, const pb::handle& refs) {
    Corpus c;
    c.hyps = text_list(hyps, "hyps");
    if (PyUnicode_Check(refs.ptr()) || !PySequence_Check(refs.ptr()))
        throw pb::type_error(fmt::format("refs must be a list of str (or of lists of str), got {}",
                                         Py_TYPE(refs.ptr())->tp_name));
    const auto streams = pb::reinterpret_borrow<pb::sequence>(refs);
    if (streams.size() > 0 && PyUnicode_Check(pb::object(streams[0]).ptr())) {
        c.refs.push_back(text_list(refs, "refs"));
    } else {
        for (std::size_t k = 0; k < streams.size(); ++k)
            c.refs.push_back(text_list(streams[k], fmt::format("refs[{}]", k).c_str()));
    }
    if (c.hyps.empty()) empty_input();
    if (c.refs.empty())
        throw UsageError(fmt::format("refs is empty: give one reference per hypothesis ({} hyps)",
                                     c.hyps.size()));
    for (std::size_t k = 0; k < c.refs.size(); ++k)
        if (c.refs[k].size() != c.hyps.size())
            throw UsageError(
                fmt::format("line-count mismatch: {} hyps but {} references{} (one per hypothesis)",
                            c.hyps.size(), c.refs[k].size(),
                            c.refs.size() > 1 ? fmt::format(" in refs[{}]", k) : std::string()));
    return c;
}

pb::dict bleu(const pb::handle& hyps, const pb::handle& refs, const pb::handle& tokenize,
              const pb::handle& smooth_method, std::optional<double> smooth_value, bool lowercase,
              const pb::handle& max_ngram_order) {
    BleuOptions opt{.smooth_method = parse_bleu_smooth(text_arg(smooth_method, "smooth_method")),
                    .tokenize = parse_bleu_tokenize(text_arg(tokenize, "tokenize")),
                    .lowercase = lowercase,
                    .max_ngram_order = static_cast<int>(
                        int_arg(max_ngram_order, "max_ngram_order", 1, kMaxBleuOrder))};
    opt.smooth_value = smooth_value;
    const Corpus c = corpus(hyps, refs);
    BleuScore s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_bleu(c.hyps, c.refs, opt);
    }
    pb::dict d;
    d["name"] = "BLEU";
    d["score"] = s.score;
    d["line"] = s.format();
    d["signature"] = s.signature;
    d["counts"] = s.counts;
    d["totals"] = s.totals;
    d["precisions"] = s.precisions;
    d["bp"] = s.bp;
    d["ratio"] = s.ratio;
    d["hyp_len"] = s.hyp_len;
    d["ref_len"] = s.ref_len;
    return d;
}

pb::dict chrf(const pb::handle& hyps, const pb::handle& refs, const pb::handle& char_order,
              const pb::handle& word_order, const pb::handle& beta, bool lowercase, bool whitespace,
              bool eps_smoothing) {
    const ChrfOptions opt{
        .char_order = static_cast<int>(int_arg(char_order, "char_order", 1, kMaxChrfOrder)),
        .word_order = static_cast<int>(int_arg(word_order, "word_order", 0, kMaxChrfOrder)),
        .beta = static_cast<int>(int_arg(beta, "beta", 0, kMaxChrfBeta)),
        .lowercase = lowercase,
        .whitespace = whitespace,
        .eps_smoothing = eps_smoothing};
    const Corpus c = corpus(hyps, refs);
    ChrfScore s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_chrf(c.hyps, c.refs, opt);
    }
    pb::dict d;
    d["name"] = s.name();
    d["score"] = s.score;
    d["line"] = s.format();
    d["signature"] = s.signature;
    return d;
}

pb::dict error_rate(const pb::handle& hyps, const pb::handle& refs, const std::string& metric) {
    ErrorMetric m;
    if (metric == "wer")
        m = ErrorMetric::wer;
    else if (metric == "cer")
        m = ErrorMetric::cer;
    else if (metric == "per")
        m = ErrorMetric::per;
    else
        throw UsageError("error rate metric '" + metric + "' is not one of wer, cer, per");
    const Corpus c = corpus(hyps, refs);
    ErrorRate s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_error_rate(c.hyps, c.refs, m);
    }
    pb::dict d;
    d["name"] = s.name();
    d["score"] = s.score;
    d["line"] = s.format();
    d["errors"] = s.errors;
    d["substitutions"] = s.substitutions;
    d["deletions"] = s.deletions;
    d["insertions"] = s.insertions;
    d["hyp_len"] = s.hyp_len;
    d["ref_len"] = s.ref_len;
    d["segments"] = s.segments;
    return d;
}

pb::dict exact(const pb::handle& hyps, const pb::handle& refs) {
    const Corpus c = corpus(hyps, refs);
    const ExactMatch s = exact_match(c.hyps, c.refs);
    pb::dict d;
    d["name"] = "Exact";
    d["score"] = s.score;
    d["line"] = s.format();
    d["correct"] = s.correct;
    d["segments"] = s.segments;
    return d;
}

pb::dict aer(const pb::handle& hyps, const pb::handle& gold, const pb::handle& possible) {
    const Lines h = text_list(hyps, "hyps"), g = text_list(gold, "gold"),
                p = text_list(possible, "possible");
    if (h.empty()) empty_input();
    if (g.size() != h.size())
        throw UsageError(
            fmt::format("line-count mismatch: {} hyps but {} gold alignments (one per hypothesis)",
                        h.size(), g.size()));
    if (!p.empty() && p.size() != h.size())
        throw UsageError(fmt::format(
            "line-count mismatch: {} hyps but {} lines of possible links (none, or one per "
            "hypothesis)",
            h.size(), p.size()));
    const AerScore s = corpus_aer(h, g, p);
    pb::dict d;
    d["name"] = "AER";
    d["score"] = s.score;
    d["line"] = s.format();
    d["precision"] = s.precision;
    d["recall"] = s.recall;
    d["hyp_links"] = s.hyp_links;
    d["sure_links"] = s.sure_links;
    d["possible_links"] = s.possible_links;
    d["hyp_and_sure"] = s.hyp_and_sure;
    d["hyp_and_possible"] = s.hyp_and_possible;
    d["segments"] = s.segments;
    return d;
}

}  // namespace

void init_eval(pb::module_& m) {
    m.def("bleu", &bleu, pb::arg("hyps"), pb::arg("refs"), pb::arg("tokenize"),
          pb::arg("smooth_method"), pb::arg("smooth_value"), pb::arg("lowercase"),
          pb::arg("max_ngram_order"));
    m.def("chrf", &chrf, pb::arg("hyps"), pb::arg("refs"), pb::arg("char_order"),
          pb::arg("word_order"), pb::arg("beta"), pb::arg("lowercase"), pb::arg("whitespace"),
          pb::arg("eps_smoothing"));
    m.def("error_rate", &error_rate, pb::arg("hyps"), pb::arg("refs"), pb::arg("metric"));
    m.def("exact", &exact, pb::arg("hyps"), pb::arg("refs"));
    m.def("aer", &aer, pb::arg("hyps"), pb::arg("gold"), pb::arg("possible"));
}

}  // namespace nazar::py
