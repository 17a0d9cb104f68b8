// The Bahdanau / Luong attention decoder, one step forward and backward (decoder.h).
#include "nazar/models/decoder.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cstring>

namespace nazar {

namespace {

// dst[n, :w] (row stride ld_dst, offset) <-> src (N, w)
void copy_cols_in(TensorView src, float* dst, int ld_dst) {
    const int N = src.dim(0), w = src.dim(1);
    for (int n = 0; n < N; ++n)
        std::memcpy(dst + static_cast<int64_t>(n) * ld_dst,
                    src.data() + static_cast<int64_t>(n) * w, sizeof(float) * w);
}
// dst (N, w) += src[n, :w] (row stride ld_src)
void add_cols_out(const float* src, int ld_src, TensorView dst) {
    const int N = dst.dim(0), w = dst.dim(1);
    for (int n = 0; n < N; ++n)
        kernels::axpy(w, 1.0f, src + static_cast<int64_t>(n) * ld_src,
                      dst.data() + static_cast<int64_t>(n) * w);
}
// d_pre = d_y ⊙ (1 − y²)   (y = tanh(pre))
void tanh_backward(TensorView d_y, TensorView y, TensorView d_pre) {
    for (int64_t i = 0; i < y.numel(); ++i) d_pre[i] = d_y[i] * (1.0f - y[i] * y[i]);
}

}  // namespace

Decoder::Decoder(const ModelConfig& cfg, Rng& rng)
    : kind(cfg.decoder.kind),
      cell(cfg.decoder.cell),
      E(cfg.embedding_size),
      H(cfg.decoder.hidden_size),
      C(encoder_output_size(cfg)),
      L(cfg.decoder.num_layers),
      embedding({.num_embeddings = cfg.tgt_vocab_size, .embedding_dim = cfg.embedding_size}, rng),
      dropout({.p = cfg.decoder.dropout}),
      deep(cfg.decoder.deep_output) {
    feed_ = kind == DecoderKind::bahdanau ? C : (cfg.decoder.input_feeding ? H : 0);
    before_ = effective_timing(cfg) == AttentionTiming::before;
    d_out_ = generator_input_size(cfg);
    for (int l = 0; l < L; ++l) {
        const int in = l == 0 ? E + feed_ : H;
        if (cell == CellType::gru)
            gru.emplace_back(GRUCell::Config{.input_size = in, .hidden_size = H, .bias = true},
                             rng);
        else
            lstm.emplace_back(LSTMCell::Config{.input_size = in, .hidden_size = H, .bias = true},
                              rng);
    }
    if (kind == DecoderKind::luong)
        combine = Linear({.in_features = H + C, .out_features = H, .bias = false}, rng);
    if (deep) {
        deep_state = Linear({.in_features = H, .out_features = d_out_, .bias = false}, rng);
        deep_prev = Linear({.in_features = E, .out_features = d_out_, .bias = false}, rng);
        deep_context = Linear({.in_features = C, .out_features = d_out_, .bias = false}, rng);
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

void Decoder::step_forward(int t, TensorView emb, TensorView h_prev, TensorView c_prev,
                           TensorView feed_prev, const EncodedSource& src,
                           const Attention& attention, TensorView h_new, TensorView c_new,
                           TensorView out, DecoderStepCache& cache, Rng& rng, Mode mode,
                           TensorView gi0) {
    const int N = emb.dim(0);
    NZ_CHECK_SHAPE(emb, {N, E});
    NZ_CHECK_SHAPE(h_prev, {L, N, H});
    NZ_CHECK_SHAPE(h_new, {L, N, H});
    NZ_CHECK_SHAPE(out, {N, d_out_});
    NZ_CHECK(src.N == N, "decoder step: {} decoder rows but the encoded source has {}", N, src.N);
    const bool feeding = kind == DecoderKind::luong && feed_ > 0;
    if (feeding) NZ_CHECK_SHAPE(feed_prev, {N, H});
    cache.context.resize({N, C}, false);
    // Bahdanau timing: c_t from the query s_{t-1} (top layer), before the RNN step.
    if (before_)
        attention.forward(h_prev.select(L - 1), src.keys, src.enc_out, src.lengths, t,
                          cache.context, cache.attention);
    // x0 = [e_t ; c_t] (bahdanau) | [e_t ; s̃_{t-1}] (input feeding) | e_t
    const int I0 = E + feed_;
    cache.x0.resize({N, I0}, false);
    copy_cols_in(emb, cache.x0.data(), I0);
    if (kind == DecoderKind::bahdanau) copy_cols_in(cache.context, cache.x0.data() + E, I0);
    if (feeding) copy_cols_in(feed_prev, cache.x0.data() + E, I0);
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
            if (cell == CellType::gru)
                gru[0].forward_projected(gi0, h_prev.select(0), h_new.select(0), cache.gru[0], {},
                                         wt(src.whh_t, 0));
            else
                lstm[0].forward_projected(gi0, h_prev.select(0), c_prev.select(0), h_new.select(0),
                                          c_new.select(0), cache.lstm[0], {}, wt(src.whh_t, 0));
        } else if (cell == CellType::gru) {
            gru[l].forward(x, h_prev.select(l), h_new.select(l), cache.gru[l], {}, wt(src.wih_t, l),
                           wt(src.whh_t, l));
        } else {
            lstm[l].forward(x, h_prev.select(l), c_prev.select(l), h_new.select(l), c_new.select(l),
                            cache.lstm[l], {}, wt(src.wih_t, l), wt(src.whh_t, l));
        }
    }
    if (split_) return;  // attention and combine: outputs_forward, all steps at once
    const TensorView s = h_new.select(L - 1);
    // Luong timing: c_t from the query s_t, after the RNN step.
    if (!before_)
        attention.forward(s, src.keys, src.enc_out, src.lengths, t, cache.context, cache.attention);
    if (kind == DecoderKind::luong) {
        // s̃_t = tanh(W_c [s_t ; c_t])
        cache.combine_in.resize({N, H + C}, false);
        copy_cols_in(s, cache.combine_in.data(), H + C);
        copy_cols_in(cache.context, cache.combine_in.data() + H, H + C);
        combine.forward(cache.combine_in, out);
        kernels::tanh(out.data(), out.data(), out.numel());
    } else if (deep) {
        // o_t = tanh(L_s s_t + L_y e_t + L_c c_t)
        tmp_.resize({N, d_out_}, false);
        deep_state.forward(s, out);
        deep_prev.forward(emb, tmp_);
        kernels::axpy(out.numel(), 1.0f, tmp_.data(), out.data());
        deep_context.forward(cache.context, tmp_);
        kernels::axpy(out.numel(), 1.0f, tmp_.data(), out.data());
        kernels::tanh(out.data(), out.data(), out.numel());
    } else {
        out.copy_from(s);  // o_t = s_t
    }
}

void Decoder::step_backward(int t, TensorView d_out, TensorView emb, TensorView h_prev,
                            TensorView c_prev, TensorView h_new, TensorView c_new, TensorView out,
                            const EncodedSource& src, Attention& attention,
                            const DecoderStepCache& cache, TensorView d_h_new, TensorView d_c_new,
                            TensorView d_h_prev, TensorView d_c_prev, TensorView d_feed_prev,
                            TensorView d_emb, TensorView d_enc_out, TensorView d_keys) {
    const int N = emb.dim(0), I0 = E + feed_;
    NZ_CHECK_SHAPE(d_out, {N, d_out_});
    NZ_CHECK_SHAPE(d_h_new, {L, N, H});
    NZ_CHECK_SHAPE(d_h_prev, {L, N, H});
    const TensorView s = h_new.select(L - 1), d_s = d_h_new.select(L - 1);
    d_ctx_.resize({N, C});  // zeroed: d c_t collects the output, feed and attention paths
    if (split_) {
        kernels::axpy(d_s.numel(), 1.0f, d_out.data(),
                      d_s.data());  // d_out = d s_t from outputs_backward
    } else if (kind == DecoderKind::luong) {
        // s̃ = tanh(z), z = W_c [s; c]  =>  d_z = d_s̃ ⊙ (1 − s̃²);  d_[s; c] = d_z W_c;  grad.W_c +=
        // d_zᵀ [s; c]
        if (!deferred_) d_pre_.resize({N, H}, false);
        const TensorView d_z = deferred_ ? d_z_all_.select(t % chunk_) : d_pre_.view();
        tanh_backward(d_out, out, d_z);
        d_cat_.resize({N, H + C});
        if (deferred_)
            gemm(d_z, false, combine.params.weight, false, d_cat_, 1.0f,
                 1.0f);  // W_c's gradient: finish_backward
        else
            combine.backward(d_z, cache.combine_in, d_cat_);
        add_cols_out(d_cat_.data(), H + C, d_s);
        add_cols_out(d_cat_.data() + H, H + C, d_ctx_);
    } else if (deep) {
        // o = tanh(z), z = L_s s + L_y e + L_c c  =>  d_z = d_o ⊙ (1 − o²);  d_s += d_z L_s;  d_e
        // += d_z L_y; d_c += d_z L_c;  grad.L_* += d_zᵀ (s | e | c)
        d_pre_.resize({N, d_out_}, false);
        tanh_backward(d_out, out, d_pre_);
        deep_state.backward(d_pre_, s, d_s);
        deep_prev.backward(d_pre_, emb, d_emb);
        deep_context.backward(d_pre_, cache.context, d_ctx_);
    } else {
        kernels::axpy(d_s.numel(), 1.0f, d_out.data(), d_s.data());  // o = s
    }
    // query-side weight gradients of the attention: deferred to finish_backward when batching
    AttentionQueryGrad qg;
    const bool defer_attn = deferred_ && attention.has_query_weights();
    if (defer_attn) {
        if (!d_u_all_.empty()) qg.d_u = d_u_all_.select(t % chunk_);
        if (!d_pre_all_.empty()) qg.d_pre = d_pre_all_.select(t % chunk_);
    }
    // Luong timing: the query was s_t, so d_query joins d_s before the cells' backward.
    if (!before_ && !split_)
        attention.backward(d_ctx_, s, src.keys, src.enc_out, src.lengths, cache.attention, d_s,
                           d_keys, d_enc_out, defer_attn ? &qg : nullptr);
    // cells, top layer first: d_h_new[l] is complete once layer l+1 has added its input gradient
    d_x0_.resize({N, I0});
    for (int l = L - 1; l >= 0; --l) {
        TensorView x = l == 0 ? TensorView(cache.x0) : TensorView(cache.layer_in[l]);
        TensorView d_x = d_x0_;
        if (l > 0) {
            d_layer_.resize({N, H});
            d_x = d_layer_;
        }
        if (!deferred_) {
            if (cell == CellType::gru)
                gru[l].backward(d_h_new.select(l), x, h_prev.select(l), cache.gru[l], d_x,
                                d_h_prev.select(l));
            else
                lstm[l].backward(d_h_new.select(l), d_c_new.select(l), x, h_prev.select(l),
                                 c_prev.select(l), cache.lstm[l], d_x, d_h_prev.select(l),
                                 d_c_prev.select(l));
        } else {
            // weight gradients and layer 0's d_e = d_gi W_e come in finish_backward (all steps at
            // once); here only what the recurrence needs: d_h, d_x of layers > 0, and layer 0's
            // feed columns d_f = d_gi W_f (W_f = W_ih[:, E:])
            const TensorView d_x_now = l == 0 ? TensorView() : d_x;
            if (cell == CellType::gru)
                gru[l].backward_data(d_h_new.select(l), h_prev.select(l), cache.gru[l],
                                     d_gi_all_[l].select(t % chunk_),
                                     d_gh_all_[l].select(t % chunk_), d_x_now, d_h_prev.select(l));
            else
                lstm[l].backward_data(d_h_new.select(l), d_c_new.select(l), c_prev.select(l),
                                      cache.lstm[l], d_gi_all_[l].select(t % chunk_), d_x_now,
                                      d_h_prev.select(l), d_c_prev.select(l));
            if (l == 0 && feed_ > 0) {
                const int GH = gate_size();
                const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
                gemm_raw(false, false, N, feed_, GH, 1.0f, d_gi_all_[0].select(t % chunk_).data(),
                         GH, p.weight_ih.data() + E, I0, 1.0f, d_x0_.data() + E, I0);
            }
        }
        // x_l = dropout(s^{l-1})  =>  d_s^{l-1} += d_x_l ⊙ mask
        if (l > 0) dropout.backward(d_layer_, cache.dropout[l], d_h_new.select(l - 1));
    }
    // x0 = [e ; feed]  =>  d_e += d_x0[:, :E];  d_feed += d_x0[:, E:]
    if (!deferred_)
        add_cols_out(d_x0_.data(), I0, d_emb);  // deferred: finish_backward, all steps at once
    if (kind == DecoderKind::bahdanau) add_cols_out(d_x0_.data() + E, I0, d_ctx_);
    if (kind == DecoderKind::luong && feed_ > 0) add_cols_out(d_x0_.data() + E, I0, d_feed_prev);
    // Bahdanau timing: the query was s_{t-1}; d_c_t is complete only now (it fed the cell).
    if (before_)
        attention.backward(d_ctx_, h_prev.select(L - 1), src.keys, src.enc_out, src.lengths,
                           cache.attention, d_h_prev.select(L - 1), d_keys, d_enc_out,
                           defer_attn ? &qg : nullptr);
    // deferred: steps back from T−1, so step t0 = t closes the chunk [t0, t0 + chunk): flush it
    if (deferred_ && t % chunk_ == 0) {
        const int t1 = std::min(def_T_, t + chunk_);
        flush_cells(t, t1);
        if (!split_ && defer_attn) flush_attention(t, t1);
    }
    (void)c_new;
}

void Decoder::begin_backward(std::span<const DecoderStepCache> steps, TensorView h_all,
                             Attention& attention, TensorView d_emb) {
    if (!batch_weight_grads) return;
    const int T = h_all.dim(0) - 1, N = h_all.ndim() == 4 ? h_all.dim(2) : 0;
    NZ_CHECK(T > 0 && N > 0, "decoder begin_backward: h_all {} needs (T+1, L, N, H) with T, N > 0",
             h_all.shape().str());
    NZ_CHECK_SHAPE(h_all, {T + 1, L, N, H});
    NZ_CHECK_SHAPE(d_emb, {T, N, E});
    NZ_CHECK(static_cast<int>(steps.size()) >= T,
             "decoder begin_backward: {} step caches for T = {}", steps.size(), T);
    // chunks of ≈ chunk_rows rows: K large enough for an efficient weight-gradient GEMM, buffers
    // independent of T (memory: they are (chunk, N, ·), not (T, N, ·))
    NZ_CHECK(chunk_rows >= 1, "decoder: chunk_rows must be >= 1, got {}", chunk_rows);
    chunk_ = std::clamp((chunk_rows + N - 1) / N, 1, T);
    const int GH = gate_size(), CH = chunk_;
    d_gi_all_.resize(L);
    d_gh_all_.resize(L);
    for (int l = 0; l < L; ++l) {  // every step writes its whole (N, ·) blocks: no zeroing
        d_gi_all_[l].resize({CH, N, GH}, false);
        if (cell == CellType::gru) d_gh_all_[l].resize({CH, N, GH}, false);
    }
    if (kind == DecoderKind::luong) d_z_all_.resize({CH, N, H}, false);
    const AttentionConfig& ac = attention.cfg;
    const bool additive = ac.score == ScoreKind::additive || ac.score == ScoreKind::concat;
    d_u_all_.resize(additive ? Shape{CH, N, ac.attention_size} : Shape{0}, false);
    d_pre_all_.resize(ac.local == LocalMode::predictive ? Shape{CH, N, ac.position_size} : Shape{0},
                      false);
    deferred_ = true;
    def_T_ = T;
    def_N_ = N;
    def_steps_ = steps;
    def_h_all_ = h_all;
    def_d_emb_ = d_emb;
    def_attn_ = &attention;
}

void Decoder::project_embeddings(TensorView emb, TensorView gi0) const {
    const int T = emb.dim(0), N = emb.dim(1), GH = gate_size(), I0 = E + feed_;
    NZ_CHECK_SHAPE(emb, {T, N, E});
    NZ_CHECK_SHAPE(gi0, {T, N, GH});
    const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
    // gi0 = e W_eᵀ + b_ih over all T·N rows (W_e = W_ih[:, :E], leading dimension I0)
    const int64_t M = int64_t{T} * N;
    float* g = gi0.data();
    if (p.bias_ih.numel() > 0)
        for (int64_t r = 0; r < M; ++r)
            std::memcpy(g + r * GH, p.bias_ih.data(), sizeof(float) * GH);
    gemm_raw(false, true, static_cast<int>(M), GH, E, 1.0f, emb.data(), E, p.weight_ih.data(), I0,
             p.bias_ih.numel() > 0 ? 1.0f : 0.0f, g, GH);
}

TensorView Decoder::gather_steps(int t0, int t1, const std::function<TensorView(int)>& at_step) {
    const int n = t1 - t0, w = at_step(t0).dim(1);
    gather_.resize({n, def_N_, w}, false);
    for (int t = t0; t < t1; ++t) gather_.select(t - t0).copy_from(at_step(t));
    return gather_.reshape({int64_t{n} * def_N_, w});
}

TensorView Decoder::states(int l, int t0, int t1) {
    if (L == 1)
        return def_h_all_.slice(t0, t1).reshape({int64_t{t1 - t0} * def_N_, H});  // contiguous
    return gather_steps(t0, t1, [&](int t) { return def_h_all_.select(t).select(l); });
}

void Decoder::flush_cells(int t0, int t1) {
    const int N = def_N_, GH = gate_size();
    const int64_t M = int64_t{t1 - t0} * N;  // rows of the chunk; buffer rows [0, M)
    {
        // x0 = [e ; f], gi = x0 W_ihᵀ + …  =>  d_e += d_gi W_e   (W_e = W_ih[:, :E])
        const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
        gemm_raw(false, false, static_cast<int>(M), E, GH, 1.0f, d_gi_all_[0].data(), GH,
                 p.weight_ih.data(), E + feed_, 1.0f, def_d_emb_.select(t0).data(), E);
    }
    for (int l = 0; l < L; ++l) {
        RNNCellParams& p = cell == CellType::gru ? gru[l].params : lstm[l].params;
        RNNCellParams& g = cell == CellType::gru ? gru[l].grad : lstm[l].grad;
        // gi = x W_ihᵀ + b_ih  =>  grad.W_ih += Σ_t d_gi[t]ᵀ x[t];  grad.b_ih += Σ_t Σ_rows d_gi[t]
        const TensorView x = gather_steps(t0, t1, [&](int t) {
            return l == 0 ? def_steps_[t].x0.view() : def_steps_[t].layer_in[l].view();
        });
        cell_project_input_backward(p, g, d_gi_all_[l].slice(0, t1 - t0).reshape({M, GH}), x,
                                    TensorView());
        // gh = h W_hhᵀ + b_hh  =>  grad.W_hh += Σ_t d_gh[t]ᵀ s^l_{t-1}   (LSTM: d_gh = d_gi)
        const Tensor& d_gh = cell == CellType::gru ? d_gh_all_[l] : d_gi_all_[l];
        cell_add_recurrent_backward(p, g, d_gh.slice(0, t1 - t0).reshape({M, GH}),
                                    states(l, t0, t1), TensorView());
    }
    // s̃ = tanh(W_c [s; c])  =>  grad.W_c += Σ_t d_z[t]ᵀ [s_t; c_t]   (split outputs:
    // finish_backward)
    if (kind == DecoderKind::luong && !split_)
        combine.backward(
            d_z_all_.slice(0, t1 - t0).reshape({M, H}),
            gather_steps(t0, t1, [&](int t) { return def_steps_[t].combine_in.view(); }),
            TensorView());
}

void Decoder::flush_attention(int t0, int t1) {
    // attention query q_t = s_{t-1} (timing before) or s_t (after), top layer:
    //   grad.W_q += Σ_t d_u[t]ᵀ q_t;  grad.W_p += Σ_t d_pre[t]ᵀ q_t
    const int64_t M = int64_t{t1 - t0} * def_N_;
    const TensorView d_u =
        d_u_all_.empty() ? TensorView() : d_u_all_.slice(0, t1 - t0).reshape({M, d_u_all_.dim(2)});
    const TensorView d_pre = d_pre_all_.empty()
                                 ? TensorView()
                                 : d_pre_all_.slice(0, t1 - t0).reshape({M, d_pre_all_.dim(2)});
    const int q0 = before_ ? 0 : 1;
    def_attn_->query_weights_backward(d_u, d_pre, states(L - 1, t0 + q0, t1 + q0));
}

void Decoder::finish_backward() {
    if (!batch_weight_grads) return;
    NZ_CHECK(deferred_, "decoder finish_backward without begin_backward");
    // split outputs: grad.W_c += d_zᵀ [s; c] over all T·N rows (the chunks flushed everything else)
    if (split_grad_) {
        const int64_t M = int64_t{def_T_} * def_N_;
        combine.backward(d_z_seq_.reshape({M, H}), comb_all_.reshape({M, H + C}), TensorView());
    }
    split_grad_ = false;
    deferred_ = false;
    def_steps_ = {};
    def_h_all_ = def_d_emb_ = TensorView();
    def_attn_ = nullptr;
}

void Decoder::set_split_outputs(bool on) {
    NZ_CHECK(!on || can_split_outputs(),
             "decoder: split outputs need Luong, no input feeding, timing after");
    split_ = on;
}

void Decoder::outputs_forward(TensorView h_all, const EncodedSource& src,
                              const Attention& attention, std::span<DecoderStepCache> steps,
                              TensorView out) {
    NZ_CHECK(can_split_outputs(),
             "decoder: split outputs need Luong, no input feeding, timing after");
    const int T = h_all.dim(0) - 1, N = h_all.dim(2);
    NZ_CHECK_SHAPE(h_all, {T + 1, L, N, H});
    NZ_CHECK_SHAPE(out, {T, N, H});
    NZ_CHECK(static_cast<int>(steps.size()) >= T,
             "decoder outputs_forward: {} step caches for T = {}", steps.size(), T);
    comb_all_.resize({T, N, H + C}, false);
    if (attention.can_batch_steps()) {
        // global dot/general: every step's scores and contexts as per-sentence GEMMs
        const TensorView q = top_states(h_all);
        ctx_seq_.resize({T, N, C}, false);
        att_ptrs_.resize(T);
        for (int t = 0; t < T; ++t) att_ptrs_[t] = &steps[t].attention;
        attention.forward_steps(q, src.keys, src.enc_out, src.lengths, ctx_seq_, att_ptrs_);
        for (int t = 0; t < T; ++t) {
            steps[t].context.resize({N, C}, false);
            steps[t].context.copy_from(ctx_seq_.select(t));
            copy_cols_in(q.select(t), comb_all_.select(t).data(), H + C);
            copy_cols_in(ctx_seq_.select(t), comb_all_.select(t).data() + H, H + C);
        }
    }
    for (int t = 0; t < T && !attention.can_batch_steps(); ++t) {
        // c_t = attn(query = s_t);  comb[t] = [s_t ; c_t]
        const TensorView s = h_all.select(t + 1).select(L - 1);
        DecoderStepCache& cache = steps[t];
        cache.context.resize({N, C}, false);
        attention.forward(s, src.keys, src.enc_out, src.lengths, t, cache.context, cache.attention);
        copy_cols_in(s, comb_all_.select(t).data(), H + C);
        copy_cols_in(cache.context, comb_all_.select(t).data() + H, H + C);
    }
    // s̃_t = tanh(W_c [s_t ; c_t]) for all T·N rows: one GEMM
    combine.forward(comb_all_.reshape({int64_t{T} * N, H + C}), out.reshape({int64_t{T} * N, H}));
    kernels::tanh(out.data(), out.data(), out.numel());
}

void Decoder::outputs_backward(TensorView d_out, TensorView out, TensorView h_all,
                               const EncodedSource& src, Attention& attention,
                               std::span<const DecoderStepCache> steps, TensorView d_s,
                               TensorView d_enc_out, TensorView d_keys) {
    NZ_CHECK(deferred_ && can_split_outputs(),
             "decoder outputs_backward needs begin_backward and split outputs");
    const int T = def_T_, N = def_N_;
    const int64_t M = int64_t{T} * N;
    NZ_CHECK_SHAPE(d_out, {T, N, H});
    NZ_CHECK_SHAPE(out, {T, N, H});
    NZ_CHECK_SHAPE(d_s, {T, N, H});
    NZ_CHECK_SHAPE(comb_all_, {T, N, H + C});
    // s̃ = tanh(z), z = W_c [s; c]  =>  d_z = d_s̃ ⊙ (1 − s̃²);  d_s = d_z W_c[:, :H], d_c = d_z
    // W_c[:, H:] (one GEMM each over all T·N rows; grad.W_c in finish_backward)
    d_z_seq_.resize({T, N, H}, false);
    tanh_backward(d_out, out, d_z_seq_);
    d_ctx_seq_.resize({T, N, C}, false);
    const float* Wc = combine.params.weight.data();
    gemm_raw(false, false, static_cast<int>(M), H, H, 1.0f, d_z_seq_.data(), H, Wc, H + C, 0.0f,
             d_s.data(), H);
    gemm_raw(false, false, static_cast<int>(M), C, H, 1.0f, d_z_seq_.data(), H, Wc + H, H + C, 0.0f,
             d_ctx_seq_.data(), C);
    // attention per step, in the order the interleaved backward uses (t = T−1 … 0): d_s_t +=
    // d_query
    if (attention.can_batch_steps()) {  // no query-side weights: nothing deferred
        std::vector<const AttentionStepCache*> caches(T);
        for (int t = 0; t < T; ++t) caches[t] = &steps[t].attention;
        attention.backward_steps(d_ctx_seq_, top_states(h_all), src.keys, src.enc_out, src.lengths,
                                 caches, d_s, d_keys, d_enc_out);
        split_grad_ = true;
        return;
    }
    AttentionQueryGrad qg;
    const bool defer_attn = attention.has_query_weights();
    for (int t = T - 1; t >= 0; --t) {
        if (defer_attn) {
            if (!d_u_all_.empty()) qg.d_u = d_u_all_.select(t % chunk_);
            if (!d_pre_all_.empty()) qg.d_pre = d_pre_all_.select(t % chunk_);
        }
        attention.backward(d_ctx_seq_.select(t), h_all.select(t + 1).select(L - 1), src.keys,
                           src.enc_out, src.lengths, steps[t].attention, d_s.select(t), d_keys,
                           d_enc_out, defer_attn ? &qg : nullptr);
        if (defer_attn && t % chunk_ == 0) flush_attention(t, std::min(T, t + chunk_));
    }
    split_grad_ = true;
}

TensorView Decoder::top_states(TensorView h_all) {
    const int T = h_all.dim(0) - 1, N = h_all.dim(2);
    NZ_CHECK_SHAPE(h_all, {T + 1, L, N, H});
    if (L == 1) return TensorView(h_all.data() + int64_t{N} * H, Shape{T, N, H});
    q_seq_.resize({T, N, H}, false);
    for (int t = 0; t < T; ++t) q_seq_.select(t).copy_from(h_all.select(t + 1).select(L - 1));
    return q_seq_;
}

void Decoder::collect(const std::string& prefix, ParamList& out) {
    collect_params(embedding.params, embedding.grad, prefix + "embedding.", out);
    for (int l = 0; l < L; ++l) {
        RNNCellParams& p = cell == CellType::gru ? gru[l].params : lstm[l].params;
        RNNCellParams& g = cell == CellType::gru ? gru[l].grad : lstm[l].grad;
        const std::string k = "_l" + std::to_string(l);
        const std::string base = prefix + "rnn.";
        out.push_back({base + "weight_ih" + k, &p.weight_ih, &g.weight_ih});
        out.push_back({base + "weight_hh" + k, &p.weight_hh, &g.weight_hh});
        out.push_back({base + "bias_ih" + k, &p.bias_ih, &g.bias_ih});
        out.push_back({base + "bias_hh" + k, &p.bias_hh, &g.bias_hh});
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
