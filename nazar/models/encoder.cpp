// Encoder (embedding + padding-aware RNN) and Bridge (initial decoder state). See encoder.h.
#include "nazar/models/encoder.h"

#include "nazar/core/kernels.h"

#include <cstring>

namespace nazar {

Encoder::Encoder(const ModelConfig& cfg, Rng& rng, ParamMode mode)
    : embedding({.num_embeddings = cfg.src_vocab_size, .embedding_dim = cfg.embedding_size}, rng,
                mode),
      rnn({.cell = cfg.encoder.cell,
           .input_size = cfg.embedding_size,
           .hidden_size = cfg.encoder.hidden_size,
           .num_layers = cfg.encoder.num_layers,
           .bias = true,
           .bidirectional = cfg.encoder.bidirectional,
           .dropout = cfg.encoder.dropout,
           .layer_norm = cfg.encoder.layer_norm,
           .residual = cfg.encoder.residual,
           .transition_depth = cfg.encoder.transition_depth},
          rng, mode) {}

void Encoder::forward(std::span<const int32_t> src, std::span<const int> lengths,
                      TensorView enc_out, EncoderCache& cache, Rng& rng, Mode mode,
                      ConstTensorView emb_mask) const {
    const int B = static_cast<int>(lengths.size());
    NZ_CHECK(B > 0 && src.size() % B == 0, "encoder: {} source ids for {} sentences", src.size(),
             B);
    const int S = static_cast<int>(src.size()) / B, E = embedding.cfg.embedding_dim;
    NZ_CHECK_SHAPE(enc_out, {B, S, output_size()});
    cache.emb.resize({B, S, E}, false);
    embedding.forward(src, cache.emb);
    if (!emb_mask.empty() && emb_mask.ndim() > 0) {  // x̃ = Emb[src] ⊙ m
        NZ_CHECK_SHAPE(emb_mask, {B, S, E});
        apply_dropout_mask(cache.emb, emb_mask);
    }
    static const RNNState kZero{};
    rnn.forward(cache.emb, lengths, kZero, enc_out, cache.final, cache.rnn, rng, mode);
}

void Encoder::backward(std::span<const int32_t> src, ConstTensorView d_enc_out,
                       const RNNState& d_final, EncoderCache& cache, ConstTensorView emb_mask) {
    // x = Emb[src]  =>  d_Emb[src[n]] += d_x[n];   the RNN gives d_x (cache.emb is free after
    // forward: the RNN keeps its own time-major copy of x, so its storage holds d_x here).
    cache.emb.zero();
    RNNState no_initial;
    rnn.backward(d_enc_out, d_final, cache.rnn, cache.emb, no_initial);
    if (!emb_mask.empty() && emb_mask.ndim() > 0)
        apply_dropout_mask(cache.emb, emb_mask);  // x̃ = x ⊙ m  =>  d_x = d_x̃ ⊙ m
    embedding.backward(cache.emb, src);
}

void Encoder::collect(const std::string& prefix, ParamList& out) {
    collect_params(embedding.params, embedding.grad, prefix + "embedding.", out);
    collect_params(rnn.params, rnn.grad, prefix + "rnn.", out);
}

Bridge::Bridge(const ModelConfig& cfg, Rng& rng, ParamMode mode)
    : kind(effective_bridge(cfg)),
      layers(cfg.decoder.num_layers),
      hidden(cfg.decoder.hidden_size),
      enc_layers_(cfg.encoder.num_layers),
      enc_dirs_(cfg.encoder.bidirectional ? 2 : 1),
      enc_hidden_(cfg.encoder.hidden_size) {
    if (kind == BridgeKind::zero) return;
    const int in = kind == BridgeKind::backward_first ? enc_hidden_ : enc_dirs_ * enc_hidden_;
    linear = Linear({.in_features = in, .out_features = layers * hidden}, rng, mode);
}

void Bridge::forward(ConstTensorView enc_out, const RNNState& enc_final,
                     std::span<const int> lengths, TensorView h0, BridgeCache& cache) const {
    const int B = enc_out.dim(0), S = enc_out.dim(1), C = enc_out.dim(2), L = layers, H = hidden;
    NZ_CHECK_SHAPE(h0, {L, B, H});
    if (kind == BridgeKind::zero) {
        h0.zero();
        return;
    }
    const int in = linear.cfg.in_features, Hn = enc_hidden_;
    cache.u.resize({B, in}, false);
    const int top =
        (enc_layers_ - 1) * enc_dirs_;  // torch h_n index of the top layer's forward direction
    for (int b = 0; b < B; ++b) {
        float* u = cache.u.data() + static_cast<int64_t>(b) * in;
        if (kind == BridgeKind::backward_first) {
            std::memcpy(u, enc_final.h.select(top + 1).data() + static_cast<int64_t>(b) * Hn,
                        sizeof(float) * Hn);
        } else if (kind == BridgeKind::last) {
            for (int d = 0; d < enc_dirs_; ++d)
                std::memcpy(u + d * Hn,
                            enc_final.h.select(top + d).data() + static_cast<int64_t>(b) * Hn,
                            sizeof(float) * Hn);
        } else {  // mean over the real positions (enc_out is 0 at padding, but S_b divides)
            std::fill(u, u + C, 0.0f);
            const int Sb = lengths[b];
            NZ_CHECK(Sb >= 0 && Sb <= S, "bridge: length {} of sentence {} outside [0, {}]", Sb, b,
                     S);
            for (int i = 0; i < Sb; ++i)
                kernels::axpy(C, 1.0f / static_cast<float>(Sb),
                              enc_out.data() + (static_cast<int64_t>(b) * S + i) * C, u);
        }
    }
    // s0 = tanh(W u + b), then scatter (B, L·H) -> (L, B, H)
    cache.s0.resize({B, L * H}, false);
    linear.forward(cache.u, cache.s0);
    kernels::tanh(cache.s0.data(), cache.s0.data(), cache.s0.numel());
    for (int l = 0; l < L; ++l)
        for (int b = 0; b < B; ++b)
            std::memcpy(h0.data() + (static_cast<int64_t>(l) * B + b) * H,
                        cache.s0.data() + static_cast<int64_t>(b) * L * H + l * H,
                        sizeof(float) * H);
}

void Bridge::backward(ConstTensorView d_h0, ConstTensorView enc_out, const RNNState& enc_final,
                      std::span<const int> lengths, BridgeCache& cache, TensorView d_enc_out,
                      RNNState& d_enc_final) {
    if (kind == BridgeKind::zero) return;
    const int B = enc_out.dim(0), S = enc_out.dim(1), C = enc_out.dim(2), L = layers, H = hidden;
    NZ_CHECK_SHAPE(d_h0, {L, B, H});
    const int in = linear.cfg.in_features, Hn = enc_hidden_;
    // s0 = tanh(a)  =>  d_a = d_s0 ⊙ (1 − s0²)
    cache.d_s0.resize({B, L * H}, false);
    for (int l = 0; l < L; ++l)
        for (int b = 0; b < B; ++b) {
            const float* g = d_h0.data() + (static_cast<int64_t>(l) * B + b) * H;
            const float* s = cache.s0.data() + static_cast<int64_t>(b) * L * H + l * H;
            float* d = cache.d_s0.data() + static_cast<int64_t>(b) * L * H + l * H;
            for (int j = 0; j < H; ++j) d[j] = g[j] * (1.0f - s[j] * s[j]);
        }
    // a = W u + b  =>  d_u = d_a W;  grad.W += d_aᵀ u;  grad.b += Σ d_a
    cache.d_u.resize({B, in});
    linear.backward(cache.d_s0, cache.u, cache.d_u);
    const int top = (enc_layers_ - 1) * enc_dirs_;
    for (int b = 0; b < B; ++b) {
        const float* du = cache.d_u.data() + static_cast<int64_t>(b) * in;
        if (kind == BridgeKind::mean) {
            // u = (1/S_b) Σ_{i<S_b} h_i  =>  d_h_i += d_u / S_b
            const int Sb = lengths[b];
            for (int i = 0; i < Sb; ++i)
                kernels::axpy(C, 1.0f / static_cast<float>(Sb), du,
                              d_enc_out.data() + (static_cast<int64_t>(b) * S + i) * C);
        } else {
            const int first = kind == BridgeKind::backward_first ? 1 : 0;
            const int count = kind == BridgeKind::backward_first ? 1 : enc_dirs_;
            if (d_enc_final.h.ndim() == 0 || d_enc_final.h.empty())
                d_enc_final.h.resize(enc_final.h.shape());
            for (int d = 0; d < count; ++d)
                kernels::axpy(
                    Hn, 1.0f, du + d * Hn,
                    d_enc_final.h.select(top + first + d).data() + static_cast<int64_t>(b) * Hn);
        }
    }
}

void Bridge::collect(const std::string& prefix, ParamList& out) {
    if (kind == BridgeKind::zero) return;
    collect_params(linear.params, linear.grad, prefix, out);
}

}  // namespace nazar
