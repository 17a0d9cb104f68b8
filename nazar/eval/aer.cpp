// Alignment error rate (definitions in aer.h).
#include "nazar/eval/aer.h"

#include "nazar/core/check.h"
#include "nazar/eval/text.h"

#include <algorithm>
#include <charconv>
#include <iterator>

namespace nazar {

namespace {

struct ParsedLink {
    AlignmentLink link;
    bool possible = false;  // written "i?j"
};

ParsedLink parse_link(std::string_view tok, std::string_view what, std::size_t line_no) {
    const std::size_t sep = tok.find_first_of("-?");
    int src = 0, tgt = 0;
    bool ok = sep != std::string_view::npos && sep > 0 && sep + 1 < tok.size();
    if (ok) {
        const char* end_src = tok.data() + sep;
        const char* end_tgt = tok.data() + tok.size();
        auto [p1, e1] = std::from_chars(tok.data(), end_src, src);
        auto [p2, e2] = std::from_chars(end_src + 1, end_tgt, tgt);
        ok = e1 == std::errc{} && p1 == end_src && e2 == std::errc{} && p2 == end_tgt && src >= 0 &&
             tgt >= 0;
    }
    NZ_CHECK_INPUT(
        ok, "{} line {}: bad alignment link '{}' (expected i-j or i?j with non-negative integers)",
        what, line_no, tok);
    return {{src, tgt}, tok[sep] == '?'};
}

void sort_unique(std::vector<AlignmentLink>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

int64_t intersection_size(const std::vector<AlignmentLink>& a,
                          const std::vector<AlignmentLink>& b) {
    int64_t n = 0;
    for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
        if (*i < *j)
            ++i;
        else if (*j < *i)
            ++j;
        else
            ++n, ++i, ++j;
    }
    return n;
}

}  // namespace

std::vector<AlignmentLink> parse_hard_alignment(std::string_view line, std::size_t line_no) {
    std::vector<AlignmentLink> out;
    for (const auto tok : split_whitespace(line)) {
        const ParsedLink p = parse_link(tok, "hypothesis alignment", line_no);
        NZ_CHECK_INPUT(
            !p.possible,
            "hypothesis alignment line {}: '{}' is a possible link; hypotheses must be hard "
            "i-j links",
            line_no, tok);
        out.push_back(p.link);
    }
    sort_unique(out);
    return out;
}

GoldAlignment parse_gold_alignment(std::string_view line, std::string_view possible_line,
                                   std::size_t line_no) {
    GoldAlignment g;
    for (const auto tok : split_whitespace(line)) {
        const ParsedLink p = parse_link(tok, "gold alignment", line_no);
        (p.possible ? g.possible : g.sure).push_back(p.link);
    }
    for (const auto tok : split_whitespace(possible_line))
        g.possible.push_back(parse_link(tok, "possible-links", line_no).link);
    g.possible.insert(g.possible.end(), g.sure.begin(), g.sure.end());  // S ⊆ P
    sort_unique(g.sure);
    sort_unique(g.possible);
    return g;
}

AerScore corpus_aer(std::span<const std::string> hyp, std::span<const std::string> gold,
                    std::span<const std::string> possible) {
    NZ_CHECK_INPUT(hyp.size() == gold.size(),
                   "line-count mismatch: {} hypothesis alignments but {} gold alignments",
                   hyp.size(), gold.size());
    NZ_CHECK_INPUT(possible.empty() || possible.size() == gold.size(),
                   "line-count mismatch: {} gold alignments but {} lines of possible links",
                   gold.size(), possible.size());
    AerScore out;
    for (std::size_t i = 0; i < hyp.size(); ++i) {
        const auto a = parse_hard_alignment(hyp[i], i + 1);
        const auto g = parse_gold_alignment(
            gold[i], possible.empty() ? std::string_view{} : possible[i], i + 1);
        out.hyp_links += static_cast<int64_t>(a.size());
        out.sure_links += static_cast<int64_t>(g.sure.size());
        out.possible_links += static_cast<int64_t>(g.possible.size());
        out.hyp_and_sure += intersection_size(a, g.sure);
        out.hyp_and_possible += intersection_size(a, g.possible);
        ++out.segments;
    }
    const auto pct = [](int64_t num, int64_t den) {
        return den > 0 ? 100.0 * static_cast<double>(num) / static_cast<double>(den) : 0.0;
    };
    out.precision = pct(out.hyp_and_possible, out.hyp_links);
    out.recall = pct(out.hyp_and_sure, out.sure_links);
    const int64_t den = out.hyp_links + out.sure_links;
    out.score = den > 0 ? 100.0 - pct(out.hyp_and_sure + out.hyp_and_possible, den) : 0.0;
    return out;
}

std::string AerScore::format() const {
    return fmt::format(
        "AER = {:.2f} (precision = {:.2f} recall = {:.2f} |A| = {} |S| = {} |P| = {} segments = "
        "{})",
        score, precision, recall, hyp_links, sure_links, possible_links, segments);
}

}  // namespace nazar
