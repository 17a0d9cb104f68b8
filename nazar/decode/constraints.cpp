// Lexical constraint states (constraints.h).
#include "nazar/decode/constraints.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <algorithm>

namespace nazar {

int TokenConstraints::phrase_tokens(int k) const {
    std::size_t n = 0;
    for (const Spelling& s : include[k]) n = std::max(n, s.size());
    return static_cast<int>(n);
}

int TokenConstraints::include_tokens() const {
    int n = 0;
    for (int k = 0; k < static_cast<int>(include.size()); ++k) n += phrase_tokens(k);
    return n;
}

bool ConstraintState::all_met(const TokenConstraints& c) const {
    return current < 0 && std::all_of(met.begin(), met.end(), [](uint8_t m) { return m != 0; }) &&
           met.size() == c.include.size();
}

ConstraintState initial_state(const TokenConstraints& c) {
    ConstraintState s;
    s.met.assign(c.include.size(), 0);
    return s;
}

namespace {

void set_met(const TokenConstraints& c, ConstraintState& s, int k) {
    s.met_tokens += c.phrase_tokens(k) - s.progress;
    s.met[k] = 1;
    s.current = -1;
    s.spelling = 0;
    s.progress = 0;
}

// y starts the first spelling (of the first unmet phrase) that begins with it; a one-token
// spelling meets its phrase at once. Nothing when none does.
void start(const TokenConstraints& c, ConstraintState& s, int32_t y) {
    for (std::size_t k = 0; k < c.include.size(); ++k) {
        if (s.met[k]) continue;
        for (std::size_t a = 0; a < c.include[k].size(); ++a) {
            if (c.include[k][a].front() != y) continue;
            s.current = static_cast<int>(k);
            s.spelling = static_cast<int>(a);
            s.progress = 1;
            s.met_tokens += 1;
            if (c.include[k][a].size() == 1) set_met(c, s, static_cast<int>(k));
            return;
        }
    }
}

}  // namespace

ConstraintState next_state(const TokenConstraints& c, const ConstraintState& s, int32_t y) {
    ConstraintState n = s;
    if (n.current < 0) {
        start(c, n, y);
        return n;
    }
    const Spelling& w = c.include[n.current][n.spelling];
    if (w[n.progress] == y) {
        ++n.progress;
        ++n.met_tokens;
        if (n.progress == static_cast<int>(w.size())) set_met(c, n, n.current);
        return n;
    }
    // y breaks the match. The tokens since it began, then y, may still begin a phrase: this
    // one ("a a b" after "a a" then "a": still "a a") or another that shares its start ("%2"
    // and "%1" both begin "▁%": "▁%" then "1" is "%1"). The longest such tail wins (the first
    // phrase and spelling on a tie); none: the match is abandoned (its tokens stop counting).
    std::vector<int32_t> tail(w.begin(), w.begin() + n.progress);
    tail.push_back(y);
    n.met_tokens -= n.progress;
    n.current = -1;
    n.spelling = 0;
    n.progress = 0;
    int best_k = -1, best_a = 0, best_keep = 0;
    for (std::size_t k = 0; k < c.include.size(); ++k) {
        if (n.met[k]) continue;
        for (std::size_t a = 0; a < c.include[k].size(); ++a) {
            const Spelling& v = c.include[k][a];
            const int most =
                std::min<int>(static_cast<int>(v.size()), static_cast<int>(tail.size()));
            for (int keep = most; keep > best_keep; --keep)
                if (std::equal(v.begin(), v.begin() + keep, tail.end() - keep)) {
                    best_k = static_cast<int>(k), best_a = static_cast<int>(a), best_keep = keep;
                    break;
                }
        }
    }
    if (best_k < 0) return n;
    n.current = best_k;
    n.spelling = best_a;
    n.progress = best_keep;
    n.met_tokens += best_keep;
    if (best_keep == static_cast<int>(c.include[best_k][best_a].size())) set_met(c, n, best_k);
    return n;
}

void advancing_tokens(const TokenConstraints& c, const ConstraintState& s,
                      std::vector<int32_t>& out) {
    if (s.current >= 0) {
        out.push_back(c.include[s.current][s.spelling][s.progress]);
        return;
    }
    for (std::size_t k = 0; k < c.include.size(); ++k)
        if (!s.met[k])
            for (const Spelling& w : c.include[k]) out.push_back(w.front());
}

void banned_tokens(const TokenConstraints& c, std::span<const int32_t> prefix,
                   std::vector<int32_t>& out) {
    for (const Spelling& phrase : c.exclude) {
        const std::size_t head = phrase.size() - 1;  // tokens that must end the prefix
        if (prefix.size() < head) continue;
        if (std::equal(phrase.begin(), phrase.begin() + static_cast<std::ptrdiff_t>(head),
                       prefix.end() - static_cast<std::ptrdiff_t>(head)))
            out.push_back(phrase.back());
    }
}

int longest_exclude(const TokenConstraints& c) {
    std::size_t n = 0;
    for (const Spelling& p : c.exclude) n = std::max(n, p.size());
    return static_cast<int>(n);
}

void validate(const TokenConstraints& c, int V, std::span<const int32_t> reserved) {
    const auto check = [&](const Spelling& w, const char* what, std::size_t k) {
        if (w.empty()) throw UsageError(fmt::format("{} phrase {} is empty", what, k + 1));
        for (const int32_t y : w)
            if (y < 0 || y >= V || std::find(reserved.begin(), reserved.end(), y) != reserved.end())
                throw UsageError(fmt::format(
                    "{} phrase {}: token id {} is not an output token (vocabulary of {})", what,
                    k + 1, y, V));
    };
    for (std::size_t k = 0; k < c.include.size(); ++k) {
        if (c.include[k].empty())
            throw UsageError(fmt::format("include phrase {} has no spelling", k + 1));
        for (const Spelling& w : c.include[k]) check(w, "include", k);
    }
    for (std::size_t k = 0; k < c.exclude.size(); ++k) check(c.exclude[k], "exclude", k);
}

}  // namespace nazar
