// Batched greedy decoding (docs/spec.md §8) on the DecodeSession step API.
//
//   y_0 = <s>;  y_t = argmax_{v ∉ {<pad>, <s>}} log p(v | y_<t, x)   for every sentence of the
//   batch at once.
// <pad> and <s> are never emitted (their log-probabilities count as −inf in the argmax); the
// score is the model's own (unrenormalised) Σ log p of the emitted tokens, so it equals
// TrainPass::score of the output.
// A sentence stops after emitting </s> or at its maximum length
//   max_len_b = min(max_length, max(1, floor(max_length_ratio · S_b) + max_length_extra));
// the loop stops when every sentence has stopped. Ties in the argmax pick the lowest id.
// Each result has the emitted tokens (ending with </s> when finished), the sum of their
// log-probabilities, and one attention row (over the sentence's S_b real positions) per token.
// Deterministic, and a sentence's result does not depend on the rest of the batch (up to BLAS
// summation order).
#pragma once

#include "nazar/decode/ensemble.h"
#include "nazar/models/seq2seq.h"

#include <cstdint>
#include <span>
#include <vector>

namespace nazar {

struct GreedyOptions {
    float max_length_ratio = 2.0f;  // relative to the source length S_b
    int max_length_extra = 5;       // added to ratio · S_b
    int max_length = 512;           // absolute cap
};

struct GreedyResult {
    std::vector<int32_t> tokens;  // (n) emitted ids, incl. the final </s> when finished
    bool finished = false;        // true when </s> was emitted
    double score = 0;             // Σ log p of the emitted tokens
    Tensor attention;             // (n, S_b) attention weights of each emitted token
    std::vector<float> p_gen;     // (n) copy attention: p_gen of each emitted token; else empty
};

// src (B·S) row-major, lengths (B) in [0, S]. Returns B results in order.
// A copy model (models/copy.h) also needs copy_src (B·S): the source's extended ids
// (data/extended_vocab.h); its tokens are extended ids (>= V: a copied source word).
// A DecodeSession (models/decode_session.h) decodes with its own buffers over a model that it
// only reads; the Seq2Seq overload makes a session for the call.
std::vector<GreedyResult> greedy_decode(DecodeSession& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options = {},
                                        std::span<const int32_t> copy_src = {});
std::vector<GreedyResult> greedy_decode(const Seq2Seq& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options = {},
                                        std::span<const int32_t> copy_src = {});
// The same over an ensemble's averaged log-probabilities (ensemble.h); the score is the sum of
// the averaged log-probabilities of the emitted tokens.
std::vector<GreedyResult> greedy_decode(Ensemble& model, std::span<const int32_t> src,
                                        std::span<const int> lengths, int S,
                                        const GreedyOptions& options = {},
                                        std::span<const int32_t> copy_src = {});

namespace detail {
// Greedy's choice from a row of V log-probabilities: the first (lowest) id of the maximum over
// the ids other than <pad> and <s>, NaN never winning; exactly the scan "best = the first
// allowed id; best = y whenever lp[y] > lp[best]". An input error when no id is allowed.
int best_token(const float* lp, int V, int32_t pad, int32_t bos);
}  // namespace detail

}  // namespace nazar
