// Training data held in memory, for Trainer (trainer.h) instead of the files the configuration
// names (train, dev): a program's own pairs, or the demo's generated task (apps/demo/).
//
// The tokenizers and vocabularies are the caller's: they are what the model files say, and the
// pairs are in them. Either as ids (fill the fields: no <s>/</s>, Corpus::add), or as text with
// TrainingSource::from_text, which encodes each side with its tokenizer and vocabulary (pieces
// outside the vocabulary become <unk>; nothing is filtered or dropped). Building vocabularies
// from the pairs, filtering by length, copy attention and guided alignment stay with files.
// The dev pairs also need their text: validation shows examples and scores exact match, BLEU
// and chrF against the text, not the ids.
#pragma once

#include "nazar/data/corpus.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"

#include <span>
#include <string>
#include <utility>
#include <vector>

namespace nazar {

using TextPair = std::pair<std::string, std::string>;  // (source, target)

struct TrainingSource {
    Tokenizer src_tokenizer = Tokenizer::word(), tgt_tokenizer = Tokenizer::word();
    Vocab src_vocab{}, tgt_vocab{};
    Corpus train{};                                 // ids in the vocabularies
    Corpus dev{};                                   // the same; empty = no dev set
    std::vector<std::string> dev_src{}, dev_tgt{};  // the dev pairs as text, one per dev pair

    // Text pairs encoded with the tokenizers and vocabularies given (invalid UTF-8 is an Error
    // naming the pair).
    static TrainingSource from_text(Tokenizer src_tokenizer, Tokenizer tgt_tokenizer,
                                    Vocab src_vocab, Vocab tgt_vocab,
                                    std::span<const TextPair> train, std::span<const TextPair> dev);
};

}  // namespace nazar
