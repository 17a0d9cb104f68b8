// How every metric receives its references, and the checks they share.
//
// References come as streams, the way sacreBLEU takes them and the way they sit on disk: one
// stream per reference file, refs[k][i] = the k-th reference of segment i. Every stream has one
// line per hypothesis. An empty reference line means "this segment has fewer references"
// (sacreBLEU's convention); a segment whose references are all empty is an error.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

using RefStreams = std::span<const std::vector<std::string>>;  // (K streams) x (one line per hyp)

// Throws nazar::Error naming both counts when a stream's length differs from hyps.size(), or
// when there is no stream at all.
void check_ref_streams(std::size_t num_hyps, RefStreams refs);

// The non-empty references of segment i, in stream order (appended to `out` after clearing).
// Throws when all of them are empty.
void segment_refs(RefStreams refs, std::size_t i, std::vector<std::string_view>& out);

// "1", "2", ... or "var" when segments have different numbers of non-empty references (the
// nrefs field of sacreBLEU's signature).
std::string nrefs_field(RefStreams refs);

}  // namespace nazar
