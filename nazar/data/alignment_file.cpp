// Reading the training pairs' alignments (alignment_file.h).
#include "nazar/data/alignment_file.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/corpus.h"
#include "nazar/data/reader.h"

#include <algorithm>
#include <charconv>

namespace nazar {

namespace {

bool parse_index(const char* begin, const char* end, int& out) {
    auto [p, e] = std::from_chars(begin, end, out);
    return e == std::errc{} && p == end && begin != end && out >= 0;
}

}  // namespace

std::vector<AlignedPair> parse_alignment_line(std::string_view line, std::string_view where) {
    std::vector<AlignedPair> out;
    std::size_t pos = 0;
    while (pos < line.size()) {
        if (line[pos] == ' ' || line[pos] == '\t') {
            ++pos;
            continue;
        }
        std::size_t end = line.find_first_of(" \t", pos);
        if (end == std::string_view::npos) end = line.size();
        const std::string_view tok = line.substr(pos, end - pos);
        const std::size_t sep = tok.find_first_of("-?");
        AlignedPair a;
        const bool ok = sep != std::string_view::npos &&
                        parse_index(tok.data(), tok.data() + sep, a.src) &&
                        parse_index(tok.data() + sep + 1, tok.data() + tok.size(), a.tgt);
        NZ_CHECK_INPUT(ok,
                       "{}: bad alignment link '{}' (expected i-j or i?j: source and target token "
                       "indices, 0-based non-negative integers)",
                       where, excerpt(tok));
        out.push_back(a);
        pos = end;
    }
    return out;
}

void CorpusAlignments::add(std::vector<AlignedPair> links) {
    std::sort(links.begin(), links.end(), [](const AlignedPair& a, const AlignedPair& b) {
        return a.tgt != b.tgt ? a.tgt < b.tgt : a.src < b.src;
    });
    links.erase(std::unique(links.begin(), links.end(),
                            [](const AlignedPair& a, const AlignedPair& b) {
                                return a.src == b.src && a.tgt == b.tgt;
                            }),
                links.end());
    links_.insert(links_.end(), links.begin(), links.end());
    offsets_.push_back(static_cast<int64_t>(links_.size()));
}

CorpusAlignments CorpusAlignments::read(const std::string& path, const Corpus& corpus,
                                        std::span<const int64_t> kept_lines, int64_t lines_read,
                                        std::string_view training) {
    NZ_CHECK(static_cast<int64_t>(kept_lines.size()) == corpus.size(),
             "alignments: {} kept lines for {} pairs", kept_lines.size(), corpus.size());
    CorpusAlignments out;
    LineReader reader(path);
    std::string_view line;
    int64_t k = 0;  // the next kept pair
    while (reader.next(line)) {
        const int64_t n = reader.line_number();
        NZ_CHECK_INPUT(n <= lines_read,
                       "{}:{}: more alignment lines than the {} lines of the training data {}",
                       path, n, lines_read, training);
        const std::string where = fmt::format("{}:{}", path, n);
        std::vector<AlignedPair> links = parse_alignment_line(line, where);  // every line
        if (k >= corpus.size() || kept_lines[static_cast<std::size_t>(k)] != n) continue;
        const int ns = corpus.src_length(k), nt = corpus.tgt_length(k);
        for (const AlignedPair& a : links)
            NZ_CHECK_INPUT(a.src < ns && a.tgt < nt,
                           "{}: link {}-{} is outside the pair's {} source x {} target tokens "
                           "(0-based indices in the model's tokens, no </s>; line {} of {})",
                           where, a.src, a.tgt, ns, nt, n, training);
        out.add(std::move(links));
        ++k;
    }
    NZ_CHECK_INPUT(reader.line_number() == lines_read,
                   "{}: {} alignment lines, but the training data {} has {} lines (one alignment "
                   "line per training line, empty for none)",
                   path, reader.line_number(), training, lines_read);
    NZ_CHECK(k == corpus.size(), "alignments: {} of {} pairs found", k, corpus.size());
    return out;
}

}  // namespace nazar
