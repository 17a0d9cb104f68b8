// WER, CER, PER and exact match (definitions in wer.h).
#include "nazar/eval/wer.h"

#include "nazar/core/check.h"
#include "nazar/eval/ngram.h"
#include "nazar/eval/text.h"

#include <algorithm>

namespace nazar {

namespace {

// CER's units: code points, whitespace runs collapsed to one space, ends trimmed.
void char_units(std::string_view line, std::vector<uint32_t>& out) {
    std::vector<char32_t> cps;
    utf8_decode(line, cps);
    out.clear();
    bool pending_space = false;
    for (const char32_t c : cps) {
        if (is_space(c)) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(' ');
        pending_space = false;
        out.push_back(static_cast<uint32_t>(c));
    }
}

EditCounts bag_counts(int64_t hyp_len, int64_t ref_len, int64_t matches) {
    return {.substitutions = std::min(hyp_len, ref_len) - matches,
            .deletions = std::max<int64_t>(0, ref_len - hyp_len),
            .insertions = std::max<int64_t>(0, hyp_len - ref_len)};
}

}  // namespace

EditCounts edit_distance(std::span<const uint32_t> hyp, std::span<const uint32_t> ref) {
    // D[i][j] = distance of ref[:i] and hyp[:j], two rows at a time; each cell also carries the
    // S/D/I counts of the path it came from. Predecessor preference: diagonal (substitution or
    // match), then up (deletion), then left (insertion), so memory is O(|hyp|), not O(|hyp| |ref|).
    struct Cell {
        uint32_t cost, s, d, i;
    };
    const std::size_t H = hyp.size(), R = ref.size();
    if (static_cast<double>(H + 1) * static_cast<double>(R + 1) >
        static_cast<double>(kMaxEditCells))
        throw UsageError(fmt::format(
            "{} hypothesis and {} reference units need {} alignment cells, above the limit of {}",
            H, R, static_cast<double>(H + 1) * static_cast<double>(R + 1), kMaxEditCells));
    thread_local std::vector<Cell> prev, cur;
    prev.resize(H + 1);
    cur.resize(H + 1);
    for (std::size_t j = 0; j <= H; ++j)
        prev[j] = {static_cast<uint32_t>(j), 0, 0, static_cast<uint32_t>(j)};
    for (std::size_t r = 1; r <= R; ++r) {
        cur[0] = {static_cast<uint32_t>(r), 0, static_cast<uint32_t>(r), 0};
        for (std::size_t j = 1; j <= H; ++j) {
            const uint32_t sub = ref[r - 1] != hyp[j - 1];
            const Cell& diag = prev[j - 1];
            const Cell& up = prev[j];
            const Cell& left = cur[j - 1];
            const uint32_t c_diag = diag.cost + sub, c_up = up.cost + 1, c_left = left.cost + 1;
            if (c_diag <= c_up && c_diag <= c_left)
                cur[j] = {c_diag, diag.s + sub, diag.d, diag.i};
            else if (c_up <= c_left)
                cur[j] = {c_up, up.s, up.d + 1, up.i};
            else
                cur[j] = {c_left, left.s, left.d, left.i + 1};
        }
        std::swap(prev, cur);
    }
    const Cell& end = prev[H];
    return {.substitutions = end.s, .deletions = end.d, .insertions = end.i};
}

namespace {
// edit_distance, naming the (1-based) segment when it is too long to align.
EditCounts segment_distance(std::span<const uint32_t> hyp, std::span<const uint32_t> ref,
                            std::size_t index, ErrorMetric metric) {
    try {
        return edit_distance(hyp, ref);
    } catch (const UsageError& e) {
        throw UsageError(
            fmt::format("segment {}: {} {}", index + 1,
                        metric == ErrorMetric::cer ? "characters:" : "tokens:", e.what()));
    }
}
}  // namespace

ErrorRate corpus_error_rate(std::span<const std::string> hyps, RefStreams refs,
                            ErrorMetric metric) {
    check_ref_streams(hyps.size(), refs);
    ErrorRate out{.metric = metric};
    TokenInterner interner;
    NgramMatcher matcher;
    NgramCounts bag;
    std::vector<std::string_view> ref_lines;
    std::vector<std::vector<std::string_view>> words;
    std::vector<std::vector<uint32_t>> ids;
    std::vector<std::span<const uint32_t>> ref_ids;
    for (std::size_t i = 0; i < hyps.size(); ++i) {
        segment_refs(refs, i, ref_lines);
        const std::size_t S = ref_lines.size() + 1;
        if (ids.size() < S) ids.resize(S), words.resize(S);
        if (metric == ErrorMetric::cer) {
            for (std::size_t s = 0; s < S; ++s)
                char_units(s == 0 ? std::string_view(hyps[i]) : ref_lines[s - 1], ids[s]);
        } else {
            std::size_t num_tokens = 0;
            for (std::size_t s = 0; s < S; ++s) {
                words[s].clear();
                split_whitespace(s == 0 ? std::string_view(hyps[i]) : ref_lines[s - 1], words[s]);
                num_tokens += words[s].size();
            }
            interner.reset(num_tokens);
            for (std::size_t s = 0; s < S; ++s) {
                ids[s].clear();
                for (const auto w : words[s]) ids[s].push_back(interner.id(w));
            }
        }
        const auto hyp_len = static_cast<int64_t>(ids[0].size());
        if (metric == ErrorMetric::per) {
            ref_ids.clear();
            for (std::size_t s = 1; s < S; ++s) ref_ids.emplace_back(ids[s]);
            matcher.count(ids[0], ref_ids, 1, bag);
        }
        EditCounts best;
        int64_t best_len = 0;
        for (std::size_t s = 1; s < S; ++s) {
            const auto ref_len = static_cast<int64_t>(ids[s].size());
            const EditCounts e = metric == ErrorMetric::per
                                     ? bag_counts(hyp_len, ref_len, bag.match[s - 1])
                                     : segment_distance(ids[0], ids[s], i, metric);
            if (s == 1 || e.errors() < best.errors()) best = e, best_len = ref_len;
        }
        out.substitutions += best.substitutions;
        out.deletions += best.deletions;
        out.insertions += best.insertions;
        out.hyp_len += hyp_len;
        out.ref_len += best_len;
        ++out.segments;
    }
    out.errors = out.substitutions + out.deletions + out.insertions;
    out.score = out.ref_len > 0
                    ? 100.0 * static_cast<double>(out.errors) / static_cast<double>(out.ref_len)
                    : 0.0;
    return out;
}

ExactMatch exact_match(std::span<const std::string> hyps, RefStreams refs) {
    check_ref_streams(hyps.size(), refs);
    ExactMatch out;
    std::vector<std::string_view> ref_lines, h, r;
    for (std::size_t i = 0; i < hyps.size(); ++i) {
        segment_refs(refs, i, ref_lines);
        h.clear();
        split_whitespace(hyps[i], h);
        for (const auto line : ref_lines) {
            r.clear();
            split_whitespace(line, r);
            if (r == h) {
                ++out.correct;
                break;
            }
        }
        ++out.segments;
    }
    out.score = out.segments > 0
                    ? 100.0 * static_cast<double>(out.correct) / static_cast<double>(out.segments)
                    : 0.0;
    return out;
}

std::string ErrorRate::name() const {
    switch (metric) {
        case ErrorMetric::wer:
            return "WER";
        case ErrorMetric::cer:
            return "CER";
        case ErrorMetric::per:
            return "PER";
    }
    return "?";
}

std::string ErrorRate::format() const {
    return fmt::format("{} = {:.2f} (S = {} D = {} I = {} errors = {} ref_len = {} segments = {})",
                       name(), score, substitutions, deletions, insertions, errors, ref_len,
                       segments);
}

std::string ExactMatch::format() const {
    return fmt::format("Exact = {:.2f} (correct = {} segments = {})", score, correct, segments);
}

}  // namespace nazar
