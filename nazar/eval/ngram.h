// Exact n-gram counting of one hypothesis against R references: the core of BLEU, chrF and PER.
//
// Tokens are uint32 ids (code points for chrF, interned words for BLEU). Order-n n-grams get
// segment-local ids order by order: id_1(i) = tok[i], id_n(i) = slot of the pair
// (id_{n-1}(i), tok[i+n-1]) in an open-addressing table. Equal ids mean equal n-grams, so the
// counts are exact (no hashing of whole n-grams), and each order costs one table look-up per
// position. Tables are reused across segments (generation stamps), so steady state allocates
// nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace nazar {

// Counts for one segment; N = max_order, R = number of references. Index (r, n) is r * N + n,
// with n = order - 1. c_h(g), c_r(g): how often n-gram g occurs in the hypothesis / reference r.
struct NgramCounts {
    int max_order = 0;                 // N
    int num_refs = 0;                  // R
    std::vector<int64_t> hyp_total{};  // (N)     Σ_g c_h(g) = max(0, |hyp| - n + 1)
    std::vector<int64_t> ref_total{};  // (R, N)  Σ_g c_r(g)
    std::vector<int64_t> match{};      // (R, N)  Σ_g min(c_h(g), c_r(g))
    std::vector<int64_t> clipped{};    // (N)     Σ_g min(c_h(g), max_r c_r(g))  (BLEU's numerator)
};

// Segment-local ids for string tokens: equal strings get equal ids until the next reset().
// The views must stay valid until then.
class TokenInterner {
public:
    void reset(std::size_t expected_tokens);  // forget all ids; size the table
    uint32_t id(std::string_view token);

private:
    struct Slot {
        std::string_view token;
        uint64_t hash = 0;
        uint32_t stamp = 0;
    };
    std::vector<Slot> slots_;
    uint32_t stamp_ = 0;
    int shift_ = 64;
};

class NgramMatcher {
public:
    // Orders 1..max_order of `hyp` against every sequence in `refs`; overwrites `out`.
    void count(std::span<const uint32_t> hyp, std::span<const std::span<const uint32_t>> refs,
               int max_order, NgramCounts& out);

private:
    struct Slot {
        uint64_t key = 0;
        uint32_t stamp = 0;
        uint32_t hyp = 0;  // c_h of this n-gram
    };
    uint32_t find_or_add(uint64_t key);  // slot index = the n-gram's id

    std::vector<Slot> slots_;
    std::vector<uint32_t> ref_counts_;  // (capacity, R)  c_r of each slot's n-gram
    std::vector<uint32_t> used_;        // slots taken in the current order
    std::vector<uint32_t> ids_;         // hyp and refs back to back, ids of the current order
    std::vector<std::size_t> offsets_;  // (R + 2)  start of each sequence in ids_
    std::vector<uint32_t> toks_;        // the tokens, same layout
    uint32_t stamp_ = 0;
    int shift_ = 64;
    int num_refs_ = 0;
};

}  // namespace nazar
