// TrainPass (train_pass.h): the teacher-forced forward, the training step's backward, the
// evaluation loss and forced-decoding scores over a Seq2Seq.
#include "nazar/models/train_pass.h"

#include "nazar/attention/coverage.h"
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/models/sequence_backward.h"

#include <algorithm>

namespace nazar {

namespace {

bool absent(ConstTensorView v) {
    return v.ndim() == 0 || v.numel() == 0;
}  // default views have ndim 0
// A dropout mask of this forward, or an empty view (no dropout at that site).
ConstTensorView mask_of(const DropoutMasks* m, Tensor DropoutMasks::*site) {
    return m == nullptr || absent((m->*site).view()) ? ConstTensorView() : (m->*site).view();
}
TensorView sel(Tensor& x, int i) {
    return absent(x) ? TensorView() : x.select(i);
}
// The first n rows of a step's (L, B, H) states, or x when empty (one layer when n < B).
TensorView state_rows(TensorView x, int n) {
    return absent(x) || n == x.dim(1) ? x : TensorView(x.data(), Shape{1, n, x.dim(2)});
}

int argmax_row(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

}  // namespace

void word_dropout(Batch& batch, float p, const SpecialIds& ids, Rng& rng) {
    NZ_CHECK(p >= 0.0f && p < 1.0f, "word dropout must be in [0, 1), got {}", p);
    if (p == 0.0f) return;
    NZ_CHECK(static_cast<int>(batch.src_lengths.size()) == batch.B &&
                 static_cast<int>(batch.tgt_lengths.size()) == batch.B &&
                 static_cast<int64_t>(batch.src.size()) == int64_t{batch.B} * batch.S &&
                 static_cast<int64_t>(batch.tgt_in.size()) == int64_t{batch.B} * batch.T,
             "word dropout: inconsistent batch (B {} S {} T {})", batch.B, batch.S, batch.T);
    for (int b = 0; b < batch.B; ++b) {
        const int n = std::min(batch.src_lengths[b], batch.S);
        for (int i = 0; i < n; ++i)
            if (rng.uniform() < p) batch.src[static_cast<std::size_t>(b) * batch.S + i] = ids.unk;
    }
    for (int b = 0; b < batch.B; ++b) {
        const int n = std::min(batch.tgt_lengths[b], batch.T);
        for (int t = 1; t < n; ++t)
            if (rng.uniform() < p)
                batch.tgt_in[static_cast<std::size_t>(b) * batch.T + t] = ids.unk;
    }
}

TrainPass::TrainPass(Seq2Seq& model) : m_(model), train_(&model), cfg_(model.config()) {}
TrainPass::TrainPass(const Seq2Seq& model) : m_(model), cfg_(model.config()) {}
TrainPass::~TrainPass() = default;

Seq2Seq& TrainPass::trainee() {
    NZ_CHECK(train_ != nullptr, "train_step needs a TrainPass over a model it may change");
    return *train_;
}

void TrainPass::forward_batch(const Batch& batch, float sampling_prob, Rng& rng, Mode mode,
                              bool split_outputs, const DropoutMasks* masks, bool skip_rows) {
    const int B = batch.B, S = batch.S, T = batch.T;
    NZ_CHECK(B > 0 && T > 0, "seq2seq: empty batch (B = {}, T = {})", B, T);
    NZ_CHECK(static_cast<int64_t>(batch.src.size()) == int64_t{B} * S &&
                 static_cast<int64_t>(batch.tgt_in.size()) == int64_t{B} * T &&
                 static_cast<int64_t>(batch.tgt_out.size()) == int64_t{B} * T &&
                 static_cast<int>(batch.src_lengths.size()) == B,
             "seq2seq: inconsistent batch: B {} S {} T {} but {} src ids, {} tgt_in, {} tgt_out, "
             "{} lengths",
             B, S, T, batch.src.size(), batch.tgt_in.size(), batch.tgt_out.size(),
             batch.src_lengths.size());
    NZ_CHECK(sampling_prob >= 0 && sampling_prob <= 1, "sampling_prob must be in [0, 1], got {}",
             sampling_prob);
    drop_ = mode == Mode::train ? masks : nullptr;
    encode_batch(batch, rng, mode);
    plan_active_rows(batch, skip_rows && mode == Mode::train);
    // copy attention adds gradients to each step's attention cache: the per-step attention path
    decoder_forward(batch, sampling_prob, rng, mode, split_outputs && !cfg_.copy_attention);
}

void TrainPass::encode_batch(const Batch& batch, Rng& rng, Mode mode) {
    const int B = batch.B, S = batch.S, T = batch.T;
    const int C = m_.encoder.output_size(), H = m_.decoder.H, L = m_.decoder.L;
    // m_.encoder, keys once per batch, initial state
    src_.N = B;
    src_.S = S;
    src_.lengths.assign(batch.src_lengths.begin(), batch.src_lengths.end());
    src_.enc_out.resize({B, S, C}, false);
    m_.encoder.forward(batch.src, batch.src_lengths, src_.enc_out, enc_cache_, rng, mode,
                       mask_of(drop_, &DropoutMasks::src_emb));
    // H̃ = H ⊙ m: what attention and the bridge read (the RNN keeps its own outputs)
    if (const ConstTensorView m = mask_of(drop_, &DropoutMasks::enc_out); !absent(m))
        apply_dropout_mask(src_.enc_out, m);
    m_.attention.precompute(src_.enc_out, src_.keys, B);
    m_.decoder.prepare_steps(src_, B);
    h_all_.resize({T + 1, L, B, H}, false);
    if (m_.decoder.cell == CellType::lstm) {
        c_all_.resize({T + 1, L, B, H}, false);
        c_all_.select(0).zero();
    } else {
        c_all_ = Tensor(Shape{0});
    }
    m_.bridge.forward(src_.enc_out, enc_cache_.final, batch.src_lengths, h_all_.select(0),
                      bridge_cache_);
    if (m_.decoder.kind == DecoderKind::luong && m_.decoder.feed_size() > 0)
        feed0_.resize({B, H});  // s̃_{-1} = 0
}

void TrainPass::decoder_forward(const Batch& batch, float sampling_prob, Rng& rng, Mode mode,
                                bool split_outputs) {
    const int B = batch.B, T = batch.T, E = m_.decoder.E, D = m_.decoder.output_size();
    const int V = cfg_.tgt_vocab_size;
    const bool feeding = m_.decoder.kind == DecoderKind::luong && m_.decoder.feed_size() > 0;
    emb_.resize({T, B, E}, false);
    out_.resize({T, B, D}, false);
    inputs_.resize(static_cast<std::size_t>(T) * B);
    targets_.resize(static_cast<std::size_t>(T) * B);
    if (static_cast<int>(steps_.size()) < T) steps_.resize(T);
    const bool sampling = mode == Mode::train && sampling_prob > 0;
    const ConstTensorView tgt_mask = mask_of(drop_, &DropoutMasks::tgt_emb);
    if (sampling) logits_.resize({B, V}, false);
    for (int t = 0; t < T; ++t)
        for (int b = 0; b < B; ++b) {
            inputs_[static_cast<std::size_t>(t) * B + b] = batch.tgt_in_at(b, t);
            targets_[static_cast<std::size_t>(t) * B + b] = batch.tgt_out_at(b, t);
        }
    // Teacher forcing: every input is known now, so embed all T·B of them and project them
    // through layer 0's W_e at once (one GEMM, K = E); steps then add only the feed's W_f term.
    if (!sampling) {
        m_.decoder.embedding.forward(inputs_, emb_.reshape({int64_t{T} * B, E}));
        if (!absent(tgt_mask)) apply_dropout_mask(emb_, tgt_mask);  // ẽ_t = e_t ⊙ m_t
        gi0_.resize({T, B, m_.decoder.gate_size()}, false);
        m_.decoder.project_embeddings(emb_, gi0_);
    }
    // attention dropout: each step's mask goes into its attention cache (cleared otherwise)
    const ConstTensorView att_mask = mask_of(drop_, &DropoutMasks::attention);
    // Luong without feeding, attention after: cells of all steps first, then attention + combine
    // coverage, monotonic: step t's attention reads α_{t-1}
    const bool carried = m_.attention.cfg.coverage || m_.attention.cfg.monotonic;
    split_ = split_outputs && !sampling && m_.decoder.can_split_outputs() && absent(att_mask) &&
             !carried;
    for (int t = 0; t < T; ++t) {
        if (carried)
            AttentionTerms::begin_step(m_.attention, std::span(steps_.data(), T), t, B, batch.S,
                                       mode == Mode::train ? &rng : nullptr);
        const int n = active_[static_cast<std::size_t>(t)];  // rows [0, n) run this step
        Tensor& step_mask = steps_[t].attention.drop_mask;
        if (absent(att_mask)) {
            step_mask.resize({0});
        } else {
            step_mask.resize({n, batch.S}, false);
            step_mask.copy_from(att_mask.select(t).slice(0, n));
        }
        int32_t* in = inputs_.data() + static_cast<std::size_t>(t) * B;
        if (sampling && t > 0) {
            // scheduled sampling: feed argmax_v p(v | step t-1) with probability p, per row
            gemm(out_.select(t - 1), false, m_.generator_weight(), true, logits_);
            kernels::add_bias_rows(logits_, m_.generator.params.bias);
            for (int b = 0; b < B; ++b)
                if (rng.bernoulli(sampling_prob))
                    in[b] = argmax_row(logits_.data() + static_cast<int64_t>(b) * V, V);
        }
        if (sampling) {
            m_.decoder.embedding.forward({in, static_cast<std::size_t>(B)}, emb_.select(t));
            if (!absent(tgt_mask)) apply_dropout_mask(emb_.select(t), tgt_mask.select(t));
        }
        const TensorView gi0 = sampling ? TensorView() : gi0_.select(t).slice(0, n);
        const TensorView emb = emb_.select(t).slice(0, n);
        const TensorView h = state_rows(h_all_.select(t), n), c = state_rows(sel(c_all_, t), n);
        const TensorView h1 = state_rows(h_all_.select(t + 1), n);
        const TensorView c1 = state_rows(sel(c_all_, t + 1), n);
        clear_inactive(t);
        if (split_) {
            m_.decoder.cells_forward(emb, h, c, src_, h1, c1, steps_[t], rng, mode, gi0);
            continue;
        }
        const TensorView feed_prev =
            feeding ? (t == 0 ? feed0_.slice(0, n) : out_.select(t - 1).slice(0, n)) : TensorView();
        m_.decoder.step_forward(t, emb, h, c, feed_prev, src_, m_.attention, h1, c1,
                                out_.select(t).slice(0, n), steps_[t], rng, mode, gi0);
    }
    if (split_)
        m_.decoder.outputs_forward(
            h_all_, src_, m_.attention, std::span<DecoderStepCache>(steps_.data(), T),
            outputs_cache_, out_,
            skipped_ ? std::span<const int>(active_) : std::span<const int>());
}

void TrainPass::backward_batch(const Batch& batch, const TrainOptions& opt) {
    Seq2Seq& w = trainee();  // the gradients are the model's
    const int B = batch.B, S = batch.S, T = batch.T;
    const int C = w.encoder.output_size(), H = w.decoder.H, L = w.decoder.L, E = w.decoder.E;
    d_emb_.resize({T, B, E});
    d_enc_out_.resize({B, S, C});
    d_keys_.resize(src_.keys.keys.shape());
    for (int i = 0; i < 2; ++i) {
        d_h_[i].resize({L, B, H});
        if (w.decoder.cell == CellType::lstm) d_c_[i].resize({L, B, H});
    }
    if (w.decoder.kind == DecoderKind::luong && w.decoder.feed_size() > 0)
        d_feed0_.resize({B, H}, false);
    int cur = 0;  // d_h_[cur] ends as d loss / d s_0
    if (opt.decoder_backward == DecoderBackwardPath::per_step) {
        NZ_CHECK(!split_, "seq2seq: the per-step decoder backward needs a per-step forward");
        cur = decoder_steps_backward(T, nullptr);
    } else {
        // weight gradients in chunks of ≈ decoder_chunk_rows rows (K = chunk·B), not per step
        SequenceBackward pass(w.decoder, w.attention, src_,
                              {.steps = std::span<const DecoderStepCache>(steps_.data(), T),
                               .emb = emb_,
                               .h_all = h_all_,
                               .c_all = c_all_,
                               .out = out_,
                               .outputs = split_ ? &outputs_cache_ : nullptr},
                              {.d_emb = d_emb_, .d_enc_out = d_enc_out_, .d_keys = d_keys_},
                              opt.decoder_chunk_rows);
        // split: d s_t of the outputs (combine + w.attention) of every step; then the cells alone
        if (split_) pass.outputs_backward(d_out_);
        cur = decoder_steps_backward(T, &pass);
        pass.finish();
    }
    if (cfg_.copy_attention)  // the gate read ẽ_t
        kernels::axpy(d_emb_.numel(), 1.0f, copy_d_e_.data(), d_emb_.data());
    // ẽ = e ⊙ m  =>  d_e = d_ẽ ⊙ m
    if (const ConstTensorView m = mask_of(drop_, &DropoutMasks::tgt_emb); !absent(m))
        apply_dropout_mask(d_emb_, m);
    w.decoder.embedding.backward(d_emb_, inputs_);
    // d_h_[cur] = d loss / d s_0 (c_0 = 0 is a constant)
    d_enc_final_.h.resize(enc_cache_.final.h.shape());
    d_enc_final_.c = Tensor(Shape{0});
    w.bridge.backward(d_h_[cur], src_.enc_out, enc_cache_.final, batch.src_lengths, bridge_cache_,
                      d_enc_out_, d_enc_final_);
    w.attention.precompute_backward(src_.enc_out, d_keys_, d_enc_out_);
    // H̃ = H ⊙ m  =>  d_H = d_H̃ ⊙ m
    if (const ConstTensorView m = mask_of(drop_, &DropoutMasks::enc_out); !absent(m))
        apply_dropout_mask(d_enc_out_, m);
    w.encoder.backward(batch.src, d_enc_out_, d_enc_final_, enc_cache_,
                       mask_of(drop_, &DropoutMasks::src_emb));
}

int TrainPass::decoder_steps_backward(int T, SequenceBackward* pass) {
    Seq2Seq& w = trainee();  // the gradients are the model's
    const bool lstm = w.decoder.cell == CellType::lstm;
    const bool feeding = w.decoder.kind == DecoderKind::luong && w.decoder.feed_size() > 0;
    // d_h_[cur] = d loss / d h_all[t+1] (the carry from later steps), d_h_[nxt] receives
    // d / d h_all[t]
    int cur = 0;
    for (int t = T - 1; t >= 0; --t) {
        const int nxt = 1 - cur, n = active_[static_cast<std::size_t>(t)];  // the step's rows
        d_h_[nxt].zero();
        if (lstm) d_c_[nxt].zero();
        const TensorView d_c_cur = lstm ? state_rows(d_c_[cur], n) : TensorView();
        const TensorView d_c_nxt = lstm ? state_rows(d_c_[nxt], n) : TensorView();
        const TensorView d_h_cur = state_rows(d_h_[cur], n), d_h_nxt = state_rows(d_h_[nxt], n);
        if (cfg_.copy_attention) {  // the gate read s_t, the top layer of h_all[t+1]
            const TensorView d_top = d_h_[cur].select(w.decoder.L - 1);
            kernels::axpy(d_top.numel(), 1.0f, copy_d_s_.select(t).data(), d_top.data());
        }
        TensorView d_feed;
        if (feeding) {
            if (t == 0) d_feed0_.zero();
            d_feed = (t > 0 ? d_out_.select(t - 1) : d_feed0_.view()).slice(0, n);  // s̃_{t-1}
        }
        if (terms_on_) terms_.before_step_backward(w.attention, t);
        const TensorView d_out = d_out_.select(t).slice(0, n);
        if (pass == nullptr)
            w.decoder.step_backward(
                t, d_out, emb_.select(t).slice(0, n), state_rows(h_all_.select(t), n),
                state_rows(sel(c_all_, t), n), state_rows(h_all_.select(t + 1), n),
                state_rows(sel(c_all_, t + 1), n), out_.select(t).slice(0, n), src_, w.attention,
                steps_[t], d_h_cur, d_c_cur, d_h_nxt, d_c_nxt, d_feed, d_emb_.select(t).slice(0, n),
                d_enc_out_, d_keys_);
        else if (split_)
            pass->cells_step(t, d_h_cur, d_c_cur, d_h_nxt, d_c_nxt);
        else
            pass->step(t, d_out, d_h_cur, d_c_cur, d_h_nxt, d_c_nxt, d_feed);
        if (terms_on_) terms_.after_step_backward(w.attention, t);
        cur = nxt;
    }
    return cur;
}

const DropoutMasks* TrainPass::train_masks(const Batch& batch, const TrainOptions& opt, Rng& rng) {
    const int B = batch.B, S = batch.S, T = batch.T, E = cfg_.embedding_size;
    const int C = m_.encoder.output_size(), D = m_.decoder.output_size();
    constexpr int kSites = 5;
    const Shape shapes[kSites] = {{B, S, E}, {B, S, C}, {T, B, E}, {T, B, D}, {T, B, S}};
    Tensor DropoutMasks::*const sites[kSites] = {&DropoutMasks::src_emb, &DropoutMasks::enc_out,
                                                 &DropoutMasks::tgt_emb, &DropoutMasks::dec_out,
                                                 &DropoutMasks::attention};
    const char* const names[kSites] = {"src_emb", "enc_out", "tgt_emb", "dec_out", "attention"};
    if (opt.masks != nullptr) {
        for (int i = 0; i < kSites; ++i) {
            const Tensor& m = opt.masks->*sites[i];
            NZ_CHECK(absent(m.view()) || m.shape() == shapes[i],
                     "train_step: dropout mask {} is {}, the batch needs {}", names[i],
                     m.shape().str(), shapes[i].str());
        }
        return opt.masks;
    }
    const DropoutOptions& d = opt.dropout;
    const float p[kSites] = {d.embedding, d.encoder_output, d.embedding, d.decoder_output,
                             d.attention};
    const int axis[kSites] = {1, 1, 0, 0, 0};  // the sequence axis of each mask (per_sequence)
    bool any = false;
    for (int i = 0; i < kSites; ++i) {
        NZ_CHECK(p[i] >= 0.0f && p[i] < 1.0f, "train_step: dropout {} must be in [0, 1), got {}",
                 names[i], p[i]);
        Tensor& m = masks_.*sites[i];
        if (p[i] == 0.0f) {
            m.resize({0});
            continue;
        }
        m.resize(shapes[i], false);
        draw_dropout_mask(m, p[i], rng, d.per_sequence ? axis[i] : -1);
        any = true;
    }
    return any ? &masks_ : nullptr;
}

LossStats TrainPass::train_step(const Batch& given, const TrainOptions& opt, Rng& rng) {
    NZ_CHECK(m_.param_mode() == ParamMode::training,
             "cannot train a model loaded for inference (no gradients): load it for training");
    NZ_CHECK_USAGE(m_.precision() == Precision::fp32,
                   "cannot train a model running in {}: its packed weights are for inference",
                   precision_name(m_.precision()));
    const DropoutMasks* masks = train_masks(given, opt, rng);
    // longest targets first (the same masks per sentence), so that padded rows can be skipped
    const Batch& batch = sort_rows(given, opt, masks);
    // guided alignment reads every step's α: the per-step attention (no split outputs)
    forward_batch(batch, opt.sampling_prob, rng, Mode::train,
                  opt.decoder_backward == DecoderBackwardPath::sequence &&
                      opt.guided_alignment_weight == 0.0f,
                  masks, can_skip_rows(opt));
    const SoftmaxXentOptions xo{.ignore_index = cfg_.special_ids.pad,
                                .label_smoothing = opt.label_smoothing,
                                .chunk_rows = opt.chunk_rows};
    if (!xent_ || xent_->options().label_smoothing != xo.label_smoothing ||
        xent_->options().chunk_rows != xo.chunk_rows)
        xent_ = std::make_unique<SoftmaxXent>(xo);
    const int T = batch.T, B = batch.B, D = m_.decoder.output_size();
    const int64_t tokens = count_targets(targets_, xo.ignore_index);
    const float scale = opt.grad_scale != 0
                            ? opt.grad_scale
                            : (tokens > 0 ? 1.0f / static_cast<float>(tokens) : 0.0f);
    d_out_.resize({T, B, D});
    // the generator reads o_t ⊙ m (dec_out dropout), else o_t
    const ConstTensorView dec_mask = mask_of(drop_, &DropoutMasks::dec_out);
    if (!absent(dec_mask)) {
        gen_in_.resize({T, B, D}, false);
        gen_in_.copy_from(out_);
        apply_dropout_mask(gen_in_, dec_mask);
    }
    const TensorView gen_in = absent(dec_mask) ? out_.view() : gen_in_.view();
    LossStats stats;
    if (cfg_.copy_attention) {
        stats = copy_loss(batch, scale, true, {}, gen_in, opt.label_smoothing);
    } else {
        Seq2Seq& w = trainee();
        Tensor& d_W =
            cfg_.tie_target_embeddings ? w.decoder.embedding.grad.weight : w.generator.grad.weight;
        const XentStats st = xent_->forward_backward(
            gen_in.reshape({int64_t{T} * B, D}), m_.generator_weight(), m_.generator.params.bias,
            targets_, scale, d_out_.reshape({int64_t{T} * B, D}), d_W, w.generator.grad.bias);
        stats = {st.loss, st.tokens, st.correct};
    }
    if (!absent(dec_mask)) apply_dropout_mask(d_out_, dec_mask);  // d_o = d_õ ⊙ m
    attention_terms_forward(batch, opt, scale, stats);
    backward_batch(batch, opt);
    terms_on_ = false;
    return stats;
}

LossStats TrainPass::eval_loss(const Batch& batch, float label_smoothing) {
    Rng unused(0);
    forward_batch(batch, 0.0f, unused, Mode::eval);
    if (cfg_.copy_attention) return copy_loss(batch, 1.0f, false, {}, {}, label_smoothing);
    const SoftmaxXentOptions xo{.ignore_index = cfg_.special_ids.pad,
                                .label_smoothing = label_smoothing};
    if (!xent_ || xent_->options().label_smoothing != label_smoothing)
        xent_ = std::make_unique<SoftmaxXent>(xo);
    const int T = batch.T, B = batch.B, D = m_.decoder.output_size();
    const XentStats st = xent_->forward(out_.reshape({int64_t{T} * B, D}), m_.generator_weight(),
                                        m_.generator.params.bias, targets_);
    return {st.loss, st.tokens, st.correct};
}

void TrainPass::score(const Batch& batch, std::span<double> out) {
    NZ_CHECK(static_cast<int>(out.size()) == batch.B, "score: {} outputs for a batch of {}",
             out.size(), batch.B);
    Rng unused(0);
    forward_batch(batch, 0.0f, unused, Mode::eval);
    if (cfg_.copy_attention) {
        copy_loss(batch, 1.0f, false, out);
        return;
    }
    const int B = batch.B, T = batch.T, V = cfg_.tgt_vocab_size, D = m_.decoder.output_size();
    // log-probs of chunks of time-major rows (one GEMM per chunk of up to 256 rows, not per step)
    const int64_t rows = int64_t{T} * B, chunk = std::min<int64_t>(rows, 256);
    logits_.resize({chunk, V}, false);
    const TensorView all = out_.reshape({rows, D});
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = std::min(rows, r0 + chunk);
        const TensorView lp = logits_.slice(0, r1 - r0);
        output_log_probs(all.slice(r0, r1), m_.generator_weight(), m_.generator.params.bias, lp);
        for (int64_t r = r0; r < r1; ++r) {  // row r = (t, b) with t = r / B, b = r % B
            const int y = targets_[r];
            if (y != cfg_.special_ids.pad) out[r % B] += lp.at(r - r0, y);
        }
    }
}

}  // namespace nazar
