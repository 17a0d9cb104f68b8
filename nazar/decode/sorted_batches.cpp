// beam_search_sorted (beam_search.h): sentences sorted by length into batches, decoded by
// beam_search, returned in input order.
#include "nazar/core/check.h"
#include "nazar/decode/beam_search.h"

#include <algorithm>
#include <numeric>

namespace nazar {
namespace {

template <class Model>
std::vector<std::vector<Hypothesis>> sorted_impl(Model& model,
                                                 std::span<const std::vector<int32_t>> sentences,
                                                 const BeamOptions& options, int batch_size,
                                                 std::span<const std::vector<int32_t>> copy) {
    NZ_CHECK(copy.empty() || copy.size() == sentences.size(),
             "beam_search_sorted: {} extended-id rows for {} sentences", copy.size(),
             sentences.size());
    const int n = static_cast<int>(sentences.size());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return sentences[a].size() > sentences[b].size(); });
    std::vector<int> sorted_lengths(n);
    for (int i = 0; i < n; ++i) sorted_lengths[i] = static_cast<int>(sentences[order[i]].size());
    const std::vector<int> ends = detail::sorted_batch_ends(sorted_lengths, batch_size);
    std::vector<std::vector<Hypothesis>> out(n);
    std::vector<int32_t> ids, copy_ids;
    std::vector<int> lengths;
    for (std::size_t k = 0; k < ends.size(); ++k) {
        const int begin = k == 0 ? 0 : ends[k - 1], end = ends[k];
        const int S = static_cast<int>(sentences[order[begin]].size());  // the longest of the batch
        ids.assign(static_cast<std::size_t>(end - begin) * S, model.config().special_ids.pad);
        copy_ids.assign(copy.empty() ? 0 : ids.size(), model.config().special_ids.pad);
        lengths.clear();
        for (int i = begin; i < end; ++i) {
            const auto& x = sentences[order[i]];
            std::copy(x.begin(), x.end(), ids.begin() + static_cast<std::ptrdiff_t>(i - begin) * S);
            if (!copy.empty()) {
                const auto& c = copy[order[i]];
                NZ_CHECK(c.size() == x.size(), "beam_search_sorted: {} extended ids for {}",
                         c.size(), x.size());
                std::copy(c.begin(), c.end(),
                          copy_ids.begin() + static_cast<std::ptrdiff_t>(i - begin) * S);
            }
            lengths.push_back(static_cast<int>(x.size()));
        }
        BeamOptions o = options;
        std::vector<TokenConstraints> batch_constraints;  // the batch's sentences' own
        if (!options.constraints.empty()) {
            NZ_CHECK_USAGE(options.constraints.size() == sentences.size(),
                           "beam_search_sorted: constraints for {} sentences, given {}",
                           options.constraints.size(), sentences.size());
            for (int i = begin; i < end; ++i)
                batch_constraints.push_back(options.constraints[order[i]]);
            o.constraints = batch_constraints;
        }
        if (options.cancelled)  // the batch's sentence b is the input's order[begin + b]
            o.cancelled = [&](int b) { return options.cancelled(order[begin + b]); };
        auto res = beam_search(model, std::span<const int32_t>(ids), lengths, S, o, copy_ids);
        for (int i = begin; i < end; ++i) out[order[i]] = std::move(res[i - begin]);
    }
    return out;
}

}  // namespace

std::vector<int> detail::sorted_batch_ends(std::span<const int> lengths, int batch_size) {
    NZ_CHECK_USAGE(batch_size >= 1, "beam_search_sorted: batch_size must be >= 1, got {}",
                   batch_size);
    std::vector<int> ends;
    const int n = static_cast<int>(lengths.size());
    for (int begin = 0; begin < n;) {
        // The batch is padded to its first (longest) sentence; it takes the next sentence while
        // it has room and its positions stay at most twice its real tokens.
        const int64_t longest = lengths[begin];
        int64_t real = longest;
        int end = begin + 1;
        while (end < n && end - begin < batch_size &&
               (end - begin + 1) * longest <= 2 * (real + lengths[end]))
            real += lengths[end++];
        ends.push_back(end);
        begin = end;
    }
    return ends;
}

std::vector<std::vector<Hypothesis>> beam_search_sorted(
    DecodeSession& model, std::span<const std::vector<int32_t>> sentences,
    const BeamOptions& options, int batch_size, std::span<const std::vector<int32_t>> copy_src) {
    return sorted_impl(model, sentences, options, batch_size, copy_src);
}

std::vector<std::vector<Hypothesis>> beam_search_sorted(
    const Seq2Seq& model, std::span<const std::vector<int32_t>> sentences,
    const BeamOptions& options, int batch_size, std::span<const std::vector<int32_t>> copy_src) {
    DecodeSession session(model);
    return sorted_impl(session, sentences, options, batch_size, copy_src);
}

std::vector<std::vector<Hypothesis>> beam_search_sorted(
    Ensemble& model, std::span<const std::vector<int32_t>> sentences, const BeamOptions& options,
    int batch_size, std::span<const std::vector<int32_t>> copy_src) {
    return sorted_impl(model, sentences, options, batch_size, copy_src);
}

}  // namespace nazar
