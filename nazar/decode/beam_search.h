// Batched beam search (docs/spec.md §8) on the DecodeSession step API, the semantics of the PyTorch
// reference python/nazar_torch.py beam_search (which decodes one sentence at a time).
//
// Per sentence, with K = beam_size and F = hypotheses finished so far:
//   every live hypothesis is expanded by every token except <pad> and <s> (never emitted: their
//   log-probabilities count as −inf; a hypothesis's log p stays the model's own, unrenormalised
//   Σ log p of its tokens, so it equals TrainPass::score of the output); the best K − F candidates
//   by total log p(y_≤t | x) are kept (ties: lower live rank, then lower token id). A kept
//   candidate ending in </s> is finished; the others stay live, in rank order. The sentence is done
//   when K hypotheses are finished, none is live, at its maximum length
//     max_len_b = min(max_length, max(1, floor(max_length_ratio · S_b) + max_length_extra))
//   (live hypotheses then join the list as unfinished), or — early_stop, exact — when n_best
//   finished hypotheses each score at least as well as any descendant of a live hypothesis can:
//     bound = max_live log p / lp(ℓ*),  ℓ* the length in (len, max_len_b] maximising lp
//   (log p only falls as a hypothesis grows, lp ≥ 1 for α ≥ 0, and cp ≤ 0), so the n-best list
//   is the one the exhaustive search returns.
// Results are ranked by hypothesis.h's score (GNMT length normalisation and coverage penalty).
// beam_size 1 is greedy decoding exactly (greedy.h), token for token.
//
// Batching: the source batch is encoded once (attention keys included); select_rows expands
// it to one row per live hypothesis (a row map: the beams of a sentence read its encoder
// states and keys in place, no copies) and is redone only when the row → sentence map changes
// (a hypothesis finished or a sentence left); finished sentences leave the batch, so N (rows
// per step) shrinks. A sentence's result does not depend on the rest of the batch (up to BLAS
// summation order). beam_search_sorted sorts sentences by length into batches (less padding)
// and returns results in input order.
#pragma once

#include "nazar/decode/constraints.h"
#include "nazar/decode/ensemble.h"
#include "nazar/decode/hypothesis.h"
#include "nazar/models/seq2seq.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace nazar {

struct BeamOptions {
    int beam_size = 5;              // K >= 1
    int n_best = 1;                 // hypotheses returned per sentence, in [1, K]
    float length_penalty = 0.6f;    // α >= 0 (0 = rank by raw log p)
    float coverage_penalty = 0.0f;  // β >= 0
    float max_length_ratio = 2.0f;  // relative to the source length S_b
    int max_length_extra = 5;       // added to ratio · S_b
    int max_length = 512;           // absolute cap
    int min_length = 0;             // </s> is not allowed as token 1..min_length−1 (benchmarks)
    bool early_stop = true;         // stop a sentence once its n-best list cannot change
    // Read each step's logits and their log-sum-exp instead of written log-probs (a Seq2Seq
    // without copy attention; others always read log-probs). The same results bit for bit;
    // false: the unfused reference path (tests).
    bool fused_output = true;
    // Fused path, Seq2Seq whose output rows do not depend on the rows computed with them
    // (DecodeSession::step_logits_group_min_rows): the step's output layer runs per group of about
    // this many rows (whole sentences), each pool thread making its groups' logits and
    // selecting their candidates while the rows are in cache. −1: about 2 MB of logits per
    // group; 0: one product of all rows first. The same results bit for bit either way.
    int output_group_rows = -1;
    // Polled after every decoder step for each sentence still decoding (its index in this
    // call's input): true drops the sentence at once — it leaves the batch, what its search
    // held is freed, and it returns no hypotheses. An exception thrown here (an interrupt)
    // leaves the search. Empty: never polled.
    std::function<bool(int)> cancelled = nullptr;
    // Lexical constraints per sentence of the call (constraints.h), or empty: none. A sentence
    // with constraints is searched with dynamic beam allocation; the others exactly as without
    // (the same bits). Its maximum length grows to at least its include tokens + 1.
    std::span<const TokenConstraints> constraints{};
    // A vocabulary shortlist (shortlist.h; one model, no copy attention): each batch's output
    // layer computes only its candidates. Null: the whole vocabulary.
    const class Shortlist* shortlist = nullptr;
    // Streaming (stream.h; a model that can stream, n_best 1): the best hypothesis's `read`, the
    // source tokens a decoder fed one at a time would have read when it could emit each token
    // (once every hypothesis that can still be returned begins with it). The search itself is
    // unchanged.
    bool stream = false;
};

// Throws UsageError naming the offending value.
void validate(const BeamOptions& options);

// max_len_b for a source of S_b tokens (the greedy formula).
int max_output_length(int S_b, float max_length_ratio, int max_length_extra, int max_length);

// src (B·S) row-major, lengths (B) in [0, S]. Returns B lists of min(n_best, found) hypotheses,
// best first (a search always finds at least one). A copy model (models/copy.h) also needs
// copy_src (B·S): the source's extended ids (data/extended_vocab.h); its hypotheses' tokens are
// extended ids (>= V: a copied source word) and carry p_gen per token.
// A DecodeSession (models/decode_session.h) decodes with its own buffers over a model that it
// only reads; the Seq2Seq overloads make a session for the call.
std::vector<std::vector<Hypothesis>> beam_search(DecodeSession& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& options = {},
                                                 std::span<const int32_t> copy_src = {});
std::vector<std::vector<Hypothesis>> beam_search(const Seq2Seq& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& options = {},
                                                 std::span<const int32_t> copy_src = {});
// The same over an ensemble's averaged log-probabilities (ensemble.h): log_prob is the sum of
// the averaged log-probabilities, the attention the ensemble's (one member's or the mean).
std::vector<std::vector<Hypothesis>> beam_search(Ensemble& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& options = {},
                                                 std::span<const int32_t> copy_src = {});

// Sentences of any lengths (no <s>/</s>): sorted by length (longest first, stable), decoded in
// batches of at most batch_size (detail::sorted_batch_ends), returned in input order.
// copy_src: each sentence's extended ids (copy models; as beam_search).
namespace detail {
// The batches of sentences of these lengths, sorted longest first: the end of each (exclusive),
// in order. A batch is padded to its first sentence's length; it holds at most batch_size
// sentences and takes the next one only while its padded positions (sentences × longest) stay
// at most twice its real tokens, so that one long sentence among short ones does not make every
// row of the batch as long: the encoder states and attention keys a decoding thread holds are
// then bounded by twice the tokens it decodes (sentences of one length only by batch_size).
std::vector<int> sorted_batch_ends(std::span<const int> lengths, int batch_size);
}  // namespace detail

std::vector<std::vector<Hypothesis>> beam_search_sorted(
    DecodeSession& model, std::span<const std::vector<int32_t>> sentences,
    const BeamOptions& options = {}, int batch_size = 32,
    std::span<const std::vector<int32_t>> copy_src = {});
std::vector<std::vector<Hypothesis>> beam_search_sorted(
    const Seq2Seq& model, std::span<const std::vector<int32_t>> sentences,
    const BeamOptions& options = {}, int batch_size = 32,
    std::span<const std::vector<int32_t>> copy_src = {});
std::vector<std::vector<Hypothesis>> beam_search_sorted(
    Ensemble& model, std::span<const std::vector<int32_t>> sentences,
    const BeamOptions& options = {}, int batch_size = 32,
    std::span<const std::vector<int32_t>> copy_src = {});

}  // namespace nazar
