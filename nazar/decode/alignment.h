// Alignments from attention weights (docs/spec.md §8), unknown-word replacement and forced
// alignment.
//
//   hard    link (i, j) for every target token j: i = argmax_i a[j, i] (lowest i on ties), printed
//           as Pharaoh/Moses "i-j" pairs, source index first, 0-based ("0-0 2-1 1-2"). Indices
//           count the model's tokens (words for the word tokenizer, pieces for spm/char).
//   soft    the weight matrix a[j, i] (one row per target token) as JSON: [[0.9,0.1],[0.2,0.8]].
//   Target tokens are the emitted tokens without the final </s>.
//   replace-unk (Luong, Sutskever et al. 2015): each <unk> in the output becomes the source token
//           it attends to most, or that token's translation in a dictionary (src<TAB>tgt lines;
//           the first entry of a source word wins).
//   forced  teacher forcing with the step API: the attention of each target token (and of </s>)
//           and log p(y | x) under the model, which equals TrainPass::score.
#pragma once

#include "nazar/core/tensor.h"
#include "nazar/decode/unk_dictionary.h"
#include "nazar/eval/aer.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

class Seq2Seq;        // models/seq2seq.h
class DecodeSession;  // models/decode_session.h
class Vocab;          // data/vocab.h

enum class AlignmentFormat { none, hard, soft };
AlignmentFormat parse_alignment_format(
    std::string_view name);  // "none" | "hard" | "soft"; UsageError

// Links for target rows j < n_tgt of attention (n, S_b), n_tgt <= n: each row's first maximum;
// none when S_b == 0 and none for a row of zeros (monotonic attention that ran off the end).
std::vector<AlignmentLink> hard_alignment(ConstTensorView attention, int n_tgt);
std::string format_hard_alignment(std::span<const AlignmentLink> links);  // "i-j i-j ..."
std::string format_soft_alignment(ConstTensorView attention, int n_tgt);  // rows j < n_tgt as JSON

// The output pieces of `tokens` (ids, </s> and after dropped): vocabulary pieces, with <unk>
// replaced as above when `replace_unk` (attention (n, S_b) rows are the tokens' weights,
// src_pieces has S_b entries; dictionary may be null).
std::vector<std::string> output_pieces(std::span<const int32_t> tokens, ConstTensorView attention,
                                       const Vocab& tgt_vocab, int32_t eos, int32_t unk,
                                       bool replace_unk, std::span<const std::string> src_pieces,
                                       const UnkDictionary* dictionary);

struct ForcedAlignment {
    Tensor attention;          // (T_b + 1, S_b) one row per target token, then the row of </s>
    double log_prob = 0;       // log p(target </s> | source), as TrainPass::score
    std::vector<float> p_gen;  // (T_b + 1) copy attention: p_gen of each row; else empty
};

// src (B·S) row-major, lengths (B); targets[b] = target ids without <s>/</s>. A copy model
// (models/copy.h) also needs copy_src (B·S), the source's extended ids, and takes targets in
// extended ids (data/extended_vocab.h).
// A session's buffers are reused across calls (a batch loop); the Seq2Seq overload makes one.
std::vector<ForcedAlignment> forced_alignment(DecodeSession& model, std::span<const int32_t> src,
                                              std::span<const int> lengths, int S,
                                              std::span<const std::vector<int32_t>> targets,
                                              std::span<const int32_t> copy_src = {});
std::vector<ForcedAlignment> forced_alignment(const Seq2Seq& model, std::span<const int32_t> src,
                                              std::span<const int> lengths, int S,
                                              std::span<const std::vector<int32_t>> targets,
                                              std::span<const int32_t> copy_src = {});

}  // namespace nazar
