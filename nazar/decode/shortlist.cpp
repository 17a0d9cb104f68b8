// Vocabulary shortlists (shortlist.h).
#include "nazar/decode/shortlist.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace nazar {
namespace {

constexpr std::string_view kHeader = "#nazar-shortlist 1";
constexpr std::string_view kFrequent = "<frequent>";

// A piece the table can hold (no tab or line break) and not a special.
bool writable(const Vocab& v, int32_t id) {
    if (id < Vocab::kNumSpecials) return false;
    const std::string_view p = v.piece(id);
    return p.find_first_of("\t\n\r") == std::string_view::npos;
}

// The distinct ids of one sentence's pieces.
std::vector<int32_t> distinct_ids(std::string_view text, const Tokenizer& tok, const Vocab& vocab,
                                  Pieces& pieces) {
    tok.encode(text, pieces);
    std::vector<int32_t> ids;
    vocab.encode(pieces, ids);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

}  // namespace

std::size_t Shortlist::entries() const {
    return static_cast<std::size_t>(
        std::count_if(best_.begin(), best_.end(), [](const auto& b) { return !b.empty(); }));
}

Shortlist Shortlist::load(const std::string& path, const Vocab& src_vocab, const Vocab& tgt_vocab,
                          const ShortlistOptions& o) {
    NZ_CHECK_USAGE(o.frequent >= 0 && o.best >= 0,
                   "shortlist: frequent ({}) and best ({}) must be >= 0", o.frequent, o.best);
    Shortlist s;
    s.tgt_size_ = tgt_vocab.size();
    s.best_.resize(static_cast<std::size_t>(src_vocab.size()));
    std::vector<std::pair<double, int32_t>> frequent;
    std::vector<std::vector<std::pair<double, int32_t>>> scored(s.best_.size());
    LineReader in(path, 1 << 20);
    std::string_view line;
    const auto fail = [&](const std::string& why) {
        throw Error(fmt::format("{}:{}: {}", path, in.line_number(), why));
    };
    if (!in.next(line) || line != kHeader)
        fail(fmt::format("not a nazar shortlist (the first line must be '{}')", kHeader));
    while (in.next(line)) {
        if (line.empty()) continue;
        const std::size_t t1 = line.find('\t');
        const std::size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
        if (t2 == std::string_view::npos || line.find('\t', t2 + 1) != std::string_view::npos)
            fail(fmt::format("expected 'source<TAB>target<TAB>score', got '{}'", excerpt(line)));
        const std::string_view src = line.substr(0, t1), tgt = line.substr(t1 + 1, t2 - t1 - 1);
        double score = 0;
        const std::string_view num = line.substr(t2 + 1);
        const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), score);
        if (ec != std::errc() || p != num.data() + num.size())
            fail(fmt::format("score '{}' is not a number", excerpt(num)));
        if (!tgt_vocab.contains(tgt)) continue;  // another vocabulary's piece
        const int32_t t = tgt_vocab.id(tgt);
        if (src == kFrequent)
            frequent.push_back({score, t});
        else if (src_vocab.contains(src))
            scored[static_cast<std::size_t>(src_vocab.id(src))].push_back({score, t});
    }
    // By score, whatever the file's order (ties: the file's order).
    const auto keep = [](std::vector<std::pair<double, int32_t>>& list, int n,
                         std::vector<int32_t>& out) {
        std::stable_sort(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        for (std::size_t i = 0; i < list.size() && static_cast<int>(out.size()) < n; ++i)
            out.push_back(list[i].second);
    };
    keep(frequent, o.frequent, s.frequent_);
    for (std::size_t x = 0; x < scored.size(); ++x) keep(scored[x], o.best, s.best_[x]);
    return s;
}

std::vector<int32_t> Shortlist::candidates(std::span<const int32_t> src,
                                           std::span<const int> lengths, int S,
                                           std::span<const TokenConstraints> constraints,
                                           std::span<const int32_t> always) const {
    std::vector<char> in(static_cast<std::size_t>(tgt_size_), 0);
    const auto add = [&](int32_t t) {
        if (t >= 0 && t < tgt_size_) in[static_cast<std::size_t>(t)] = 1;
    };
    for (const int32_t t : always) add(t);
    for (const int32_t t : frequent_) add(t);
    for (std::size_t b = 0; b < lengths.size(); ++b)
        for (int i = 0; i < lengths[b]; ++i) {
            const int32_t s = src[b * static_cast<std::size_t>(S) + static_cast<std::size_t>(i)];
            if (s >= 0 && static_cast<std::size_t>(s) < best_.size())
                for (const int32_t t : best_[static_cast<std::size_t>(s)]) add(t);
        }
    for (const TokenConstraints& c : constraints) {
        for (const auto& phrase : c.include)
            for (const Spelling& w : phrase)
                for (const int32_t t : w) add(t);
    }
    std::vector<int32_t> ids;
    for (int32_t t = 0; t < tgt_size_; ++t)
        if (in[static_cast<std::size_t>(t)]) ids.push_back(t);
    return ids;
}

ShortlistBuildStats build_shortlist(const std::vector<std::pair<std::string, std::string>>& pairs,
                                    const Tokenizer& src_tok, const Vocab& src_vocab,
                                    const Tokenizer& tgt_tok, const Vocab& tgt_vocab, int keep,
                                    const std::string& path) {
    NZ_CHECK_USAGE(keep >= 1, "shortlist: keep must be >= 1, got {}", keep);
    const std::size_t Vs = static_cast<std::size_t>(src_vocab.size());
    const std::size_t Vt = static_cast<std::size_t>(tgt_vocab.size());
    std::vector<int64_t> cs(Vs, 0), ct(Vt, 0);
    std::vector<std::unordered_map<int32_t, int32_t>> co(Vs);
    Pieces pieces;
    for (const auto& [s_text, t_text] : pairs) {
        const std::vector<int32_t> s = distinct_ids(s_text, src_tok, src_vocab, pieces);
        const std::vector<int32_t> t = distinct_ids(t_text, tgt_tok, tgt_vocab, pieces);
        for (const int32_t y : t) ++ct[static_cast<std::size_t>(y)];
        for (const int32_t x : s) {
            ++cs[static_cast<std::size_t>(x)];
            auto& row = co[static_cast<std::size_t>(x)];
            for (const int32_t y : t) ++row[y];
        }
    }
    ShortlistBuildStats stats;
    stats.pairs = static_cast<int64_t>(pairs.size());
    std::string out = std::string(kHeader) + "\n";
    std::vector<int32_t> order(Vt);
    for (std::size_t y = 0; y < Vt; ++y) order[y] = static_cast<int32_t>(y);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return ct[std::size_t(a)] > ct[std::size_t(b)]; });
    for (int k = 0, written = 0;
         written < keep && k < static_cast<int>(Vt) && ct[std::size_t(order[k])] > 0; ++k) {
        if (!writable(tgt_vocab, order[k])) continue;
        out += fmt::format("{}\t{}\t{}\n", kFrequent, tgt_vocab.piece(order[k]),
                           ct[std::size_t(order[k])]);
        ++written;
    }
    std::vector<std::pair<double, int32_t>> ranked;
    for (std::size_t x = 0; x < Vs; ++x) {
        if (cs[x] == 0 || !writable(src_vocab, static_cast<int32_t>(x))) continue;
        ++stats.source_tokens;
        ranked.clear();
        for (const auto& [y, c] : co[x])
            if (c >= 2 && writable(tgt_vocab, y))
                ranked.push_back({2.0 * c / double(cs[x] + ct[std::size_t(y)]), y});
        std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first > b.first : a.second < b.second;
        });
        if (ranked.size() > static_cast<std::size_t>(keep)) ranked.resize(std::size_t(keep));
        const std::string_view sp = src_vocab.piece(static_cast<int32_t>(x));
        for (const auto& [score, y] : ranked)
            out += fmt::format("{}\t{}\t{:.6g}\n", sp, tgt_vocab.piece(y), score);
        stats.entries += ranked.empty() ? 0 : 1;
    }
    atomic_write_file(path, out);
    return stats;
}

}  // namespace nazar
