// The encoder (docs/spec.md §2) and the bridge that turns it into the decoder's initial state (§3).
//
//   Encoder:  x_i = Emb_src[src_i]  ->  RNN (GRU/LSTM, L layers, optional bidirectional)
//             enc_out (B, S, C), C = dirs·H_enc; 0 at padding positions; final states as torch h_n.
//             Padding-aware (nn/rnn.h): a sentence of length S_b < S gives exactly the states it
//             gives alone. The embedding has no padding_idx (padding positions never reach a
//             loss, so the pad row gets no gradient from the encoder).
//   Bridge:   s_0[l] = tanh(W_init u + b_init)[l·H, (l+1)·H)  for every decoder layer l, with
//             u = h_0^bwd (backward_first, size H_enc) | masked mean of enc_out (mean, size C) |
//             [h_n^fwd ; h_n^bwd] of the top layer (last, size C);  zero: s_0 = 0, no params.
//             bridge.weight (L_dec·H, in), bridge.bias (L_dec·H).  (config.h has the details.)
// Parameter names (visit, relative): encoder: "embedding.weight", "rnn.weight_ih_l0", ...;
// bridge: "weight", "bias".
//
// Gradients: backward ACCUMULATES (+=) into every d_* argument and into `grad`.
#pragma once

#include "nazar/core/params.h"
#include "nazar/models/config.h"
#include "nazar/nn/embedding.h"
#include "nazar/nn/linear.h"
#include "nazar/nn/rnn.h"

#include <cstdint>
#include <span>

namespace nazar {

struct EncoderCache {
    Tensor emb;  // (B, S, E)   embedded source
    RNNCache rnn;
    RNNState final;  // h (L·dirs, B, H_enc) (+ c for LSTM): torch's h_n
};

class Encoder {
public:
    Encoder() = default;
    // embedding N(0,1), RNN U(-1/sqrt(H), 1/sqrt(H)); inference: core/params.h
    Encoder(const ModelConfig& cfg, Rng& rng, ParamMode mode = ParamMode::training);

    int output_size() const { return rnn.output_size(); }  // C

    // src: (B·S) ids row-major; lengths (B), each in [0, S].
    void forward(std::span<const int32_t> src,  // (B, S)
                 std::span<const int> lengths,  // (B)
                 TensorView enc_out,            // (B, S, C) out
                 EncoderCache& cache,           // out (keeps the ids' embeddings, RNN cache)
                 Rng& rng, Mode mode,
                 ConstTensorView emb_mask = {}) const;  // (B, S, E) dropout mask of the embeddings,
                                                        // or empty (none)
    // d_final: gradient w.r.t. cache.final (empty tensors = zero).
    void backward(std::span<const int32_t> src,    // (B, S) same ids forward saw
                  ConstTensorView d_enc_out,       // (B, S, C)
                  const RNNState& d_final,         // (L·dirs, B, H_enc) each; empty = zero
                  EncoderCache& cache,             // uses cache.emb's storage as scratch for d_emb
                  ConstTensorView emb_mask = {});  // the mask forward applied, or empty

    void collect(const std::string& prefix, ParamList& out);  // prefix "encoder."

    Embedding embedding;
    RNN rnn;
};

struct BridgeCache {
    Tensor u;     // (B, in)       bridge input
    Tensor s0;    // (B, L·H)      tanh(W u + b)
    Tensor d_s0;  // (B, L·H)      backward scratch
    Tensor d_u;   // (B, in)       backward scratch
};

class Bridge {
public:
    Bridge() = default;
    // nn.Linear init; nothing for zero; inference: core/params.h
    Bridge(const ModelConfig& cfg, Rng& rng, ParamMode mode = ParamMode::training);

    BridgeKind kind = BridgeKind::zero;  // resolved (never automatic)
    int layers = 1, hidden = 0;          // L_dec, H

    // h0 (L, B, H) = initial decoder states (row-major layer-major, as DecoderState.h).
    void forward(ConstTensorView enc_out,       // (B, S, C)
                 const RNNState& enc_final,     // (L_enc·dirs, B, H_enc)
                 std::span<const int> lengths,  // (B)
                 TensorView h0,                 // (L, B, H) out
                 BridgeCache& cache) const;
    void backward(ConstTensorView d_h0,     // (L, B, H)
                  ConstTensorView enc_out,  // (B, S, C)
                  const RNNState& enc_final, std::span<const int> lengths, BridgeCache& cache,
                  TensorView d_enc_out,    // (B, S, C) += (mean)
                  RNNState& d_enc_final);  // h (L_enc·dirs, B, H_enc) += (backward_first, last)

    void collect(const std::string& prefix, ParamList& out);  // prefix "bridge."

    Linear linear;  // absent (default) for zero

private:
    int enc_layers_ = 1, enc_dirs_ = 1, enc_hidden_ = 0;
};

}  // namespace nazar
