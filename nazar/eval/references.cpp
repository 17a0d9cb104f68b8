// Reference streams: length checks and per-segment reference lists (see references.h).
#include "nazar/eval/references.h"

#include "nazar/core/check.h"

namespace nazar {

void check_ref_streams(std::size_t num_hyps, RefStreams refs) {
    NZ_CHECK_USAGE(!refs.empty(), "no reference stream given ({} hypotheses)", num_hyps);
    for (std::size_t k = 0; k < refs.size(); ++k)
        NZ_CHECK_INPUT(refs[k].size() == num_hyps,
                       "line-count mismatch: {} hypotheses but reference stream {} has {} lines",
                       num_hyps, k + 1, refs[k].size());
}

void segment_refs(RefStreams refs, std::size_t i, std::vector<std::string_view>& out) {
    out.clear();
    for (const auto& stream : refs)
        if (!stream[i].empty()) out.emplace_back(stream[i]);
    NZ_CHECK_INPUT(!out.empty(), "segment {} (line {}): all {} references are empty", i, i + 1,
                   refs.size());
}

std::string nrefs_field(RefStreams refs) {
    if (refs.empty()) return "0";
    std::size_t common = 0;
    for (std::size_t i = 0; i < refs[0].size(); ++i) {
        std::size_t n = 0;
        for (const auto& stream : refs) n += !stream[i].empty();
        if (i == 0) common = n;
        if (n != common) return "var";
    }
    return std::to_string(refs[0].empty() ? refs.size() : common);
}

}  // namespace nazar
