// A parallel corpus in memory, and loading one with filtering and accounting.
//
// Storage: per side one contiguous int32 id array plus int64 offsets (pair i's tokens are
// ids[offsets[i], offsets[i+1])). No per-sentence heap objects; ~4 bytes a token.
// Stored sentences hold only their pieces' ids: no <s>, no </s> (the batcher adds them).
//
// Loading reads pairs (reader.h), tokenizes both sides, then applies the filters in this
// order; a pair is dropped for the first rule it fails, and every drop is counted:
//   1. empty side        (drop_empty)
//   2. too long          either side has more than max_length tokens
//   3. length ratio      max(n_src, n_tgt) / min(n_src, n_tgt) > max_length_ratio
//   4. duplicate         same source and target tokens as an earlier kept pair (drop_duplicates;
//                        compared exactly, not by hash; a pair holding <unk> is never called a
//                        duplicate, since different words may hide behind <unk>)
// Invariant (checked): read == kept + bad lines + dropped by 1-4.
// With vocabulary building, counts come from kept pairs only.
#pragma once

#include "nazar/data/reader.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nazar {

struct FilterOptions {
    int max_length = 0;            // tokens per side; 0 = no limit
    float max_length_ratio = 0.f;  // 0 = no limit; otherwise >= 1
    bool drop_empty = true;
    bool drop_duplicates = false;
};

struct LoadOptions {
    FilterOptions filter{};
    bool skip_bad_lines = false;  // count and skip line-level errors instead of throwing
    bool print_summary = true;    // the summary line to stderr at the end of loading
    // Given: the target line of every kept pair, as read (validation references: scores against
    // the text, not against ids in which out-of-vocabulary words became <unk>).
    std::vector<std::string>* tgt_text = nullptr;
    // Given: the source line of every kept pair, as read (validation groups the pairs of one
    // source, whose targets are then all accepted: a lexicon's several pronunciations).
    std::vector<std::string>* src_text = nullptr;
    // Copy attention: also store every kept pair's extended ids (data/extended_vocab.h), from
    // the pieces' strings. Needs fixed vocabularies (load_corpus).
    bool copy_ids = false;
    // Given: cleared, then the 1-based line of every kept pair, in corpus order (guided
    // alignment pairs each kept pair with its line of the alignment file; alignment_file.h).
    std::vector<int64_t>* kept_lines = nullptr;
};

struct LoadSummary {
    std::string name;  // "train.tsv"
    int64_t read = 0;  // lines (pairs) read, bad ones included
    int64_t kept = 0;
    BadLines bad;  // skipped lines (skip_bad_lines)
    int64_t empty = 0, too_long = 0, ratio = 0, duplicate = 0;
    int max_length = 0;  // the limits in force, for the text
    float max_length_ratio = 0.f;
    int64_t src_tokens = 0, tgt_tokens = 0;  // in kept pairs
    int64_t src_unk = 0, tgt_unk = 0;        // pieces that became <unk>

    int64_t dropped() const { return bad.total() + empty + too_long + ratio + duplicate; }
    // "train.tsv: 89,280 pairs read, 88,901 kept; dropped: 312 too long (> 100 tokens), ..."
    std::string str() const;
};

class Corpus {
public:
    struct Side {
        std::vector<int32_t> ids;
        std::vector<int64_t> offsets{0};  // size() + 1 entries
    };

    int64_t size() const { return static_cast<int64_t>(src_.offsets.size()) - 1; }
    std::span<const int32_t> src(int64_t i) const { return tokens(src_, i); }
    std::span<const int32_t> tgt(int64_t i) const { return tokens(tgt_, i); }
    int src_length(int64_t i) const {
        return static_cast<int>(src_.offsets[i + 1] - src_.offsets[i]);
    }
    int tgt_length(int64_t i) const {
        return static_cast<int>(tgt_.offsets[i + 1] - tgt_.offsets[i]);
    }
    int64_t src_tokens() const { return static_cast<int64_t>(src_.ids.size()); }
    int64_t tgt_tokens() const { return static_cast<int64_t>(tgt_.ids.size()); }

    void add(std::span<const int32_t> src, std::span<const int32_t> tgt);
    // Copy attention: the extended ids of pair i (same lengths as src(i), tgt(i)), when stored
    // (add_copy after every add; has_copy()).
    void add_copy(std::span<const int32_t> src, std::span<const int32_t> tgt,
                  std::span<const std::string> words);  // the sentence's V, V+1, ... strings
    std::span<const std::string> copy_words(int64_t i) const {
        return {copy_words_.data() + word_offsets_[i],
                static_cast<std::size_t>(word_offsets_[i + 1] - word_offsets_[i])};
    }
    bool has_copy() const { return copy_; }
    std::span<const int32_t> src_copy(int64_t i) const { return copy_span(src_, src_copy_, i); }
    std::span<const int32_t> tgt_copy(int64_t i) const { return copy_span(tgt_, tgt_copy_, i); }
    void pop_back();
    void shrink_to_fit();
    Side& src_side() { return src_; }
    Side& tgt_side() { return tgt_; }
    std::size_t memory_bytes() const;  // capacity of the four arrays

private:
    static std::span<const int32_t> tokens(const Side& s, int64_t i) {
        return {s.ids.data() + s.offsets[i],
                static_cast<std::size_t>(s.offsets[i + 1] - s.offsets[i])};
    }
    static std::span<const int32_t> copy_span(const Side& s, const std::vector<int32_t>& ids,
                                              int64_t i) {
        return {ids.data() + s.offsets[i],
                static_cast<std::size_t>(s.offsets[i + 1] - s.offsets[i])};
    }
    Side src_, tgt_;
    bool copy_ = false;
    std::vector<int32_t> src_copy_, tgt_copy_;  // extended ids, offsets as src_ / tgt_
    std::vector<std::string> copy_words_;       // pair i's: [word_offsets_[i], [i + 1])
    std::vector<int64_t> word_offsets_{0};
};

// Fixed vocabularies (dev/test sets, a trained model's data): unknown pieces become <unk>.
Corpus load_corpus(const CorpusFiles& files, const Tokenizer& src_tokenizer,
                   const Tokenizer& tgt_tokenizer, const Vocab& src_vocab, const Vocab& tgt_vocab,
                   const LoadOptions& options, LoadSummary* summary = nullptr);

// Training: builds the vocabularies from the kept pairs (char/word tokenizers; an spm side
// takes its model's vocabulary). `shared`: one vocabulary from both sides, returned in both.
struct VocabBuild {
    VocabOptions src{}, tgt{};
    bool shared = false;  // uses `src` options
};
Corpus load_corpus_building_vocabs(const CorpusFiles& files, const Tokenizer& src_tokenizer,
                                   const Tokenizer& tgt_tokenizer, const VocabBuild& build,
                                   const LoadOptions& options, Vocab& src_vocab, Vocab& tgt_vocab,
                                   LoadSummary* summary = nullptr);

std::string thousands(int64_t n);  // 89280 -> "89,280"

}  // namespace nazar
