// The decoder's whole-sequence backward (sequence_backward.h).
#include "nazar/models/sequence_backward.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/models/row_helpers.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nazar {

namespace {

ConstTensorView at_or_empty(ConstTensorView x, int t) {
    return x.ndim() == 0 || x.numel() == 0 ? ConstTensorView() : x.select(t);
}

// The first n rows of a step's (L, N, H) states (L = 1 when n < N: then they are contiguous).
ConstTensorView state_rows(ConstTensorView x, int n) {
    if (x.ndim() == 0 || x.numel() == 0 || n == x.dim(1)) return x;
    return ConstTensorView(x.data(), Shape{1, n, x.dim(2)});
}

}  // namespace

SequenceBackward::SequenceBackward(Decoder& decoder, Attention& attention, const EncodedSource& src,
                                   const DecoderSequence& fwd, const DecoderSequenceGrads& grads,
                                   int chunk_rows)
    : dec_(decoder), attention_(attention), src_(src), fwd_(fwd), grads_(grads) {
    const Decoder& d = decoder;
    const ConstTensorView h_all = fwd.h_all;
    T_ = h_all.dim(0) - 1;
    N_ = h_all.ndim() == 4 ? h_all.dim(2) : 0;
    NZ_CHECK(T_ > 0 && N_ > 0, "decoder backward: h_all {} needs (T+1, L, N, H) with T, N > 0",
             h_all.shape().str());
    const int T = T_, N = N_;
    NZ_CHECK_SHAPE(h_all, {T + 1, d.L, N, d.H});
    if (d.cell == CellType::lstm) NZ_CHECK_SHAPE(fwd.c_all, {T + 1, d.L, N, d.H});
    NZ_CHECK_SHAPE(fwd.emb, {T, N, d.E});
    NZ_CHECK_SHAPE(fwd.out, {T, N, d.output_size()});
    NZ_CHECK_SHAPE(grads.d_emb, {T, N, d.E});
    NZ_CHECK(static_cast<int>(fwd.steps.size()) >= T, "decoder backward: {} step caches for T = {}",
             fwd.steps.size(), T);
    NZ_CHECK(fwd.outputs == nullptr || d.can_split_outputs(),
             "decoder backward: split outputs need Luong, no input feeding, timing after");
    if (fwd.outputs != nullptr) NZ_CHECK_SHAPE(fwd.outputs->comb, {T, N, d.H + d.C});
    // chunks of ≈ chunk_rows rows: K large enough for an efficient weight-gradient GEMM, buffers
    // independent of T (memory: they are (chunk, N, ·), not (T, N, ·))
    NZ_CHECK(chunk_rows >= 1, "decoder: chunk_rows must be >= 1, got {}", chunk_rows);
    chunk_ = std::clamp((chunk_rows + N - 1) / N, 1, T);
    next_t_ = T - 1;
    rows_.assign(static_cast<std::size_t>(T), N);
    std::swap(buf_, dec_.seq_buffers_);  // the pass owns them until its destructor
    try {
        size_buffers();
    } catch (...) {
        std::swap(buf_, dec_.seq_buffers_);
        throw;
    }
}

// Hands the buffers back. Unflushed rows are dropped: nothing of this pass stays in the decoder.
SequenceBackward::~SequenceBackward() {
    std::swap(buf_, dec_.seq_buffers_);
}

void SequenceBackward::size_buffers() {
    const Decoder& d = dec_;
    const int GH = d.gate_size(), CH = chunk_, N = N_;
    buf_.d_gi.resize(d.L);
    buf_.d_gh.resize(d.L);
    for (int l = 0; l < d.L; ++l) {  // every step writes its whole (N, ·) blocks: no zeroing
        buf_.d_gi[l].resize({CH, N, GH}, false);
        if (d.cell == CellType::gru || d.layer_norm()) buf_.d_gh[l].resize({CH, N, GH}, false);
    }
    if (d.kind == DecoderKind::luong) buf_.d_z.resize({CH, N, d.H}, false);
    const AttentionConfig& ac = attention_.cfg;
    const bool additive = ac.score == ScoreKind::additive || ac.score == ScoreKind::concat;
    buf_.d_u.resize(additive ? Shape{CH, N, ac.attention_size} : Shape{0}, false);
    buf_.d_pre.resize(ac.local == LocalMode::predictive ? Shape{CH, N, ac.position_size} : Shape{0},
                      false);
}

void SequenceBackward::check_alive(const char* what) const {
    NZ_CHECK(next_t_ != kFailed,
             "decoder backward: {} after a call that threw; the pass can only be destroyed", what);
    NZ_CHECK(!finished_, "decoder backward: {} after finish()", what);
}

void SequenceBackward::begin_step(int t, const char* what) {
    NZ_CHECK(t == next_t_,
             "decoder backward: {}({}) out of order: expected step {} (steps go T−1 … 0 = {} … 0, "
             "each once)",
             what, t, next_t_, T_ - 1);
    next_t_ = kFailed;  // until the step completes
}

int SequenceBackward::begin_rows(int t, int n) {
    NZ_CHECK(n >= 1 && n <= N_ && (n == N_ || dec_.L == 1),
             "decoder backward: step {} on {} rows of {} (fewer rows need one layer, L = {})", t, n,
             N_, dec_.L);
    rows_[static_cast<std::size_t>(t)] = n;
    return n;
}

DeferredStep SequenceBackward::deferred(int t, bool with_query, int n) {
    DeferredStep def;
    def.d_gi = buf_.d_gi;
    def.d_gh = buf_.d_gh;
    def.row = t % chunk_;
    if (dec_.kind == DecoderKind::luong) def.d_z = buf_.d_z.select(def.row).slice(0, n);
    if (with_query && attention_.has_query_weights()) {
        query_ = AttentionQueryGrad{};
        if (!buf_.d_u.empty()) query_.d_u = buf_.d_u.select(def.row).slice(0, n);
        if (!buf_.d_pre.empty()) query_.d_pre = buf_.d_pre.select(def.row).slice(0, n);
        def.query = &query_;
    }
    return def;
}

void SequenceBackward::step(int t, ConstTensorView d_out, TensorView d_h_new, TensorView d_c_new,
                            TensorView d_h_prev, TensorView d_c_prev, TensorView d_feed_prev) {
    check_alive("step");
    NZ_CHECK(fwd_.outputs == nullptr,
             "decoder backward: step({}) on split outputs; use outputs_backward, then cells_step",
             t);
    begin_step(t, "step");
    Decoder& d = dec_;
    const int N = begin_rows(t, d_out.ndim() == 2 ? d_out.dim(0) : 0), L = d.L;
    NZ_CHECK_SHAPE(d_out, {N, d.output_size()});
    NZ_CHECK_SHAPE(d_h_new, {L, N, d.H});
    NZ_CHECK_SHAPE(d_h_prev, {L, N, d.H});
    const DeferredStep def = deferred(t, true, N);
    const DecoderStepCache& cache = fwd_.steps[t];
    const TensorView d_emb = grads_.d_emb.select(t).slice(0, N);
    d.d_ctx_.resize({N, d.C});  // zeroed: d c_t collects the output, feed and attention paths
    d.output_step_backward(d_out, fwd_.emb.select(t).slice(0, N),
                           state_rows(fwd_.h_all.select(t + 1), N), fwd_.out.select(t).slice(0, N),
                           src_, attention_, cache, d_h_new, d.d_ctx_, d_emb, grads_.d_enc_out,
                           grads_.d_keys, &def);
    d.cells_step_backward(state_rows(fwd_.h_all.select(t), N),
                          state_rows(at_or_empty(fwd_.c_all, t), N), src_, attention_, cache,
                          d_h_new, d_c_new, d.d_ctx_, d_h_prev, d_c_prev, d_feed_prev, d_emb,
                          grads_.d_enc_out, grads_.d_keys, &def);
    // steps go back from T−1, so step t0 = t closes the chunk [t0, t0 + chunk): flush it
    if (t % chunk_ == 0) {
        const int t1 = std::min(T_, t + chunk_);
        flush_cells(t, t1);
        if (def.query != nullptr) flush_attention(t, t1);
    }
    next_t_ = t - 1;
}

void SequenceBackward::cells_step(int t, TensorView d_h_new, TensorView d_c_new,
                                  TensorView d_h_prev, TensorView d_c_prev) {
    check_alive("cells_step");
    NZ_CHECK(outputs_done_, "decoder backward: cells_step({}) needs outputs_backward first", t);
    begin_step(t, "cells_step");
    Decoder& d = dec_;
    const int N = begin_rows(t, d_h_new.ndim() == 3 ? d_h_new.dim(1) : 0), L = d.L;
    NZ_CHECK_SHAPE(d_h_new, {L, N, d.H});
    NZ_CHECK_SHAPE(d_h_prev, {L, N, d.H});
    // o_t's and the attention's d s_t (outputs_backward, all N rows; those past N are 0) joins
    // the carry from step t+1
    const TensorView d_s = d_h_new.select(L - 1);
    kernels::axpy(d_s.numel(), 1.0f, buf_.d_s_seq.select(t).data(), d_s.data());
    const DeferredStep def = deferred(t, false, N);  // the attention ran in outputs_backward
    d.d_ctx_.resize({N, d.C});
    d.cells_step_backward(
        state_rows(fwd_.h_all.select(t), N), state_rows(at_or_empty(fwd_.c_all, t), N), src_,
        attention_, fwd_.steps[t], d_h_new, d_c_new, d.d_ctx_, d_h_prev, d_c_prev, TensorView(),
        grads_.d_emb.select(t).slice(0, N), grads_.d_enc_out, grads_.d_keys, &def);
    if (t % chunk_ == 0) flush_cells(t, std::min(T_, t + chunk_));
    next_t_ = t - 1;
}

void SequenceBackward::outputs_backward(ConstTensorView d_out) {
    check_alive("outputs_backward");
    NZ_CHECK(fwd_.outputs != nullptr,
             "decoder outputs_backward: the forward did not split the outputs (outputs_forward)");
    NZ_CHECK(!outputs_done_ && next_t_ == T_ - 1,
             "decoder outputs_backward: once, before the first cells_step");
    const Decoder& d = dec_;
    const int T = T_, N = N_, H = d.H, C = d.C;
    const int64_t M = int64_t{T} * N;
    NZ_CHECK_SHAPE(d_out, {T, N, H});
    next_t_ = kFailed;  // until the outputs are done
    // s̃ = tanh(z), z = W_c [s; c]  =>  d_z = d_s̃ ⊙ (1 − s̃²);  d_s = d_z W_c[:, :H], d_c = d_z
    // W_c[:, H:] (one GEMM each over all T·N rows; grad.W_c in finish)
    buf_.d_z_seq.resize({T, N, H}, false);
    decoder_rows::tanh_backward(d_out, fwd_.out, buf_.d_z_seq);
    buf_.d_ctx_seq.resize({T, N, C}, false);
    buf_.d_s_seq.resize({T, N, H}, false);
    const TensorView d_s = buf_.d_s_seq;
    const float* Wc = d.combine.params.weight.data();
    const std::vector<int>& rows = fwd_.outputs->rows;  // the combine's active rows, or all
    if (rows.empty()) {
        gemm_raw(false, false, static_cast<int>(M), H, H, 1.0f, buf_.d_z_seq.data(), H, Wc, H + C,
                 0.0f, d_s.data(), H);
        gemm_raw(false, false, static_cast<int>(M), C, H, 1.0f, buf_.d_z_seq.data(), H, Wc + H,
                 H + C, 0.0f, buf_.d_ctx_seq.data(), C);
    } else {  // the same two products on the packed active rows (0 on the others)
        decoder_rows::pack_steps(buf_.d_z_seq, rows, buf_.d_z_packed);
        const int R = buf_.d_z_packed.dim(0);
        buf_.gather.resize({R, std::max(H, C)}, false);
        gemm_raw(false, false, R, H, H, 1.0f, buf_.d_z_packed.data(), H, Wc, H + C, 0.0f,
                 buf_.gather.data(), H);
        decoder_rows::unpack_steps(TensorView(buf_.gather.data(), Shape{R, H}), rows, d_s);
        gemm_raw(false, false, R, C, H, 1.0f, buf_.d_z_packed.data(), H, Wc + H, H + C, 0.0f,
                 buf_.gather.data(), C);
        decoder_rows::unpack_steps(TensorView(buf_.gather.data(), Shape{R, C}), rows,
                                   buf_.d_ctx_seq);
    }
    // the attention read q_t = s_t:  d_s_t += d_query, per step in the order the interleaved
    // backward uses (t = T−1 … 0)
    if (attention_.can_batch_steps()) {  // no query-side weights: nothing deferred
        buf_.att.resize(T);
        for (int t = 0; t < T; ++t) buf_.att[t] = &fwd_.steps[t].attention;
        attention_.backward_steps(buf_.d_ctx_seq, decoder_rows::top_states(fwd_.h_all, buf_.q_seq),
                                  src_.keys, src_.enc_out, src_.lengths, buf_.att, d_s,
                                  grads_.d_keys, grads_.d_enc_out);
    } else {
        for (int t = T - 1; t >= 0; --t) {
            const DeferredStep def = deferred(t, true, N);
            attention_.backward(buf_.d_ctx_seq.select(t), fwd_.h_all.select(t + 1).select(d.L - 1),
                                src_.keys, src_.enc_out, src_.lengths, fwd_.steps[t].attention,
                                d_s.select(t), grads_.d_keys, grads_.d_enc_out, def.query);
            if (def.query != nullptr && t % chunk_ == 0)
                flush_attention(t, std::min(T, t + chunk_));
        }
    }
    outputs_done_ = true;
    next_t_ = T - 1;
}

void SequenceBackward::finish() {
    NZ_CHECK(!finished_, "decoder backward: finish() twice");
    check_alive("finish");
    NZ_CHECK(next_t_ == -1, "decoder backward: finish() before steps {} … 0 were stepped back",
             next_t_);
    // split outputs: grad.W_c += d_zᵀ [s; c] over all T·N rows (the chunks flushed the rest)
    if (outputs_done_) {
        const int64_t M = int64_t{T_} * N_;
        const int H = dec_.H, C = dec_.C;
        if (fwd_.outputs->rows.empty())
            dec_.combine.backward(buf_.d_z_seq.reshape({M, H}),
                                  fwd_.outputs->comb.reshape({M, H + C}), TensorView());
        else  // the active rows, packed alike
            dec_.combine.backward(buf_.d_z_packed, fwd_.outputs->packed, TensorView());
    }
    finished_ = true;
}

bool SequenceBackward::full(int t0, int t1) const {
    for (int t = t0; t < t1; ++t)
        if (rows_[static_cast<std::size_t>(t)] != N_) return false;
    return true;
}

TensorView SequenceBackward::pack(Tensor& buf, int t0, int t1) {
    const int64_t w = buf.dim(2);
    float* base = buf.data();
    int64_t r = 0;
    for (int t = t0; t < t1; ++t) {
        const int64_t from = int64_t{t - t0} * N_, n = rows_[static_cast<std::size_t>(t)];
        if (r != from) std::memmove(base + r * w, base + from * w, sizeof(float) * n * w);
        r += n;
    }
    return TensorView(base, Shape{r, w});
}

template <class AtStep>
TensorView SequenceBackward::gather_steps(int t0, int t1, const AtStep& at_step) {
    const int w = at_step(t0).dim(1);
    buf_.gather.resize({t1 - t0, N_, w}, false);
    std::vector<int64_t>& first = gather_rows_;  // step t's first row in the buffer
    first.assign(static_cast<std::size_t>(t1 - t0) + 1, 0);
    for (int t = t0; t < t1; ++t)
        first[static_cast<std::size_t>(t - t0) + 1] =
            first[static_cast<std::size_t>(t - t0)] + rows_[static_cast<std::size_t>(t)];
    const int64_t r = first.back();
    const auto copy = [&](int64_t s0, int64_t s1) {
        for (int64_t s = s0; s < s1; ++s) {
            const int t = t0 + static_cast<int>(s);
            std::memcpy(buf_.gather.data() + first[static_cast<std::size_t>(s)] * w,
                        at_step(t).data(), sizeof(float) * rows_[static_cast<std::size_t>(t)] * w);
        }
    };
    // a chunk of steps' inputs (16 x 64 x 768 floats: 3 MB) over the pool
    if (r * w >= kParallelCopyFloats)
        parallel_for(t1 - t0, 1, copy);
    else
        copy(0, t1 - t0);
    return TensorView(buf_.gather.data(), Shape{r, w});
}

ConstTensorView SequenceBackward::states(int l, int t0, int t1, int q0) {
    if (dec_.L == 1 && full(t0, t1))  // contiguous
        return fwd_.h_all.slice(t0 + q0, t1 + q0).reshape({int64_t{t1 - t0} * N_, dec_.H});
    return gather_steps(t0, t1, [&](int t) { return fwd_.h_all.select(t + q0).select(l); });
}

void SequenceBackward::flush_cells(int t0, int t1) {
    Decoder& d = dec_;
    const int GH = d.gate_size(), I0 = d.E + d.feed_size();
    const auto params = [&](int l) -> RNNCellParams& {
        return d.cell == CellType::gru ? d.gru[l].params : d.lstm[l].params;
    };
    // the chunk's rows: step t's rows_[t] in time order (all N when no step skipped rows)
    const TensorView d_gi0 = pack(buf_.d_gi[0], t0, t1);
    const int64_t M = d_gi0.dim(0);
    // x0 = [e ; f], gi = x0 W_ihᵀ + …  =>  d_e += d_gi W_e   (W_e = W_ih[:, :E]); one GEMM when
    // the rows match d_emb's, else per step
    const float* W_e = params(0).weight_ih.data();
    if (full(t0, t1))
        gemm_raw(false, false, static_cast<int>(M), d.E, GH, 1.0f, d_gi0.data(), GH, W_e, I0, 1.0f,
                 grads_.d_emb.select(t0).data(), d.E);
    else
        for (int t = t0, r = 0; t < t1; r += rows_[static_cast<std::size_t>(t)], ++t)
            gemm_raw(false, false, rows_[static_cast<std::size_t>(t)], d.E, GH, 1.0f,
                     d_gi0.data() + int64_t{r} * GH, GH, W_e, I0, 1.0f,
                     grads_.d_emb.select(t).data(), d.E);
    for (int l = 0; l < d.L; ++l) {
        RNNCellParams& g = d.cell == CellType::gru ? d.gru[l].grad : d.lstm[l].grad;
        // gi = x W_ihᵀ + b_ih  =>  grad.W_ih += Σ_t d_gi[t]ᵀ x[t];  grad.b_ih += Σ_t Σ_rows d_gi[t]
        const TensorView d_gi = l == 0 ? d_gi0 : pack(buf_.d_gi[l], t0, t1);
        const TensorView x = gather_steps(t0, t1, [&](int t) {
            return l == 0 ? fwd_.steps[t].x0.view() : fwd_.steps[t].layer_in[l].view();
        });
        cell_project_input_backward(params(l), g, d_gi, x, TensorView());
        // gh = h W_hhᵀ + b_hh  =>  grad.W_hh += Σ_t d_gh[t]ᵀ s^l_{t-1}   (LSTM without layer
        // norm: d_gh = d_gi)
        const TensorView d_gh =
            d.cell == CellType::gru || d.layer_norm() ? pack(buf_.d_gh[l], t0, t1) : d_gi;
        cell_add_recurrent_backward(params(l), g, d_gh, states(l, t0, t1), TensorView());
    }
    // s̃ = tanh(W_c [s; c])  =>  grad.W_c += Σ_t d_z[t]ᵀ [s_t; c_t]   (split outputs: finish)
    if (d.kind == DecoderKind::luong && fwd_.outputs == nullptr)
        d.combine.backward(
            pack(buf_.d_z, t0, t1),
            gather_steps(t0, t1, [&](int t) { return fwd_.steps[t].combine_in.view(); }),
            TensorView());
}

void SequenceBackward::flush_attention(int t0, int t1) {
    // attention query q_t = s_{t-1} (timing before) or s_t (after), top layer:
    //   grad.W_q += Σ_t d_u[t]ᵀ q_t;  grad.W_p += Σ_t d_pre[t]ᵀ q_t
    const auto rows = [&](Tensor& buf) { return buf.empty() ? TensorView() : pack(buf, t0, t1); };
    const int q0 = dec_.timing_before() ? 0 : 1;
    attention_.query_weights_backward(rows(buf_.d_u), rows(buf_.d_pre),
                                      states(dec_.L - 1, t0, t1, q0));
}

}  // namespace nazar
