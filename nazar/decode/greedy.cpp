// Batched greedy decoding on the step API of a DecodeSession or an Ensemble (greedy.h).
#include "nazar/decode/greedy.h"

#include "nazar/core/check.h"
#include "nazar/core/simd.h"
#include "nazar/decode/beam_search.h"  // max_output_length

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nazar/decode/step_types.h"

namespace nazar {

namespace detail {

// argmax over the tokens other than <pad> and <s> (their log p taken as −inf); the first maximum,
// i.e. the lowest id, on ties. This is exactly the scan "best = first allowed id; best = y
// whenever lp[y] > lp[best]", done in two vector passes: the maximum m over the allowed ids
// (NaN never wins a > comparison, so it is skipped; four maxima side by side, as the order of a
// maximum changes nothing), then the first allowed id holding m, 8 ids per compare. The one case
// where the scan keeps a NaN, a NaN at the first allowed id, is checked first. Blocks of 8 ids
// holding <pad> or <s> go scalar in both passes.
int best_token(const float* lp, int V, int32_t pad, int32_t bos) {
    int first = 0;
    while (first < V && (first == pad || first == bos)) ++first;
    NZ_CHECK_INPUT(first < V, "greedy: no token other than <pad> and <s> in a vocabulary of {}", V);
    if (std::isnan(lp[first])) return first;
    const auto allowed = [&](int y) { return y != pad && y != bos; };
    float m = -std::numeric_limits<float>::infinity();
    int y = 0;
#ifdef NZ_SIMD_AVX2
    const auto special = [&](int b) {
        return (pad >= b && pad < b + 8) || (bos >= b && bos < b + 8);
    };
    // a NaN in lp yields the accumulator (the 2nd operand)
    __m256 acc[4];
    for (auto& a : acc) a = _mm256_set1_ps(m);
    for (; y + 32 <= V; y += 32)
        for (int j = 0; j < 4; ++j) {
            const int b = y + 8 * j;
            if (!special(b)) {
                acc[j] = _mm256_max_ps(_mm256_loadu_ps(lp + b), acc[j]);
                continue;
            }
            for (int k = b; k < b + 8; ++k)
                if (allowed(k) && lp[k] > m) m = lp[k];
        }
    for (const __m256 a : acc) m = simd::max_lanes8(a, m);
#endif
    for (; y < V; ++y)
        if (allowed(y) && lp[y] > m) m = lp[y];
    y = 0;
#ifdef NZ_SIMD_AVX2
    const __m256 mv = _mm256_set1_ps(m);
    for (; y + 8 <= V; y += 8) {
        if (special(y)) {
            for (int k = y; k < y + 8; ++k)
                if (allowed(k) && lp[k] == m) return k;
            continue;
        }
        const int eq = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(lp + y), mv, _CMP_EQ_OQ));
        if (eq != 0) return y + __builtin_ctz(static_cast<unsigned>(eq));
    }
#endif
    for (; y < V; ++y)
        if (allowed(y) && lp[y] == m) return y;
    return first;  // every allowed entry is NaN or −inf: the scan keeps the first allowed id
}

}  // namespace detail

namespace {

// The step API's source and state types of a model (DecodeSession or Ensemble).
using detail::StepTypes;  // decode/step_types.h

template <class Model>
std::vector<GreedyResult> greedy_impl(Model& model, std::span<const int32_t> src,
                                      std::span<const int> lengths, int S,
                                      const GreedyOptions& options,
                                      std::span<const int32_t> copy_src) {
    NZ_CHECK_USAGE(options.max_length >= 1, "greedy: max_length must be >= 1, got {}",
                   options.max_length);
    NZ_CHECK_USAGE(options.max_length_ratio >= 0, "greedy: max_length_ratio must be >= 0, got {}",
                   options.max_length_ratio);
    const int B = static_cast<int>(lengths.size());
    const auto& sp = model.config().special_ids;
    std::vector<GreedyResult> results(B);
    std::vector<int> max_len(B);
    int longest = 0;
    for (int b = 0; b < B; ++b) {
        max_len[b] = max_output_length(lengths[b], options.max_length_ratio,
                                       options.max_length_extra, options.max_length);
        longest = std::max(longest, max_len[b]);
    }
    typename StepTypes<Model>::Source enc;
    model.encode(src, lengths, S, enc);
    const int V = detail::prepare_copy(model, enc, copy_src);
    typename StepTypes<Model>::State state;
    model.init_state(enc, state);
    std::vector<int32_t> prev(B, sp.bos);
    std::vector<bool> done(B, false);
    Tensor log_probs({B, V}), attn({B, S});
    // attention rows per sentence, collected as flat vectors (copied into tensors at the end)
    std::vector<std::vector<float>> rows(B);
    for (int b = 0; b < B; ++b) {  // sized up front: nothing allocates inside the time loop
        results[b].tokens.reserve(max_len[b]);
        rows[b].reserve(static_cast<std::size_t>(max_len[b]) * std::max(lengths[b], 0));
    }
    for (int t = 0; t < longest; ++t) {
        model.step(prev, enc, state, log_probs, attn);
        int active = 0;
        for (int b = 0; b < B; ++b) {
            if (done[b]) continue;
            const float* lp = log_probs.data() + static_cast<int64_t>(b) * V;
            const int y = detail::best_token(lp, V, sp.pad, sp.bos);
            GreedyResult& r = results[b];
            r.tokens.push_back(y);
            r.score += lp[y];
            const float* a = attn.data() + static_cast<int64_t>(b) * S;
            rows[b].insert(rows[b].end(), a, a + lengths[b]);
            if (const auto pg = detail::step_p_gen(model); !pg.empty()) r.p_gen.push_back(pg[b]);
            prev[b] = y;
            if (y == sp.eos) r.finished = true;
            if (r.finished || static_cast<int>(r.tokens.size()) >= max_len[b]) done[b] = true;
            if (!done[b]) ++active;
        }
        if (active == 0) break;
    }
    for (int b = 0; b < B; ++b) {
        const int n = static_cast<int>(results[b].tokens.size());
        results[b].attention = Tensor::from({n, lengths[b]}, rows[b]);
    }
    return results;
}

}  // namespace

std::vector<GreedyResult> greedy_decode(DecodeSession& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options,
                                        std::span<const int32_t> copy_src) {
    return greedy_impl(model, src, lengths, S, options, copy_src);
}

std::vector<GreedyResult> greedy_decode(const Seq2Seq& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options,
                                        std::span<const int32_t> copy_src) {
    DecodeSession session(model);
    return greedy_impl(session, src, lengths, S, options, copy_src);
}

std::vector<GreedyResult> greedy_decode(Ensemble& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options,
                                        std::span<const int32_t> copy_src) {
    return greedy_impl(model, src, lengths, S, options, copy_src);
}

}  // namespace nazar
