// The whole data preparation for training in one call: tokenizers (SentencePiece trained here
// when asked), corpus loading with filtering and accounting, vocabularies.
//
//   TrainingData d = prepare_training_data({.tsv = "train.tsv"}, {
//       .src_tokenizer = {.kind = TokenizerKind::spm, .spm = {.vocab_size = 8000}},
//       .shared_vocab = true,
//       .load = {.filter = {.max_length = 100, .max_length_ratio = 3}}});
//
// A SentencePiece model is trained on the training pairs (a first pass over the files) when
// kind == spm and spm_model is empty; with shared_vocab one model is trained on both sides.
// Validation data then goes through load_corpus with d's tokenizers and vocabularies.
#pragma once

#include "nazar/data/corpus.h"

#include <string>

namespace nazar {

struct TokenizerOptions {
    TokenizerKind kind = TokenizerKind::word;
    std::string spm_model{};  // an existing .model file; empty = train one (kind == spm)
    SpmTrainOptions spm{};
};

struct DataOptions {
    TokenizerOptions src_tokenizer{},
        tgt_tokenizer{};  // with shared_vocab, src_tokenizer serves both
    bool shared_vocab = false;
    VocabOptions src_vocab{}, tgt_vocab{};  // with shared_vocab, src_vocab serves both
    LoadOptions load{};
};

struct TrainingData {
    Tokenizer src_tokenizer, tgt_tokenizer;
    Vocab src_vocab, tgt_vocab;
    Corpus corpus;
    LoadSummary summary;
};

TrainingData prepare_training_data(const CorpusFiles& files, const DataOptions& options);

// Sentences of one side (0 = source, 1 = target, 2 = both, alternating) for tokenizer training.
Tokenizer make_tokenizer(const TokenizerOptions& options, const CorpusFiles& files, int side,
                         bool skip_bad_lines);

// A line to ids for translate: UTF-8 checked (error names `where`), tokenized, mapped (no </s>).
std::vector<int32_t> encode_line(std::string_view line, const Tokenizer& tokenizer,
                                 const Vocab& vocab, std::string_view where = "input");

}  // namespace nazar
