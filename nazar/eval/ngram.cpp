// Exact n-gram counting with order-by-order local ids (see ngram.h).
#include "nazar/eval/ngram.h"

#include "nazar/core/check.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace nazar {

namespace {

constexpr uint64_t kFibonacci = 0x9E3779B97F4A7C15ull;

// Table of 2^k slots, k chosen so that the load stays at or below one half.
int table_shift(std::size_t entries) {
    const std::size_t cap = std::max<std::size_t>(16, std::bit_ceil(2 * entries + 1));
    return 64 - std::countr_zero(cap);
}

}  // namespace

void TokenInterner::reset(std::size_t expected_tokens) {
    const int shift = table_shift(expected_tokens);
    const std::size_t cap = std::size_t{1} << (64 - shift);
    if (cap > slots_.size() || ++stamp_ == 0) {  // fresh table (also when the stamp wraps)
        slots_.assign(std::max(cap, slots_.size()), Slot{});
        stamp_ = 1;
    }
    shift_ = shift;
}

uint32_t TokenInterner::id(std::string_view token) {
    const uint64_t h = std::hash<std::string_view>{}(token);
    const std::size_t mask = (std::size_t{1} << (64 - shift_)) - 1;
    std::size_t i = static_cast<std::size_t>((h * kFibonacci) >> shift_);
    std::size_t probes = 0;
    for (;; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.stamp != stamp_) {
            s = {token, h, stamp_};
            return static_cast<uint32_t>(i);
        }
        if (s.hash == h && s.token == token) return static_cast<uint32_t>(i);
        NZ_CHECK(++probes <= mask,
                 "TokenInterner is full ({} slots): reset() was given too few tokens", mask + 1);
    }
}

uint32_t NgramMatcher::find_or_add(uint64_t key) {
    const std::size_t mask = (std::size_t{1} << (64 - shift_)) - 1;
    std::size_t i = static_cast<std::size_t>((key * kFibonacci) >> shift_);
    for (;; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.stamp != stamp_) {
            s = {key, stamp_, 0};
            std::fill_n(ref_counts_.begin() + static_cast<std::ptrdiff_t>(i) * num_refs_, num_refs_,
                        0u);
            used_.push_back(static_cast<uint32_t>(i));
            return static_cast<uint32_t>(i);
        }
        if (s.key == key) return static_cast<uint32_t>(i);
    }
}

void NgramMatcher::count(std::span<const uint32_t> hyp,
                         std::span<const std::span<const uint32_t>> refs, int max_order,
                         NgramCounts& out) {
    NZ_CHECK_USAGE(max_order >= 1, "n-gram order must be at least 1, got {}", max_order);
    const int N = max_order, R = static_cast<int>(refs.size());
    out.max_order = N;
    out.num_refs = R;
    out.hyp_total.assign(N, 0);
    out.clipped.assign(N, 0);
    out.ref_total.assign(static_cast<std::size_t>(R) * N, 0);
    out.match.assign(static_cast<std::size_t>(R) * N, 0);

    // Sequence 0 is the hypothesis, 1..R the references.
    toks_.clear();
    offsets_.assign(1, 0);
    toks_.insert(toks_.end(), hyp.begin(), hyp.end());
    offsets_.push_back(toks_.size());
    for (const auto& r : refs) {
        toks_.insert(toks_.end(), r.begin(), r.end());
        offsets_.push_back(toks_.size());
    }
    ids_ = toks_;

    num_refs_ = R;
    shift_ = table_shift(toks_.size());
    const std::size_t cap = std::size_t{1} << (64 - shift_);
    if (cap > slots_.size()) {
        slots_.assign(cap, Slot{});
        stamp_ = 0;
    }
    if (ref_counts_.size() < slots_.size() * static_cast<std::size_t>(std::max(R, 1)))
        ref_counts_.resize(slots_.size() * static_cast<std::size_t>(std::max(R, 1)));

    for (int n = 1; n <= N; ++n) {
        if (++stamp_ == 0) {  // wrapped: clear the stamps once every 2^32 orders
            std::fill(slots_.begin(), slots_.end(), Slot{});
            stamp_ = 1;
        }
        used_.clear();
        bool any = false;
        for (int seq = 0; seq <= R; ++seq) {
            const std::size_t begin = offsets_[seq], len = offsets_[seq + 1] - begin;
            if (len < static_cast<std::size_t>(n)) continue;
            const std::size_t positions = len - n + 1;
            any = true;
            uint32_t* ids = ids_.data() + begin;
            const uint32_t* toks = toks_.data() + begin;
            for (std::size_t i = 0; i < positions; ++i) {
                // id_n(i) from (id_{n-1}(i), tok[i+n-1]); order 1 keys are the tokens themselves.
                const uint64_t key = n == 1 ? uint64_t{toks[i]}
                                            : (uint64_t{ids[i]} << 32 | uint64_t{toks[i + n - 1]});
                const uint32_t slot = find_or_add(key);
                ids[i] = slot;
                if (seq == 0)
                    ++slots_[slot].hyp;
                else
                    ++ref_counts_[static_cast<std::size_t>(slot) * R + (seq - 1)];
            }
            if (seq == 0)
                out.hyp_total[n - 1] = static_cast<int64_t>(positions);
            else
                out.ref_total[static_cast<std::size_t>(seq - 1) * N + (n - 1)] =
                    static_cast<int64_t>(positions);
        }
        if (!any) break;
        for (const uint32_t slot : used_) {
            const int64_t h = slots_[slot].hyp;
            if (h == 0) continue;
            int64_t best = 0;
            for (int r = 0; r < R; ++r) {
                const int64_t c = ref_counts_[static_cast<std::size_t>(slot) * R + r];
                out.match[static_cast<std::size_t>(r) * N + (n - 1)] += std::min(h, c);
                best = std::max(best, c);
            }
            out.clipped[n - 1] += std::min(h, best);
        }
    }
}

}  // namespace nazar
