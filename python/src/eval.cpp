// Metrics over lists of strings (nazar/eval/, docs/metrics.md), the numbers `nazar eval` prints.
// Each returns a dict: "score", "name", "line" (the CLI's text line), "signature" where the
// metric has one, and the fields of `nazar eval --json`; python/nazar/eval.py wraps it in a
// Score object.
#include "common.h"

#include "nazar/eval/aer.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/references.h"
#include "nazar/eval/wer.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

namespace nazar::py {
namespace {

using Lines = std::vector<std::string>;
using Streams = std::vector<Lines>;

pb::dict bleu(const Lines& hyps, const Streams& refs, const std::string& tokenize,
              const std::string& smooth_method, std::optional<double> smooth_value, bool lowercase,
              int max_ngram_order) {
    BleuOptions opt{.smooth_method = parse_bleu_smooth(smooth_method),
                    .tokenize = parse_bleu_tokenize(tokenize),
                    .lowercase = lowercase,
                    .max_ngram_order = max_ngram_order};
    opt.smooth_value = smooth_value;
    BleuScore s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_bleu(hyps, refs, opt);
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

pb::dict chrf(const Lines& hyps, const Streams& refs, int char_order, int word_order, int beta,
              bool lowercase, bool whitespace, bool eps_smoothing) {
    const ChrfOptions opt{.char_order = char_order,
                          .word_order = word_order,
                          .beta = beta,
                          .lowercase = lowercase,
                          .whitespace = whitespace,
                          .eps_smoothing = eps_smoothing};
    ChrfScore s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_chrf(hyps, refs, opt);
    }
    pb::dict d;
    d["name"] = s.name();
    d["score"] = s.score;
    d["line"] = s.format();
    d["signature"] = s.signature;
    return d;
}

pb::dict error_rate(const Lines& hyps, const Streams& refs, const std::string& metric) {
    ErrorMetric m;
    if (metric == "wer")
        m = ErrorMetric::wer;
    else if (metric == "cer")
        m = ErrorMetric::cer;
    else if (metric == "per")
        m = ErrorMetric::per;
    else
        throw UsageError("error rate metric '" + metric + "' is not one of wer, cer, per");
    ErrorRate s;
    {
        pb::gil_scoped_release nogil;
        s = corpus_error_rate(hyps, refs, m);
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

pb::dict exact(const Lines& hyps, const Streams& refs) {
    const ExactMatch s = exact_match(hyps, refs);
    pb::dict d;
    d["name"] = "Exact";
    d["score"] = s.score;
    d["line"] = s.format();
    d["correct"] = s.correct;
    d["segments"] = s.segments;
    return d;
}

pb::dict aer(const Lines& hyps, const Lines& gold, const Lines& possible) {
    const AerScore s = corpus_aer(hyps, gold, possible);
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
