// What `nazar score` and `nazar align` share: a model file with its tokenizers and
// vocabularies, the --tsv / --src+--tgt choice, and reading encoded sentence pairs in batches.
#pragma once

#include "nazar/data/reader.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nazar::cli {

using IdRows = std::vector<std::vector<int32_t>>;

struct TextModel {
    LoadedModel loaded;
    Tokenizer src_tok, tgt_tok;
    Vocab src_vocab, tgt_vocab;
};

// `purpose` completes "vocabularies and tokenizers are needed to ... text" in the error.
TextModel load_text_model(const std::string& path, const char* purpose);

// --tsv F, or --src F with --tgt F (UsageError otherwise).
CorpusFiles pair_files(const std::string& src, const std::string& tgt, const std::string& tsv);

// Encodes every pair of `reader` with the model's tokenizers and vocabularies and calls
// flush(src, tgt, copy) with up to `batch` pairs at a time, in input order. copy: the pairs'
// extended ids (data/extended_vocab.h) for a copy-attention model, else empty rows.
struct CopyRows {
    IdRows src, tgt;
};
void for_each_pair_batch(
    PairReader& reader, const TextModel& tm, int batch,
    const std::function<void(const IdRows& src, const IdRows& tgt, const CopyRows& copy)>& flush);

}  // namespace nazar::cli
