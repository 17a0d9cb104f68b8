// Multi-layer (bi)directional GRU/LSTM over a right-padded batch (see rnn.h).
//
// Per layer-direction: one GEMM for the input projections of all T steps, then per step one
// W_hh GEMM and the fused gate kernel; backward mirrors it and does the weight gradients as
// one GEMM each over all steps (d_W_hh += Σ_t d_a[t]ᵀ h_prev[t] with the states stored
// contiguously). Everything is time-major inside: (T, B, ·).
#include "nazar/nn/rnn.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nazar {

// "Absent" = no data or no elements: a default-constructed Tensor/TensorView (whose shape () has
// numel 1, so empty() is false) or a (0)-shaped one.
static bool absent(ConstTensorView v) {
    return v.data() == nullptr || v.numel() == 0;
}

namespace {

// (B, T, C) batch-major <-> (T, B, C) time-major. `add` accumulates into dst.
void to_time_major(ConstTensorView src, TensorView dst) {
    const int B = src.dim(0), T = src.dim(1), C = src.dim(2);
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t)
            std::memcpy(dst.data() + (static_cast<int64_t>(t) * B + b) * C,
                        src.data() + (static_cast<int64_t>(b) * T + t) * C, sizeof(float) * C);
}

void to_batch_major(ConstTensorView src, TensorView dst, bool add) {
    const int T = src.dim(0), B = src.dim(1), C = src.dim(2);
    for (int t = 0; t < T; ++t)
        for (int b = 0; b < B; ++b) {
            const float* s = src.data() + (static_cast<int64_t>(t) * B + b) * C;
            float* d = dst.data() + (static_cast<int64_t>(b) * T + t) * C;
            if (add)
                for (int j = 0; j < C; ++j) d[j] += s[j];
            else
                std::memcpy(d, s, sizeof(float) * C);
        }
}

}  // namespace

RNN::RNN(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    NZ_CHECK(cfg.input_size > 0 && cfg.hidden_size > 0,
             "RNN: sizes must be positive, got input {} hidden {}", cfg.input_size,
             cfg.hidden_size);
    NZ_CHECK(cfg.num_layers >= 1, "RNN: num_layers must be >= 1, got {}", cfg.num_layers);
    NZ_CHECK(cfg.dropout >= 0.0f && cfg.dropout <= 1.0f, "RNN: dropout must be in [0, 1], got {}",
             cfg.dropout);
    const int D = directions();
    params.directions = grad.directions = D;
    for (int k = 0; k < cfg.num_layers; ++k)
        for (int d = 0; d < D; ++d) {
            const int in = k == 0 ? cfg.input_size : D * cfg.hidden_size;
            params.cells.push_back(
                make_rnn_cell_params(gates(), in, cfg.hidden_size, cfg.bias, &rng, mode));
            grad.cells.push_back(
                make_rnn_cell_params(gates(), in, cfg.hidden_size, cfg.bias, nullptr, mode));
        }
}

RNNState RNN::zero_state(int B) const {
    RNNState s;
    const int LD = cfg.num_layers * directions();
    s.h = Tensor({LD, B, cfg.hidden_size});
    if (cfg.cell == CellType::lstm) s.c = Tensor({LD, B, cfg.hidden_size});
    return s;
}

// Layer k, direction d (0 = forward in time, 1 = backward) of forward(): fills the direction's
// cache, its half of cache.layer_out[k] and its final state.
void RNN::forward_direction(int k, int d, const RNNState& initial, RNNState& final,
                            RNNCache& cache) const {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions(), G = gates();
    const bool lstm = cfg.cell == CellType::lstm;
    const std::span<const int> len(cache.lengths);
    const Tensor& X = cache.layer_in[k];  // (T, B, In)
    Tensor& Y = cache.layer_out[k];       // (T, B, D·H)
    const int idx = k * D + d;
    const bool fwd = d == 0;
    const RNNCellParams& P = params.cells[idx];
    RNNDirectionCache& dc = cache.dirs[idx];
    dc.h.resize({T + 1, B, H}, false);
    const int h0 = fwd ? 0 : T;
    if (absent(initial.h))
        dc.h.select(h0).zero();
    else
        dc.h.select(h0).copy_from(initial.h.select(idx));
    dc.gates.resize({T, B, G * H}, false);
    if (lstm) {
        dc.c.resize({T + 1, B, H}, false);
        if (absent(initial.c))
            dc.c.select(h0).zero();
        else
            dc.c.select(h0).copy_from(initial.c.select(idx));
        dc.tanh_c.resize({T, B, H}, false);
        cell_project_input(P, X, dc.gates);  // a = x W_ihᵀ + b_ih for all steps (one GEMM)
    } else {
        dc.gi.resize({T, B, G * H}, false);
        dc.gh_n.resize({T, B, H}, false);
        cell_project_input(P, X, dc.gi);  // gi for all steps (one GEMM)
        dc.gates.zero();                  // gh starts from 0 (+ b_hh + h W_hhᵀ per step)
    }
    if (B > kSmallGemmRows)
        refresh_weight_t(dc.whh_t, P.weight_hh);
    else
        dc.whh_t.reset();
    for (int s = 0; s < T; ++s) {
        const int t = fwd ? s : T - 1 - s;
        const int prev = fwd ? t : t + 1, next = fwd ? t + 1 : t;
        const StepMask mask{len, t};
        const TensorView a = dc.gates.select(t), hp = dc.h.select(prev), hn = dc.h.select(next);
        cell_add_recurrent(P, hp, a, weight_t_rows(dc.whh_t));
        if (lstm)
            lstm::gates_forward(hp, dc.c.select(prev), a, dc.tanh_c.select(t), hn,
                                dc.c.select(next), mask);
        else
            gru::gates_forward(dc.gi.select(t), hp, a, dc.gh_n.select(t), hn, mask);
        float* y = Y.data() + static_cast<int64_t>(t) * B * D * H + d * H;
        for (int b = 0; b < B; ++b, y += D * H) {
            if (mask.active(b))
                std::memcpy(y, hn.data() + static_cast<int64_t>(b) * H, sizeof(float) * H);
            else
                std::fill_n(y, H, 0.0f);
        }
    }
    final.h.select(idx).copy_from(dc.h.select(fwd ? T : 0));
    if (lstm) final.c.select(idx).copy_from(dc.c.select(fwd ? T : 0));
}

void RNN::forward(ConstTensorView x, std::span<const int> lengths, const RNNState& initial,
                  TensorView out, RNNState& final, RNNCache& cache, Rng& rng, Mode mode) const {
    NZ_CHECK(x.ndim() == 3 && x.dim(2) == cfg.input_size, "RNN::forward: x {} needs (B, T, {})",
             x.shape().str(), cfg.input_size);
    const int B = x.dim(0), T = x.dim(1), H = cfg.hidden_size, D = directions(), L = cfg.num_layers;
    const bool lstm = cfg.cell == CellType::lstm;
    NZ_CHECK_SHAPE(out, {B, T, D * H});
    NZ_CHECK(lengths.empty() || static_cast<int>(lengths.size()) == B,
             "RNN::forward: {} lengths for batch {}", lengths.size(), B);
    cache.lengths.assign(B, T);
    for (int b = 0; b < static_cast<int>(lengths.size()); ++b) {
        NZ_CHECK(lengths[b] >= 0 && lengths[b] <= T,
                 "RNN::forward: lengths[{}] = {} outside [0, {}]", b, lengths[b], T);
        cache.lengths[b] = lengths[b];
    }
    if (!absent(initial.h)) NZ_CHECK_SHAPE(initial.h, {L * D, B, H});
    if (!absent(initial.c)) {
        NZ_CHECK(lstm, "RNN::forward: an initial cell state was given to a GRU");
        NZ_CHECK_SHAPE(initial.c, {L * D, B, H});
    }
    cache.B = B;
    cache.T = T;
    cache.mode = mode;
    cache.layer_in.resize(L);
    cache.layer_out.resize(L);
    cache.dropout.resize(L);
    cache.dirs.resize(static_cast<std::size_t>(L) * D);
    final.h.resize({L * D, B, H}, false);
    if (lstm)
        final.c.resize({L * D, B, H}, false);
    else
        final.c.resize({0}, false);

    cache.layer_in[0].resize({T, B, cfg.input_size}, false);
    to_time_major(x, cache.layer_in[0]);
    const Dropout dropout({.p = cfg.dropout});
    for (int k = 0; k < L; ++k) {
        if (k > 0) {
            cache.layer_in[k].resize({T, B, D * H}, false);
            dropout.forward(cache.layer_out[k - 1], cache.layer_in[k], cache.dropout[k], rng, mode);
        }
        cache.layer_out[k].resize({T, B, D * H}, false);  // (T, B, D·H)
        for (int d = 0; d < D; ++d) forward_direction(k, d, initial, final, cache);
    }
    to_batch_major(cache.layer_out[L - 1], out, false);
}

// Layer k, direction d of backward(): from d_layer_out_ and d_final to the direction's
// parameter gradients, d_initial and (when need_d_in) d_layer_in_.
void RNN::backward_direction(int k, int d, const RNNState& d_final, const RNNCache& cache,
                             bool need_d_in, RNNState& d_initial) {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions();
    const bool lstm = cfg.cell == CellType::lstm;
    const std::span<const int> len(cache.lengths);
    const Tensor& X = cache.layer_in[k];  // (T, B, In)
    const int idx = k * D + d;
    const bool fwd = d == 0;
    const RNNCellParams& P = params.cells[idx];
    RNNCellParams& Pg = grad.cells[idx];
    const RNNDirectionCache& dc = cache.dirs[idx];
    if (absent(d_final.h))
        d_h_.zero();
    else
        d_h_.copy_from(d_final.h.select(idx));
    if (lstm) {
        if (absent(d_final.c))
            d_c_.zero();
        else
            d_c_.copy_from(d_final.c.select(idx));
    }
    // Steps in reverse processing order: forward direction t = T−1 … 0, backward 0 … T−1.
    for (int s = 0; s < T; ++s) {
        const int t = fwd ? T - 1 - s : s;
        const int prev = fwd ? t : t + 1;
        const StepMask mask{len, t};
        // d_h' = (from the later step) + d_out[t] of this direction
        const float* dy = d_layer_out_.data() + static_cast<int64_t>(t) * B * D * H + d * H;
        for (int b = 0; b < B; ++b)
            kernels::axpy(H, 1.0f, dy + static_cast<int64_t>(b) * D * H,
                          d_h_.data() + static_cast<int64_t>(b) * H);
        d_h_next_.zero();
        const ConstTensorView hp = dc.h.select(prev);
        const TensorView dgi = d_gi_.select(t);
        if (lstm) {
            d_c_next_.zero();
            lstm::gates_backward(d_h_, d_c_, dc.c.select(prev), dc.gates.select(t),
                                 dc.tanh_c.select(t), dgi, d_h_next_, d_c_next_, mask);
            // a = … + h W_hhᵀ   =>   d_h += d_a W_hh   (weight gradient after the loop)
            gemm(dgi, false, P.weight_hh, false, d_h_next_, 1.0f, 1.0f);
            std::swap(d_c_, d_c_next_);
        } else {
            const TensorView dgh = d_gh_.select(t);
            gru::gates_backward(d_h_, hp, dc.gates.select(t), dc.gh_n.select(t), dgi, dgh,
                                d_h_next_, mask);
            gemm(dgh, false, P.weight_hh, false, d_h_next_, 1.0f, 1.0f);
        }
        std::swap(d_h_, d_h_next_);
    }
    if (!absent(d_initial.h))
        kernels::axpy(B * H, 1.0f, d_h_.data(), d_initial.h.select(idx).data());
    if (lstm && !absent(d_initial.c))
        kernels::axpy(B * H, 1.0f, d_c_.data(), d_initial.c.select(idx).data());
    // d_W_hh += Σ_t d_a[t]ᵀ h_prev[t];  h_prev = h[0..T) (forward) or h[1..T] (backward)
    const ConstTensorView h_prev = dc.h.slice(fwd ? 0 : 1, fwd ? T : T + 1);
    cell_add_recurrent_backward(P, Pg, lstm ? d_gi_ : d_gh_, h_prev, TensorView());
    // d_W_ih += d_giᵀ X;  d_b_ih += Σ d_gi;  d_X += d_gi W_ih   (one GEMM each, all steps)
    cell_project_input_backward(P, Pg, d_gi_, X, need_d_in ? d_layer_in_.view() : TensorView());
}

void RNN::backward(ConstTensorView d_out, const RNNState& d_final, const RNNCache& cache,
                   TensorView d_x, RNNState& d_initial) {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions(), L = cfg.num_layers,
              G = gates();
    const bool lstm = cfg.cell == CellType::lstm;
    NZ_CHECK(
        static_cast<int>(cache.dirs.size()) == L * D && static_cast<int>(cache.lengths.size()) == B,
        "RNN::backward: the cache does not come from this RNN's forward");
    NZ_CHECK_SHAPE(d_out, {B, T, D * H});
    if (!absent(d_x)) NZ_CHECK_SHAPE(d_x, {B, T, cfg.input_size});
    if (!absent(d_final.h)) NZ_CHECK_SHAPE(d_final.h, {L * D, B, H});
    if (!absent(d_final.c)) NZ_CHECK_SHAPE(d_final.c, {L * D, B, H});
    if (!absent(d_initial.h)) NZ_CHECK_SHAPE(d_initial.h, {L * D, B, H});
    if (!absent(d_initial.c)) NZ_CHECK_SHAPE(d_initial.c, {L * D, B, H});
    const std::span<const int> len(cache.lengths);

    // The top layer's output gradient, time-major; padding outputs are constant 0: no gradient.
    d_layer_out_.resize({T, B, D * H}, false);
    to_time_major(d_out, d_layer_out_);
    for (int t = 0; t < T; ++t)
        for (int b = 0; b < B; ++b)
            if (t >= len[b]) d_layer_out_.select(t).select(b).zero();

    d_h_.resize({B, H}, false);
    d_h_next_.resize({B, H}, false);
    d_c_.resize({B, H}, false);
    d_c_next_.resize({B, H}, false);
    d_gi_.resize({T, B, G * H}, false);
    if (!lstm) d_gh_.resize({T, B, G * H}, false);
    const Dropout dropout({.p = cfg.dropout});
    for (int k = L - 1; k >= 0; --k) {
        const Tensor& X = cache.layer_in[k];  // (T, B, In)
        const int In = X.dim(2);
        const bool need_d_in = k > 0 || !absent(d_x);
        if (need_d_in) d_layer_in_.resize({T, B, In});  // zeroed; both directions add into it
        for (int d = 0; d < D; ++d) backward_direction(k, d, d_final, cache, need_d_in, d_initial);
        if (k > 0) {  // through the dropout between layer k−1 and k
            d_layer_out_.zero();
            dropout.backward(d_layer_in_, cache.dropout[k], d_layer_out_);
        } else if (!absent(d_x)) {
            to_batch_major(d_layer_in_, d_x, true);
        }
    }
}

}  // namespace nazar
