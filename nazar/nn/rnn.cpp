// Multi-layer (bi)directional GRU/LSTM over a right-padded batch (see rnn.h).
//
// Per layer-direction: one GEMM for the input projections of all real positions, then per step
// one W_hh GEMM and the fused gate kernel on the step's running rows; backward mirrors it and
// does the weight gradients as one GEMM each over all N packed rows (d_W_hh += Σ d_aᵀ h_prev
// with the states each row started from stored in the same layout). Everything is packed inside
// (packed_rows.h).
#include "nazar/nn/rnn.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/nn/absent.h"
#include "nazar/nn/layer_norm.h"
#include "nazar/nn/packed_rows.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace nazar {

RNN::RNN(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    NZ_CHECK(cfg.input_size > 0 && cfg.hidden_size > 0,
             "RNN: sizes must be positive, got input {} hidden {}", cfg.input_size,
             cfg.hidden_size);
    NZ_CHECK(cfg.num_layers >= 1, "RNN: num_layers must be >= 1, got {}", cfg.num_layers);
    NZ_CHECK(cfg.dropout >= 0.0f && cfg.dropout <= 1.0f, "RNN: dropout must be in [0, 1], got {}",
             cfg.dropout);
    NZ_CHECK(cfg.transition_depth >= 1 && (cfg.transition_depth == 1 || cfg.cell == CellType::gru),
             "RNN: transition_depth must be >= 1 (> 1 for GRU cells only), got {}",
             cfg.transition_depth);
    const int D = directions(), H = cfg.hidden_size;
    params.directions = grad.directions = D;
    for (int k = 0; k < cfg.num_layers; ++k)
        for (int d = 0; d < D; ++d) {
            const int in = k == 0 ? cfg.input_size : D * H;
            params.cells.push_back(
                make_rnn_cell_params(gates(), in, H, cfg.bias, &rng, mode, cfg.layer_norm));
            grad.cells.push_back(
                make_rnn_cell_params(gates(), in, H, cfg.bias, nullptr, mode, cfg.layer_norm));
            auto& tp = params.transitions.emplace_back();
            auto& tg = grad.transitions.emplace_back();
            for (int j = 1; j < cfg.transition_depth; ++j) {  // drawn after the cell's tensors
                tp.push_back(make_transition_params(H, cfg.bias, &rng, mode, cfg.layer_norm));
                tg.push_back(make_transition_params(H, cfg.bias, nullptr, mode, cfg.layer_norm));
            }
        }
}

RNNState RNN::zero_state(int B) const {
    RNNState s;
    const int LD = cfg.num_layers * directions();
    s.h = Tensor({LD, B, cfg.hidden_size});
    if (cfg.cell == CellType::lstm) s.c = Tensor({LD, B, cfg.hidden_size});
    return s;
}

// The buffers of one layer-direction's forward for N packed rows, and the input projections of
// all of them (one GEMM).
static void prepare_direction(const RNNCellParams& P, const Tensor& X, int64_t N, int B, int H,
                              int G, bool lstm, RNNDirectionCache& dc) {
    dc.h.resize({N + B, H}, false);
    dc.gates.resize({N, G * H}, false);
    // LSTM: a = x W_ihᵀ + b_ih for all rows (one GEMM); GRU: gi for all rows (one GEMM)
    if (lstm) {
        dc.c.resize({N + B, H}, false);
        dc.tanh_c.resize({N, H}, false);
    } else {
        dc.gi.resize({N, G * H}, false);
        dc.gh_n.resize({N, H}, false);
    }
    cell_project_input(P, X, lstm ? dc.gates.view() : dc.gi.view());
    if (P.layer_norm()) {  // gi = LN(x W_ihᵀ; γ_ih) + b_ih, all rows in one pass
        dc.ln_i.resize({N, G * H}, false);
        dc.rstd_i.resize({N, G}, false);
        dc.ln_h.resize({N, G * H}, false);
        dc.rstd_h.resize({N, G}, false);
        if (lstm) dc.gh.resize({B, G * H}, false);
        layer_norm::blocks_forward(lstm ? dc.gates.view() : dc.gi.view(), H, P.ln_weight_ih,
                                   P.bias_ih, dc.ln_i, dc.rstd_i);
    }
    refresh_weight_t_for_rows(dc.whh_t, P.weight_hh, B);
}

// One step's recurrent products for its n rows (forward_direction and infer_direction alike):
//   GRU:  a = (0 + b_hh) + h W_hhᵀ,   with layer_norm a = LN(h W_hhᵀ; γ_hh) + b_hh
//   LSTM: a += b_hh + h W_hhᵀ,        with layer_norm a += LN(h W_hhᵀ; γ_hh) + b_hh (via gh)
// xhat / rstd: the normalisation's values for backward, or empty (inference).
static void recurrent_step(const RNNCellParams& P, bool lstm, int H, ConstTensorView hp,
                           TensorView a, TensorView gh, WeightTRows whh, TensorView xhat = {},
                           TensorView rstd = {}) {
    const int n = hp.dim(0), GH = a.dim(1);
    const bool ln = P.layer_norm();
    if (lstm && ln) {
        gh.zero();
        cell_add_recurrent(P, hp, gh, whh);  // h W_hhᵀ (no bias with LN)
        layer_norm::blocks_forward(gh, H, P.ln_weight_hh, P.bias_hh, xhat, rstd);
        kernels::axpy(a.numel(), 1.0f, gh.data(), a.data());
    } else if (lstm) {
        cell_add_recurrent(P, hp, a, whh);
    } else {  // (0 + b_hh) + h W_hhᵀ, or h W_hhᵀ alone with LN (its shift is the bias)
        gemm_xwt_bias(n, GH, H, hp.data(), H, P.weight_hh.data(), H, whh,
                      ln || absent(P.bias_hh) ? nullptr : P.bias_hh.data(), a.data(), GH);
        if (ln) layer_norm::blocks_forward(a, H, P.ln_weight_hh, P.bias_hh, xhat, rstd);
    }
}

// Layer k, direction d (0 = forward in time, 1 = backward) of forward(): fills the direction's
// cache, its half of cache.layer_out[k] and its final state. Step t runs the sorted rows
// [0, n_t) (packed rows o = offset[t] …); the new states go, forward in time, to the next step's
// rows and to the final states of the rows ending at t, backward, to the rows of step t − 1
// (the final states after t = 0), where the rows starting at t − 1 get the initial state.
void RNN::forward_direction(int k, int d, const RNNState& initial, RNNState& final,
                            RNNCache& cache) const {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions(), G = gates();
    const int64_t N = cache.offset[static_cast<std::size_t>(T)];
    const bool lstm = cfg.cell == CellType::lstm, fwd = d == 0;
    const int idx = k * D + d;
    const RNNCellParams& P = params.cells[idx];
    RNNDirectionCache& dc = cache.dirs[idx];
    prepare_direction(P, cache.layer_in[k], N, B, H, G, lstm, dc);
    const std::vector<TransitionParams>& Ptr = params.transitions[idx];
    if (deep()) transition::prepare(Ptr, N, B, H, dc.tr);
    // (N, D·H), this direction's half; no rows at all (every source empty): no outputs
    float* const Y = N > 0 ? cache.layer_out[k].data() + d * H : nullptr;
    const WeightTRows whh = weight_t_rows(dc.whh_t);
    const ConstTensorView h_init = absent(initial.h) ? ConstTensorView() : initial.h.select(idx);
    const ConstTensorView c_init = absent(initial.c) ? ConstTensorView() : initial.c.select(idx);
    const std::span<const int> order(cache.order), rows(cache.rows);
    const auto start_rows = [&](int64_t at, int i0, int i1) {  // sorted rows [i0, i1) to `at`
        packed_rows::gather_states(h_init, order, i0, i1, dc.h.slice(at, at + i1 - i0));
        if (lstm) packed_rows::gather_states(c_init, order, i0, i1, dc.c.slice(at, at + i1 - i0));
    };
    const int n0 = T > 0 ? rows[0] : 0;
    start_rows(N + n0, n0, B);  // length 0: the final state is the initial one
    if (fwd) start_rows(0, 0, n0);
    int64_t o = 0;  // packed row of the step's first row
    // rows [i0, i1) of the step at packed row o: gates, new states to row `to`, outputs
    const auto cell_rows = [&](int i0, int i1, int64_t to) {
        if (i1 <= i0) return;
        const int64_t a = o + i0, b = o + i1;
        const TensorView hn = dc.h.slice(to, to + i1 - i0);
        if (deep())  // the step's states left by its transitions
            hn.copy_from(dc.tr.out.slice(a, b));
        else if (lstm)
            lstm::gates_forward(dc.h.slice(a, b), dc.c.slice(a, b), dc.gates.slice(a, b),
                                dc.tanh_c.slice(a, b), hn, dc.c.slice(to, to + i1 - i0));
        else
            gru::gates_forward(dc.gi.slice(a, b), dc.h.slice(a, b), dc.gates.slice(a, b),
                               dc.gh_n.slice(a, b), hn);
        for (int64_t r = a; r < b; ++r)
            std::memcpy(Y + r * D * H, hn.data() + (r - a) * H, sizeof(float) * H);
    };
    for (int s = 0; s < T; ++s) {
        const int t = fwd ? s : T - 1 - s;
        const int n = rows[t], n_next = t + 1 < T ? rows[t + 1] : 0;  // n_next: running at t + 1
        if (n == 0) continue;
        o = cache.offset[static_cast<std::size_t>(t)];
        if (!fwd) start_rows(o + n_next, n_next, n);  // rows whose last position is t
        if (P.layer_norm())  // and keep the normalisation's values for backward
            recurrent_step(P, lstm, H, dc.h.slice(o, o + n), dc.gates.slice(o, o + n),
                           lstm ? dc.gh.slice(0, n) : TensorView(), whh, dc.ln_h.slice(o, o + n),
                           dc.rstd_h.slice(o, o + n));
        else
            recurrent_step(P, lstm, H, dc.h.slice(o, o + n), dc.gates.slice(o, o + n), {}, whh);
        if (deep()) {  // the cell's new states into tr.h[0], then the transitions
            gru::gates_forward(dc.gi.slice(o, o + n), dc.h.slice(o, o + n),
                               dc.gates.slice(o, o + n), dc.gh_n.slice(o, o + n),
                               dc.tr.h[0].slice(o, o + n));
            transition::forward(Ptr, H, o, n, dc.tr);
        }
        if (fwd) {
            cell_rows(0, n_next, o + n);       // offset[t + 1]
            cell_rows(n_next, n, N + n_next);  // the rows ending at t: final states
        } else {
            cell_rows(0, n, t > 0 ? cache.offset[static_cast<std::size_t>(t) - 1] : N);
        }
    }
    packed_rows::set_states(dc.h.slice(N, N + B), order, final.h.select(idx));
    if (lstm) packed_rows::set_states(dc.c.slice(N, N + B), order, final.c.select(idx));
}

// forward_direction without the backward's per-step values: the projections of all N rows as
// one product into sc.proj, then per step the same W_hh product and gate kernel on the step's
// n rows, reading the states from sc.h (sorted row i = row i) and writing the next ones to
// sc.h_next (rows still running after the step) or sc.h_final (rows ending at it).
void RNN::infer_direction(int k, int d, const RNNState& initial, RNNState& final, RNNCache& cache,
                          RNNInferenceScratch& sc) const {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions(), G = gates();
    const int64_t N = cache.offset[static_cast<std::size_t>(T)];
    const bool lstm = cfg.cell == CellType::lstm, fwd = d == 0;
    const int idx = k * D + d;
    const RNNCellParams& P = params.cells[idx];
    sc.proj.resize({N, G * H}, false);
    cell_project_input(P, cache.layer_in[k], sc.proj);
    if (P.layer_norm())  // gi = LN(x W_ihᵀ; γ_ih) + b_ih, as forward_direction (â not kept)
        layer_norm::blocks_forward(sc.proj, H, P.ln_weight_ih, P.bias_ih);
    for (Tensor* t : {&sc.h, &sc.h_next, &sc.h_final}) t->resize({B, H}, false);
    if (lstm) {
        for (Tensor* t : {&sc.c, &sc.c_next, &sc.c_final, &sc.tanh_c}) t->resize({B, H}, false);
        if (P.layer_norm()) sc.gh.resize({B, G * H}, false);
    } else {
        sc.gates.resize({B, G * H}, false);
        sc.gh_n.resize({B, H}, false);
    }
    refresh_weight_t_for_rows(sc.whh_t, P.weight_hh, B);
    const std::vector<TransitionParams>& Ptr = params.transitions[idx];
    if (deep()) {
        transition::prepare(Ptr, 0, B, H, sc.tr);
        sc.tr_h.resize({B, H}, false);
    }
    float* const Y = N > 0 ? cache.layer_out[k].data() + d * H : nullptr;
    const WeightTRows whh = weight_t_rows(sc.whh_t);
    const ConstTensorView h_init = absent(initial.h) ? ConstTensorView() : initial.h.select(idx);
    const ConstTensorView c_init = absent(initial.c) ? ConstTensorView() : initial.c.select(idx);
    const std::span<const int> order(cache.order), rows(cache.rows);
    const auto start_rows = [&](Tensor& h, Tensor& c, int i0, int i1) {  // sorted rows [i0, i1)
        packed_rows::gather_states(h_init, order, i0, i1, h.slice(i0, i1));
        if (lstm) packed_rows::gather_states(c_init, order, i0, i1, c.slice(i0, i1));
    };
    const int n0 = T > 0 ? rows[0] : 0;
    start_rows(sc.h_final, sc.c_final, n0, B);  // length 0: the final state is the initial one
    if (fwd) start_rows(sc.h, sc.c, 0, n0);
    int64_t o = 0;  // packed row of the step's first row
    // rows [i0, i1) of the step: gates, new states to rows [i0, i1) of hn / cn, outputs
    const auto cell_rows = [&](int i0, int i1, Tensor& hn, Tensor& cn) {
        if (i1 <= i0) return;
        const TensorView h1 = hn.slice(i0, i1);
        if (deep())  // the step's states left by its transitions
            h1.copy_from(sc.tr_h.slice(i0, i1));
        else if (lstm)
            lstm::gates_forward(sc.h.slice(i0, i1), sc.c.slice(i0, i1),
                                sc.proj.slice(o + i0, o + i1), sc.tanh_c.slice(i0, i1), h1,
                                cn.slice(i0, i1));
        else
            gru::gates_forward(sc.proj.slice(o + i0, o + i1), sc.h.slice(i0, i1),
                               sc.gates.slice(i0, i1), sc.gh_n.slice(i0, i1), h1);
        for (int i = i0; i < i1; ++i)
            std::memcpy(Y + (o + i) * D * H, h1.data() + int64_t{i - i0} * H, sizeof(float) * H);
    };
    for (int s = 0; s < T; ++s) {
        const int t = fwd ? s : T - 1 - s;
        const int n = rows[t], n_next = t + 1 < T ? rows[t + 1] : 0;  // n_next: running at t + 1
        if (n == 0) continue;
        o = cache.offset[static_cast<std::size_t>(t)];
        if (!fwd) start_rows(sc.h, sc.c, n_next, n);  // rows whose last position is t
        recurrent_step(P, lstm, H, sc.h.slice(0, n),
                       lstm ? sc.proj.slice(o, o + n) : sc.gates.slice(0, n),
                       lstm && P.layer_norm() ? sc.gh.slice(0, n) : TensorView(), whh);
        if (deep()) {  // the cell's new states, then the transitions, in sc.tr_h
            const TensorView th = sc.tr_h.slice(0, n);
            gru::gates_forward(sc.proj.slice(o, o + n), sc.h.slice(0, n), sc.gates.slice(0, n),
                               sc.gh_n.slice(0, n), th);
            transition::infer(Ptr, H, th, sc.gates.slice(0, n), sc.gh_n.slice(0, n), sc.tr);
        }
        if (fwd) {
            cell_rows(0, n_next, sc.h_next, sc.c_next);
            cell_rows(n_next, n, sc.h_final, sc.c_final);  // the rows ending at t
        } else {
            cell_rows(0, n, t > 0 ? sc.h_next : sc.h_final, t > 0 ? sc.c_next : sc.c_final);
        }
        std::swap(sc.h, sc.h_next);
        if (lstm) std::swap(sc.c, sc.c_next);
    }
    packed_rows::set_states(sc.h_final, order, final.h.select(idx));
    if (lstm) packed_rows::set_states(sc.c_final, order, final.c.select(idx));
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
    const bool infer = mode == Mode::inference, side_by_side = D == 2 && B <= kSmallGemmRows;
    cache.dirs.resize(infer ? 0 : static_cast<std::size_t>(L) * D);
    cache.infer.resize(infer ? (side_by_side ? D : 1) : 0);
    final.h.resize({L * D, B, H}, false);
    if (lstm)
        final.c.resize({L * D, B, H}, false);
    else
        final.c.resize({0}, false);

    packed_rows::plan(cache);
    const int64_t N = cache.offset[static_cast<std::size_t>(T)];  // real positions
    cache.layer_in[0].resize({N, cfg.input_size}, false);
    packed_rows::pack(x, cache, cache.layer_in[0]);
    for (int k = 0; k < L; ++k) {
        if (k > 0) {  // dropout, its mask drawn over (T, B, D·H) as if nothing were packed
            Tensor& mask = cache.dropout[k].mask;
            if (mode == Mode::train && cfg.dropout > 0.0f) {
                mask.resize({T, B, D * H}, false);
                draw_dropout_mask(mask, cfg.dropout, rng);
            } else {
                mask.resize({0});
            }
            cache.layer_in[k].resize({N, D * H}, false);
            packed_rows::mask_rows(cache.layer_out[k - 1], cache, mask, cache.layer_in[k], false);
        }
        cache.layer_out[k].resize({N, D * H}, false);
        const auto directions = [&](int64_t d0, int64_t d1) {
            for (int64_t d = d0; d < d1; ++d)
                if (infer)
                    infer_direction(k, static_cast<int>(d), initial, final, cache,
                                    cache.infer[side_by_side ? d : 0]);
                else
                    forward_direction(k, static_cast<int>(d), initial, final, cache);
        };
        // Few rows (decoding a sentence or a handful): each step's W_hh product is a
        // matrix-vector product too small to split well, so the two directions run side by side,
        // one per thread, each with its products whole (a body's products run inline:
        // threads.h). They write disjoint state: their own cache, final state and half of each
        // output row. Same results, as a product's bits do not depend on its split.
        if (side_by_side)
            parallel_for(D, 1, directions);
        else
            directions(0, D);
        if (cfg.residual && k > 0)  // y_k = h_k + x_k
            kernels::axpy(N * D * H, 1.0f, cache.layer_in[k].data(), cache.layer_out[k].data());
    }
    packed_rows::unpack(cache.layer_out[L - 1], cache, out, false);
}

// Layer k, direction d of backward(): from d_layer_out_ and d_final to the direction's
// parameter gradients, d_initial and (when need_d_in) d_layer_in_. d_h_ / d_c_ hold, for every
// sorted row, the gradient of the state after the next step to undo; rows that have not run yet
// keep the final state's (in both buffers, which swap each step).
void RNN::backward_direction(int k, int d, const RNNState& d_final, const RNNCache& cache,
                             bool need_d_in, RNNState& d_initial) {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions();
    const int64_t N = cache.offset[static_cast<std::size_t>(T)];
    const bool lstm = cfg.cell == CellType::lstm, fwd = d == 0;
    const int idx = k * D + d;
    const RNNCellParams& P = params.cells[idx];
    RNNCellParams& Pg = grad.cells[idx];
    const RNNDirectionCache& dc = cache.dirs[idx];
    const std::span<const int> order(cache.order), rows(cache.rows);
    const auto start = [&](const Tensor& df, Tensor& g, Tensor& g_next, Tensor& g0) {
        packed_rows::gather_states(absent(df) ? ConstTensorView() : df.select(idx), order, 0, B, g);
        g_next.copy_from(g);
        g0.copy_from(g);
    };
    start(d_final.h, d_h_, d_h_next_, d_h0_);
    if (lstm) start(d_final.c, d_c_, d_c_next_, d_c0_);
    // Steps in reverse processing order: forward direction t = T−1 … 0, backward 0 … T−1.
    for (int s = 0; s < T; ++s) {
        const int t = fwd ? T - 1 - s : s, n = rows[t];
        if (n == 0) continue;
        const int64_t o = cache.offset[static_cast<std::size_t>(t)];
        // d_h' = (from the later step) + d_out[t] of this direction
        const float* dy = d_layer_out_.data() + o * D * H + d * H;
        for (int i = 0; i < n; ++i)
            kernels::axpy(H, 1.0f, dy + int64_t{i} * D * H, d_h_.data() + int64_t{i} * H);
        const TensorView dh = d_h_.slice(0, n), dh_next = d_h_next_.slice(0, n);
        const TensorView dgi = d_gi_.slice(o, o + n);
        if (deep())  // dh: of the step's new states, then of the cell's (before the transitions)
            transition::backward(params.transitions[idx], grad.transitions[idx], H, o, n, dc.tr,
                                 d_gh_tr_, dh, d_tr_.slice(0, n), d_gi_tr_.slice(0, n));
        dh_next.zero();
        if (lstm) {
            d_c_next_.slice(0, n).zero();
            lstm::gates_backward(dh, d_c_.slice(0, n), dc.c.slice(o, o + n),
                                 dc.gates.slice(o, o + n), dc.tanh_c.slice(o, o + n), dgi, dh_next,
                                 d_c_next_.slice(0, n));
            // a = … + h W_hhᵀ   =>   d_h += d_a W_hh   (weight gradient after the loop); LN:
            // h W_hhᵀ's own gradient, through its normalisation (γ_hh's and b_hh's too)
            TensorView d_rec = dgi;
            if (P.layer_norm()) {
                d_rec = d_gh_.slice(o, o + n);
                d_rec.copy_from(dgi);
                layer_norm::blocks_backward(d_rec, H, P.ln_weight_hh, dc.ln_h.slice(o, o + n),
                                            dc.rstd_h.slice(o, o + n), Pg.ln_weight_hh, Pg.bias_hh);
            }
            gemm(d_rec, false, P.weight_hh, false, dh_next, 1.0f, 1.0f);
        } else {
            const TensorView dgh = d_gh_.slice(o, o + n);
            gru::gates_backward(dh, dc.h.slice(o, o + n), dc.gates.slice(o, o + n),
                                dc.gh_n.slice(o, o + n), dgi, dgh, dh_next);
            if (P.layer_norm())  // d_gh: of gh, then of h W_hhᵀ; γ_hh's and b_hh's gradients
                layer_norm::blocks_backward(dgh, H, P.ln_weight_hh, dc.ln_h.slice(o, o + n),
                                            dc.rstd_h.slice(o, o + n), Pg.ln_weight_hh, Pg.bias_hh);
            gemm(dgh, false, P.weight_hh, false, dh_next, 1.0f, 1.0f);
        }
        if (!fwd) {  // the rows whose last position is t started here from the initial state
            const int n_next = t + 1 < T ? rows[t + 1] : 0;
            d_h0_.slice(n_next, n).copy_from(d_h_next_.slice(n_next, n));
            if (lstm) d_c0_.slice(n_next, n).copy_from(d_c_next_.slice(n_next, n));
        }
        std::swap(d_h_, d_h_next_);
        if (lstm) std::swap(d_c_, d_c_next_);
    }
    if (fwd) {  // every row started at step 0 (or, of length 0, kept its final gradient)
        d_h0_.copy_from(d_h_);
        if (lstm) d_c0_.copy_from(d_c_);
    }
    if (!absent(d_initial.h)) packed_rows::add_states(d_h0_, order, d_initial.h.select(idx));
    if (lstm && !absent(d_initial.c))
        packed_rows::add_states(d_c0_, order, d_initial.c.select(idx));
    // d_W_hh += Σ d_aᵀ h_prev over the N packed rows (dc.h's first N rows are the h_prev)
    cell_add_recurrent_backward(P, Pg, lstm && !P.layer_norm() ? d_gi_ : d_gh_, dc.h.slice(0, N),
                                TensorView());
    transition::weight_grads(grad.transitions[idx], N, dc.tr, d_gh_tr_);
    // LN: d_gi of gi, then of x W_ihᵀ, all rows in one pass; γ_ih's and b_ih's gradients
    if (P.layer_norm())
        layer_norm::blocks_backward(d_gi_, H, P.ln_weight_ih, dc.ln_i, dc.rstd_i, Pg.ln_weight_ih,
                                    Pg.bias_ih);
    // d_W_ih += d_giᵀ X;  d_b_ih += Σ d_gi;  d_X += d_gi W_ih   (one GEMM each, all rows)
    cell_project_input_backward(P, Pg, d_gi_, cache.layer_in[k],
                                need_d_in ? d_layer_in_.view() : TensorView());
}

void RNN::backward(ConstTensorView d_out, const RNNState& d_final, const RNNCache& cache,
                   TensorView d_x, RNNState& d_initial) {
    const int B = cache.B, T = cache.T, H = cfg.hidden_size, D = directions(), L = cfg.num_layers,
              G = gates();
    const bool lstm = cfg.cell == CellType::lstm;
    NZ_CHECK(cache.mode != Mode::inference,
             "RNN::backward: the cache comes from an inference forward, which keeps no gates");
    NZ_CHECK(
        static_cast<int>(cache.dirs.size()) == L * D && static_cast<int>(cache.lengths.size()) == B,
        "RNN::backward: the cache does not come from this RNN's forward");
    NZ_CHECK_SHAPE(d_out, {B, T, D * H});
    if (!absent(d_x)) NZ_CHECK_SHAPE(d_x, {B, T, cfg.input_size});
    if (!absent(d_final.h)) NZ_CHECK_SHAPE(d_final.h, {L * D, B, H});
    if (!absent(d_final.c)) NZ_CHECK_SHAPE(d_final.c, {L * D, B, H});
    if (!absent(d_initial.h)) NZ_CHECK_SHAPE(d_initial.h, {L * D, B, H});
    if (!absent(d_initial.c)) NZ_CHECK_SHAPE(d_initial.c, {L * D, B, H});
    const int64_t N = cache.offset[static_cast<std::size_t>(T)];

    // The top layer's output gradient at the real positions (padding outputs are constant 0)
    d_layer_out_.resize({N, D * H}, false);
    packed_rows::pack(d_out, cache, d_layer_out_);
    for (Tensor* g : {&d_h_, &d_h_next_, &d_h0_, &d_c_, &d_c_next_, &d_c0_})
        g->resize({B, H}, false);
    d_gi_.resize({N, G * H}, false);
    if (!lstm || cfg.layer_norm) d_gh_.resize({N, G * H}, false);
    d_gh_tr_.resize(static_cast<std::size_t>(cfg.transition_depth) - 1);
    for (Tensor& g : d_gh_tr_) g.resize({N, 3 * H}, false);
    if (deep()) {
        d_tr_.resize({B, H}, false);
        d_gi_tr_.resize({B, 3 * H}, false);
    }
    for (int k = L - 1; k >= 0; --k) {
        const int In = cache.layer_in[k].dim(1);
        const bool need_d_in = k > 0 || !absent(d_x);
        if (need_d_in) d_layer_in_.resize({N, In});  // zeroed; both directions add into it
        for (int d = 0; d < D; ++d) backward_direction(k, d, d_final, cache, need_d_in, d_initial);
        if (cfg.residual && k > 0)  // y_k = h_k + x_k  =>  d_x_k += d_y_k
            kernels::axpy(N * D * H, 1.0f, d_layer_out_.data(), d_layer_in_.data());
        if (k > 0) {  // through the dropout between layer k−1 and k
            d_layer_out_.resize({N, D * H}, false);
            packed_rows::mask_rows(d_layer_in_, cache, cache.dropout[k].mask, d_layer_out_, true);
        } else if (!absent(d_x)) {
            packed_rows::unpack(d_layer_in_, cache, d_x, true);
        }
    }
}

}  // namespace nazar
