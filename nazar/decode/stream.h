// Streaming decoding with hard monotonic attention (docs/decoding.md "Streaming";
// docs/spec.md §5.6): the source arrives one token at a time and each output token is emitted
// as soon as the monotonic reader has stopped at a source position already read. Step t of the
// decoder runs on the prefix read so far; when its hard choice finds no position to stop at in
// the prefix, the step is undone and the next source token is read; once the whole source is
// in, the rest decodes as usual (a step that then finds none attends to nothing). The prefix is
// encoded again for each source token (O(S_b²) encoder work: a simulation over whole lines; a
// live stream would carry the unidirectional encoder's state forward instead).
//
// The output equals greedy decoding of the whole source (greedy.h), token for token, because
// nothing a committed step read can change with more input: the model must have monotonic
// attention, a unidirectional encoder (its states of a prefix are those of the whole) and the
// zero bridge (the initial state reads no source). check_streamable() refuses others, naming
// what is missing. Up to float rounding: the encoder's products over a prefix and over the
// whole source may sum in another order (a near-tie could then break the other way).
//
// Latency: `read[i]` is the number of source tokens read when output token i was emitted (S_b
// for tokens decided only after the input ended). Average Proportion (Cho & Esipova 2016):
//   AP = Σ_i read_i / (|x| · |y|)   (1 = waits for the whole source, lower = earlier output)
#pragma once

#include "nazar/decode/greedy.h"
#include "nazar/decode/hypothesis.h"
#include "nazar/models/decode_session.h"

#include <cstdint>
#include <span>
#include <vector>

namespace nazar {

// UsageError unless the model can stream (monotonic attention, unidirectional encoder, zero
// bridge, no copy attention).
void check_streamable(const ModelConfig& cfg);

// One sentence (src: its S_b ids): the tokens (ending with </s> when finished), log_prob (=
// score), the attention (n, S_b: one-hot rows or zeros) and `read` (n). The length cap is the
// whole source's (greedy.h), which a live stream would apply when the input ends.
Hypothesis stream_greedy(DecodeSession& model, std::span<const int32_t> src,
                         const GreedyOptions& options = {});

// Σ read / (S_b · n): the Average Proportion of one sentence (0 when either is empty).
double average_proportion(std::span<const int> read, int S_b);

// Streaming beam search (BeamOptions::stream): the search runs on the whole source, and this
// records what a decoder fed the source one token at a time would have read. A step can run
// once every row's monotonic reader has stopped at a position read (a row that stops at j needs
// j + 1 tokens: the last nonzero weight of its attention row, which is MoChA's chunk's end too;
// one attending nowhere needs the whole source), and a token can be emitted once every
// hypothesis that can still be returned begins with it (beam_search.cpp's common_prefix). On a
// model that can stream, a step over the prefix read equals the step over the whole source, so this
// is the streaming decoder's latency, and its output is the search's. With beam size 1 the reads
// are stream_greedy's.
struct StreamReads {
    int need = 0;           // source tokens the steps so far needed (their running maximum)
    std::vector<int> read;  // the read of each token every hypothesis now begins with

    // One row of a step: its attention over the S_b source positions.
    void step_row(const float* attention, int S_b);
    // After the step: the hypotheses still in the search share their first `common` tokens.
    void commit(int common);
    // The reads of the n tokens of the hypothesis returned: the committed ones, then `need`
    // (the tokens decided when the search ended).
    std::vector<int> reads_of(int n) const;
};

}  // namespace nazar
