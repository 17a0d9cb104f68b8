// Word alignments of the training pairs for guided alignment (docs/training.md "Guided
// alignment", models/guided_alignment.h): a Pharaoh file with one line per line of the training
// file (TSV line, or line of train_src/train_tgt), the links of that line's pair as
// space-separated "i-j" (source token i, target token j, 0-based, source first: the format
// `nazar align` writes and `nazar eval --metric aer` reads). "i?j" (a possible link in AER gold
// files) is read as a link too: guided alignment makes no sure/possible distinction. An empty
// line is a pair without links (its target positions get no alignment loss). Duplicate links
// count once.
//
// Units: i and j count the MODEL's tokens (what its tokenizer makes of the line: words for
// `word`, characters for `char`, SentencePiece pieces for `spm`), with no <s> and no </s>:
// i < the pair's source length, j < its target length. `nazar align` of a model with the same
// tokenizer writes links in these units; word alignments of other tools need converting to
// pieces first (a word link (w, v) becomes a link between every piece of w and every piece of v).
//
// The links stay paired with the corpus's pairs through filtering (LoadOptions::kept_lines gives
// each kept pair's line), and batches find them by Batch::index (the pair index), so shuffling,
// bucketing and sharding need nothing more. Bad input is an Error naming file:line: a malformed
// link, an index outside the pair's lengths, or a line count other than the training file's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

class Corpus;

struct AlignedPair {  // one link: source token src, target token tgt (0-based)
    int src = 0;
    int tgt = 0;
};

class CorpusAlignments {
public:
    // Reads `path` and keeps the lines of the corpus's pairs: pair k's links are line
    // kept_lines[k] (1-based) of the file. lines_read: lines of the training file (`training`,
    // for messages); the alignment file must have exactly as many.
    static CorpusAlignments read(const std::string& path, const Corpus& corpus,
                                 std::span<const int64_t> kept_lines, int64_t lines_read,
                                 std::string_view training);

    int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
    // Pair k's links, sorted by target then source position, unique.
    std::span<const AlignedPair> links(int64_t pair) const {
        return {links_.data() + offsets_[static_cast<std::size_t>(pair)],
                static_cast<std::size_t>(offsets_[static_cast<std::size_t>(pair) + 1] -
                                         offsets_[static_cast<std::size_t>(pair)])};
    }
    int64_t total_links() const { return static_cast<int64_t>(links_.size()); }
    // Appends a pair (sorts and deduplicates its links).
    void add(std::vector<AlignedPair> links);

private:
    std::vector<AlignedPair> links_;
    std::vector<int64_t> offsets_{0};
};

// One Pharaoh line's links (unsorted). `where` ("file:line") goes into the Error of a bad token.
std::vector<AlignedPair> parse_alignment_line(std::string_view line, std::string_view where);

}  // namespace nazar
