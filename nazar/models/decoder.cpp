// The Bahdanau / Luong attention decoder: construction, the step forward and the split outputs
// forward (decoder.h). The backward: step_backward.cpp (per step), sequence_backward.cpp.
#include "nazar/models/decoder.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/models/row_helpers.h"

#include <algorithm>

namespace nazar {

using decoder_rows::copy_cols_in;

namespace {
// A step's N rows are the source's first N (training: the active rows); shared sources whole.
void check_rows(const EncodedSource& src, int N) {
    NZ_CHECK(src.shared ? src.N == N : N <= src.N,
             "decoder step: {} decoder rows but the encoded source has {}", N, src.N);
}
}  // namespace

Decoder::Decoder(const ModelConfig& cfg, Rng& rng, ParamMode mode)
    : kind(cfg.decoder.kind),
      cell(cfg.decoder.cell),
      E(cfg.embedding_size),
      H(cfg.decoder.hidden_size),
      C(encoder_output_size(cfg)),
      L(cfg.decoder.num_layers),
      embedding({.num_embeddings = cfg.tgt_vocab_size, .embedding_dim = cfg.embedding_size}, rng,
                mode),
      dropout({.p = cfg.decoder.dropout}),
      deep(cfg.decoder.deep_output) {
    feed_ = kind == DecoderKind::bahdanau ? C : (cfg.decoder.input_feeding ? H : 0);
    before_ = effective_timing(cfg) == AttentionTiming::before;
    d_out_ = generator_input_size(cfg);
    for (int l = 0; l < L; ++l) {
        const int in = l == 0 ? E + feed_ : H;
        if (cell == CellType::gru)
            gru.emplace_back(GRUCell::Config{.input_size = in,
                                             .hidden_size = H,
                                             .bias = true,
                                             .layer_norm = cfg.decoder.layer_norm},
                             rng, mode);
        else
            lstm.emplace_back(LSTMCell::Config{.input_size = in,
                                               .hidden_size = H,
                                               .bias = true,
                                               .layer_norm = cfg.decoder.layer_norm},
                              rng, mode);
    }
    if (kind == DecoderKind::luong)
        combine = Linear({.in_features = H + C, .out_features = H, .bias = false}, rng, mode);
    if (deep) {
        deep_state = Linear({.in_features = H, .out_features = d_out_, .bias = false}, rng, mode);
        deep_prev = Linear({.in_features = E, .out_features = d_out_, .bias = false}, rng, mode);
        deep_context = Linear({.in_features = C, .out_features = d_out_, .bias = false}, rng, mode);
    }
}

void Decoder::prepare_steps(EncodedSource& src, int step_rows) const {
    src.wih_t.resize(L);
    src.whh_t.resize(L);
    for (int l = 0; l < L; ++l) {
        const RNNCellParams& p = cell == CellType::gru ? gru[l].params : lstm[l].params;
        if (step_rows > kSmallGemmRows) {
            refresh_weight_t(src.wih_t[l], p.weight_ih);
            refresh_weight_t(src.whh_t[l], p.weight_hh);
        } else {
            src.wih_t[l].reset();
            src.whh_t[l].reset();
        }
    }
}

void Decoder::step_forward(int t, ConstTensorView emb, ConstTensorView h_prev,
                           ConstTensorView c_prev, ConstTensorView feed_prev,
                           const EncodedSource& src, const Attention& attention, TensorView h_new,
                           TensorView c_new, TensorView out, DecoderStepCache& cache, Rng& rng,
                           Mode mode, TensorView gi0) const {
    const int N = emb.dim(0);
    NZ_CHECK_SHAPE(emb, {N, E});
    NZ_CHECK_SHAPE(h_prev, {L, N, H});
    NZ_CHECK_SHAPE(h_new, {L, N, H});
    NZ_CHECK_SHAPE(out, {N, d_out_});
    check_rows(src, N);
    if (kind == DecoderKind::luong && feed_ > 0) NZ_CHECK_SHAPE(feed_prev, {N, H});
    cache.context.resize({N, C}, false);
    // Bahdanau timing: c_t from the query s_{t-1} (top layer), before the RNN step.
    if (before_)
        attention.forward(h_prev.select(L - 1), src.states().keys, src.enc_out_rows(N),
                          src.length_rows(N), t, cache.context, cache.attention, src.shared_rows);
    assemble_x0(emb, feed_prev, cache);
    cells_step_forward(h_prev, c_prev, src, h_new, c_new, cache, rng, mode, gi0);
    output_step_forward(t, emb, h_new, src, attention, out, cache);
}

void Decoder::cells_forward(ConstTensorView emb, ConstTensorView h_prev, ConstTensorView c_prev,
                            const EncodedSource& src, TensorView h_new, TensorView c_new,
                            DecoderStepCache& cache, Rng& rng, Mode mode, TensorView gi0) const {
    NZ_CHECK(can_split_outputs(),
             "decoder cells_forward: split outputs need Luong, no input feeding, timing after");
    const int N = emb.dim(0);
    NZ_CHECK_SHAPE(emb, {N, E});
    NZ_CHECK_SHAPE(h_prev, {L, N, H});
    NZ_CHECK_SHAPE(h_new, {L, N, H});
    check_rows(src, N);
    cache.context.resize({N, C}, false);
    assemble_x0(emb, TensorView(), cache);
    cells_step_forward(h_prev, c_prev, src, h_new, c_new, cache, rng, mode, gi0);
}

void Decoder::assemble_x0(ConstTensorView emb,        // (N, E)  e_t
                          ConstTensorView feed_prev,  // (N, H)  s̃_{t-1} (input feeding), else empty
                          DecoderStepCache& cache) const {  // x0 out; reads context (bahdanau)
    // x0 = [e_t ; c_t] (bahdanau) | [e_t ; s̃_{t-1}] (input feeding) | e_t
    const int N = emb.dim(0), I0 = E + feed_;
    cache.x0.resize({N, I0}, false);
    const ConstTensorView second = kind == DecoderKind::bahdanau             ? cache.context
                                   : kind == DecoderKind::luong && feed_ > 0 ? feed_prev
                                                                             : ConstTensorView();
    const auto rows = [&](int64_t r0, int64_t r1) {
        float* x = cache.x0.data() + r0 * I0;
        copy_cols_in(emb.slice(r0, r1), x, I0);
        if (second.data() != nullptr) copy_cols_in(second.slice(r0, r1), x + E, I0);
    };
    // Beam search's 320 rows are 1 MB: on the pool, so that the step's products are not kept
    // waiting by a serial copy (and the pool's worker does not fall asleep meanwhile).
    for_rows(N, I0, rows);
}

// The stacked cells of one step on cache.x0: s^l_t for l = 0 … L−1.
void Decoder::cells_step_forward(ConstTensorView h_prev,  // (L, N, H)
                                 ConstTensorView c_prev,  // (L, N, H)  LSTM
                                 const EncodedSource& src,
                                 TensorView h_new,         // (L, N, H)  out
                                 TensorView c_new,         // (L, N, H)  out (LSTM)
                                 DecoderStepCache& cache,  // x0 in; layer inputs, cells out
                                 Rng& rng, Mode mode,
                                 TensorView gi0) const {  // (N, G·H) or empty, as step_forward's
    const int N = h_prev.dim(1), I0 = E + feed_;
    // stacked cells: layer l > 0 reads dropout(s^{l-1}_t)
    if (static_cast<int>(cache.layer_in.size()) < L) {
        cache.layer_in.resize(L);
        cache.dropout.resize(L);
        cache.gru.resize(L);
        cache.lstm.resize(L);
    }
    // W_ihᵀ and W_hhᵀ of layer l for this batch (prepare_steps), or null
    const auto wt = [&](const std::vector<WeightT>& v, int l, int k0 = 0) {
        return static_cast<int>(v.size()) == L ? weight_t_rows(v[l], k0) : WeightTRows{};
    };
    for (int l = 0; l < L; ++l) {
        TensorView x = cache.x0;
        if (l > 0) {
            cache.layer_in[l].resize({N, H}, false);
            dropout.forward(h_new.select(l - 1), cache.layer_in[l], cache.dropout[l], rng, mode);
            x = cache.layer_in[l];
        }
        if (l == 0 && gi0.data() != nullptr && gi0.numel() > 0) {
            // gi = e W_eᵀ + b_ih (precomputed) + f W_fᵀ   (W_f = W_ih[:, E:], the feed columns)
            const int GH = gate_size();
            NZ_CHECK_SHAPE(gi0, {N, GH});
            const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
            if (feed_ > 0)  // rows E.. of W_ihᵀ are W_fᵀ
                gemm_xwt(N, GH, feed_, 1.0f, cache.x0.data() + E, I0, p.weight_ih.data() + E, I0,
                         wt(src.wih_t, 0, E), 1.0f, gi0.data(), GH);
            if (cell == CellType::gru) {
                gru[0].normalize_input(gi0, cache.gru[0]);  // LN: after the whole product
                gru[0].forward_projected(gi0, h_prev.select(0), h_new.select(0), cache.gru[0], {},
                                         wt(src.whh_t, 0));
            } else {
                lstm[0].normalize_input(gi0, cache.lstm[0]);
                lstm[0].forward_projected(gi0, h_prev.select(0), c_prev.select(0), h_new.select(0),
                                          c_new.select(0), cache.lstm[0], {}, wt(src.whh_t, 0));
            }
        } else if (cell == CellType::gru) {
            gru[l].forward(x, h_prev.select(l), h_new.select(l), cache.gru[l], {}, wt(src.wih_t, l),
                           wt(src.whh_t, l));
        } else {
            lstm[l].forward(x, h_prev.select(l), c_prev.select(l), h_new.select(l), c_new.select(l),
                            cache.lstm[l], {}, wt(src.wih_t, l), wt(src.whh_t, l));
        }
    }
}

// The step's output o_t from s_t (and, with Luong timing, the attention that reads s_t).
void Decoder::output_step_forward(
    int t,
    ConstTensorView emb,    // (N, E)     e_t (deep output)
    ConstTensorView h_new,  // (L, N, H)  s_t of every layer
    const EncodedSource& src, const Attention& attention,
    TensorView out,                   // (N, d_out) out: o_t
    DecoderStepCache& cache) const {  // context (timing before) in; out
    const int N = emb.dim(0);
    const ConstTensorView s = h_new.select(L - 1);
    // Luong timing: c_t from the query s_t, after the RNN step.
    if (!before_)
        attention.forward(s, src.states().keys, src.enc_out_rows(N), src.length_rows(N), t,
                          cache.context, cache.attention, src.shared_rows);
    if (kind == DecoderKind::luong) {
        // s̃_t = tanh(W_c [s_t ; c_t])
        cache.combine_in.resize({N, H + C}, false);
        copy_cols_in(s, cache.combine_in.data(), H + C);
        copy_cols_in(cache.context, cache.combine_in.data() + H, H + C);
        combine.forward(cache.combine_in, out);
        kernels::tanh(out.data(), out.data(), out.numel());
    } else if (deep) {
        // o_t = tanh(L_s s_t + L_y e_t + L_c c_t)
        Tensor& term = cache.deep_term;
        term.resize({N, d_out_}, false);
        deep_state.forward(s, out);
        deep_prev.forward(emb, term);
        kernels::axpy(out.numel(), 1.0f, term.data(), out.data());
        deep_context.forward(cache.context, term);
        kernels::axpy(out.numel(), 1.0f, term.data(), out.data());
        kernels::tanh(out.data(), out.data(), out.numel());
    } else {
        out.copy_from(s);  // o_t = s_t
    }
}

void Decoder::project_embeddings(ConstTensorView emb, TensorView gi0) const {
    const int T = emb.dim(0), N = emb.dim(1), GH = gate_size(), I0 = E + feed_;
    NZ_CHECK_SHAPE(emb, {T, N, E});
    NZ_CHECK_SHAPE(gi0, {T, N, GH});
    const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
    // gi0 = e W_eᵀ + b_ih over all T·N rows (W_e = W_ih[:, :E], leading dimension I0)
    // (the bias rows written over the pool, not on this thread: 2240 rows are 14 MB).
    // Layer norm: gi0 = e W_eᵀ; the step normalises the whole product, then adds b_ih.
    gemm_xwt_bias(T * N, GH, E, emb.data(), E, p.weight_ih.data(), I0, {},
                  p.bias_ih.numel() > 0 && !p.layer_norm() ? p.bias_ih.data() : nullptr, gi0.data(),
                  GH);
}

void Decoder::outputs_forward(ConstTensorView h_all, const EncodedSource& src,
                              const Attention& attention, std::span<DecoderStepCache> steps,
                              DecoderOutputsCache& cache, TensorView out,
                              std::span<const int> active) const {
    NZ_CHECK(can_split_outputs(),
             "decoder outputs_forward: split outputs need Luong, no input feeding, timing after");
    const int T = h_all.dim(0) - 1, N = h_all.dim(2);
    NZ_CHECK_SHAPE(h_all, {T + 1, L, N, H});
    NZ_CHECK_SHAPE(out, {T, N, H});
    NZ_CHECK(static_cast<int>(steps.size()) >= T,
             "decoder outputs_forward: {} step caches for T = {}", steps.size(), T);
    Tensor& comb = cache.comb;
    comb.resize({T, N, H + C}, false);
    if (attention.can_batch_steps()) {
        // global dot/general: every step's scores and contexts as per-sentence GEMMs
        const ConstTensorView q = decoder_rows::top_states(h_all, cache.q);
        cache.ctx.resize({T, N, C}, false);
        cache.att.resize(T);
        for (int t = 0; t < T; ++t) cache.att[t] = &steps[t].attention;
        attention.forward_steps(q, src.keys, src.enc_out, src.lengths, cache.ctx, cache.att);
        for (int t = 0; t < T; ++t) {
            steps[t].context.resize({N, C}, false);
            steps[t].context.copy_from(cache.ctx.select(t));
            copy_cols_in(q.select(t), comb.select(t).data(), H + C);
            copy_cols_in(cache.ctx.select(t), comb.select(t).data() + H, H + C);
        }
    }
    for (int t = 0; t < T && !attention.can_batch_steps(); ++t) {
        // c_t = attn(query = s_t);  comb[t] = [s_t ; c_t]
        const ConstTensorView s = h_all.select(t + 1).select(L - 1);
        DecoderStepCache& sc = steps[t];
        sc.context.resize({N, C}, false);
        attention.forward(s, src.keys, src.enc_out, src.lengths, t, sc.context, sc.attention);
        copy_cols_in(s, comb.select(t).data(), H + C);
        copy_cols_in(sc.context, comb.select(t).data() + H, H + C);
    }
    // s̃_t = tanh(W_c [s_t ; c_t]) for all T·N rows, or the active ones packed: one GEMM
    const bool all =
        active.empty() || std::all_of(active.begin(), active.end(), [&](int n) { return n == N; });
    if (all) {
        cache.rows.clear();
        combine.forward(comb.reshape({int64_t{T} * N, H + C}), out.reshape({int64_t{T} * N, H}));
        kernels::tanh(out.data(), out.data(), out.numel());
        return;
    }
    NZ_CHECK(static_cast<int>(active.size()) == T, "decoder outputs_forward: {} rows for T = {}",
             active.size(), T);
    cache.rows.assign(active.begin(), active.end());
    decoder_rows::pack_steps(comb, active, cache.packed);
    cache.packed_out.resize({cache.packed.dim(0), H}, false);
    combine.forward(cache.packed, cache.packed_out);
    kernels::tanh(cache.packed_out.data(), cache.packed_out.data(), cache.packed_out.numel());
    decoder_rows::unpack_steps(cache.packed_out, active, out);
}

void Decoder::collect(const std::string& prefix, ParamList& out) {
    collect_params(embedding.params, embedding.grad, prefix + "embedding.", out);
    for (int l = 0; l < L; ++l) {
        RNNCellParams& p = cell == CellType::gru ? gru[l].params : lstm[l].params;
        RNNCellParams& g = cell == CellType::gru ? gru[l].grad : lstm[l].grad;
        const std::string k = "_l" + std::to_string(l);
        const std::string base = prefix + "rnn.";
        out.push_back({base + "weight_ih" + k, &p.weight_ih, grad_or_null(g.weight_ih)});
        out.push_back({base + "weight_hh" + k, &p.weight_hh, grad_or_null(g.weight_hh)});
        out.push_back({base + "bias_ih" + k, &p.bias_ih, grad_or_null(g.bias_ih)});
        out.push_back({base + "bias_hh" + k, &p.bias_hh, grad_or_null(g.bias_hh)});
        if (p.layer_norm()) {
            out.push_back(
                {base + "ln_weight_ih" + k, &p.ln_weight_ih, grad_or_null(g.ln_weight_ih)});
            out.push_back(
                {base + "ln_weight_hh" + k, &p.ln_weight_hh, grad_or_null(g.ln_weight_hh)});
        }
    }
    if (kind == DecoderKind::luong)
        collect_params(combine.params, combine.grad, prefix + "combine.", out);
    if (deep) {
        collect_params(deep_state.params, deep_state.grad, prefix + "deep_output.state.", out);
        collect_params(deep_prev.params, deep_prev.grad, prefix + "deep_output.prev.", out);
        collect_params(deep_context.params, deep_context.grad, prefix + "deep_output.context.",
                       out);
    }
}

}  // namespace nazar
