// LSTM cell: fused gate kernels and the step API (see lstm_cell.h; math in
// docs/derivations/lstm.md).
#include "nazar/nn/lstm_cell.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/nn/absent.h"
#include "nazar/nn/layer_norm.h"

#include <algorithm>

namespace nazar {

namespace {
constexpr int64_t kGateRows = 16;  // rows per parallel chunk of the fused gate kernels
}  // namespace

namespace lstm {

void gates_forward(ConstTensorView h, ConstTensorView c, TensorView gates, TensorView tanh_c,
                   TensorView h_new, TensorView c_new, StepMask mask) {
    const int N = h.dim(0), H = h.dim(1);
    NZ_CHECK_SHAPE(c, {N, H});
    NZ_CHECK_SHAPE(gates, {N, 4 * H});
    NZ_CHECK_SHAPE(tanh_c, {N, H});
    NZ_CHECK_SHAPE(h_new, {N, H});
    NZ_CHECK_SHAPE(c_new, {N, H});
    NZ_CHECK(mask.lengths.empty() || static_cast<int>(mask.lengths.size()) == N,
             "lstm::gates_forward: {} lengths for {} rows", mask.lengths.size(), N);
    // rows are independent: split over the pool (a step of 64 rows x 512 units is ~30 µs)
    parallel_for(N, kGateRows, [&](int64_t r0, int64_t r1) {
        for (int b = static_cast<int>(r0); b < static_cast<int>(r1); ++b) {
            const int64_t o1 = static_cast<int64_t>(b) * H;
            float* g = gates.data() + o1 * 4;  // a_i | a_f | a_g | a_o  ->  i | f | g | o
            const float* hp = h.data() + o1;
            const float* cp = c.data() + o1;
            float* tc = tanh_c.data() + o1;
            float* hn = h_new.data() + o1;
            float* cn = c_new.data() + o1;
            kernels::sigmoid(g, g, 2 * H);              // i, f
            kernels::tanh(g + 2 * H, g + 2 * H, H);     // g
            kernels::sigmoid(g + 3 * H, g + 3 * H, H);  // o
            if (!mask.active(b)) {                      // state carried through padding
                if (hn != hp) std::copy_n(hp, H, hn);
                if (cn != cp) std::copy_n(cp, H, cn);
                std::fill_n(tc, H, 0.0f);
                continue;
            }
            const float* i = g;
            const float* f = g + H;
            const float* gg = g + 2 * H;
            const float* o = g + 3 * H;
            for (int j = 0; j < H; ++j) tc[j] = f[j] * cp[j] + i[j] * gg[j];  // c' = f c + i g
            for (int j = 0; j < H; ++j) cn[j] = tc[j];
            kernels::tanh(tc, tc, H);
            for (int j = 0; j < H; ++j) hn[j] = o[j] * tc[j];  // h' = o tanh(c')
        }
    });
}

void gates_backward(ConstTensorView d_h_new, ConstTensorView d_c_new, ConstTensorView c,
                    ConstTensorView gates, ConstTensorView tanh_c, TensorView d_gates,
                    TensorView d_h, TensorView d_c, StepMask mask) {
    const int N = c.dim(0), H = c.dim(1);
    NZ_CHECK_SHAPE(d_h_new, {N, H});
    if (!absent(d_c_new)) NZ_CHECK_SHAPE(d_c_new, {N, H});
    NZ_CHECK_SHAPE(gates, {N, 4 * H});
    NZ_CHECK_SHAPE(tanh_c, {N, H});
    NZ_CHECK_SHAPE(d_gates, {N, 4 * H});
    NZ_CHECK_SHAPE(d_h, {N, H});
    NZ_CHECK_SHAPE(d_c, {N, H});
    NZ_CHECK(d_h.data() != d_h_new.data() && d_c.data() != d_c_new.data(),
             "lstm::gates_backward: d_h / d_c must not alias d_h_new / d_c_new");
    NZ_CHECK(mask.lengths.empty() || static_cast<int>(mask.lengths.size()) == N,
             "lstm::gates_backward: {} lengths for {} rows", mask.lengths.size(), N);
    const bool has_dc = !absent(d_c_new);
    // rows are independent: split over the pool (a step of 64 rows x 512 units is ~30 µs)
    parallel_for(N, kGateRows, [&](int64_t r0, int64_t r1) {
        for (int b = static_cast<int>(r0); b < static_cast<int>(r1); ++b) {
            const int64_t o1 = static_cast<int64_t>(b) * H;
            const float* dy = d_h_new.data() + o1;
            const float* dcn = has_dc ? d_c_new.data() + o1 : nullptr;
            float* dh = d_h.data() + o1;
            float* dcp = d_c.data() + o1;
            float* da = d_gates.data() + o1 * 4;
            if (!mask.active(b)) {  // (h', c') = (h, c)
                for (int j = 0; j < H; ++j) dh[j] += dy[j];
                if (has_dc)
                    for (int j = 0; j < H; ++j) dcp[j] += dcn[j];
                std::fill_n(da, 4 * H, 0.0f);
                continue;
            }
            const float* i = gates.data() + o1 * 4;
            const float* f = i + H;
            const float* g = i + 2 * H;
            const float* o = i + 3 * H;
            const float* cp = c.data() + o1;
            const float* tc = tanh_c.data() + o1;
            for (int j = 0; j < H; ++j) {
                // h' = o tanh(c')            =>  d_o = d_h' tanh(c');  d_c' += d_h' o (1 −
                // tanh²(c'))
                const float dc = (has_dc ? dcn[j] : 0.0f) + dy[j] * o[j] * (1.0f - tc[j] * tc[j]);
                const float dout = dy[j] * tc[j];
                // c' = f c + i g            =>  d_f = d_c' c;  d_i = d_c' g;  d_g = d_c' i;  d_c +=
                // d_c' f
                dcp[j] += dc * f[j];
                // i, f, o = σ(a), g = tanh(a)  =>  d_a = d σ (1 − σ),  d_a_g = d_g (1 − g²)
                da[j] = dc * g[j] * i[j] * (1.0f - i[j]);
                da[H + j] = dc * cp[j] * f[j] * (1.0f - f[j]);
                da[2 * H + j] = dc * i[j] * (1.0f - g[j] * g[j]);
                da[3 * H + j] = dout * o[j] * (1.0f - o[j]);
            }
        }
    });
}

}  // namespace lstm

LSTMCell::LSTMCell(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    params = make_rnn_cell_params(4, cfg.input_size, cfg.hidden_size, cfg.bias, &rng, mode,
                                  cfg.layer_norm);
    grad = make_rnn_cell_params(4, cfg.input_size, cfg.hidden_size, cfg.bias, nullptr, mode,
                                cfg.layer_norm);
}

void LSTMCell::project_input(ConstTensorView x, TensorView gi) const {
    cell_project_input(params, x, gi);
}

void LSTMCell::normalize_input(TensorView gi, LSTMStepCache& cache) const {
    cell_normalize_input(params, cfg.hidden_size, gi, cache.ln_i, cache.rstd_i);
}

// a += LN(h W_hhᵀ; γ_hh) + b_hh (layer_norm), or a += b_hh + h W_hhᵀ.
static void add_recurrent(const RNNCellParams& p, ConstTensorView h, TensorView a,
                          LSTMStepCache& cache, WeightTRows whh_t) {
    if (!p.layer_norm()) {
        cell_add_recurrent(p, h, a, whh_t);
        return;
    }
    const int N = a.dim(0), GH = a.dim(1), H = GH / 4;
    cache.gh.resize({N, GH});  // zeroed: the product is accumulated onto it
    cache.ln_h.resize({N, GH}, false);
    cache.rstd_h.resize({N, 4}, false);
    cell_add_recurrent(p, h, cache.gh, whh_t);  // h W_hhᵀ (no bias with LN)
    layer_norm::blocks_forward(cache.gh, H, p.ln_weight_hh, p.bias_hh, cache.ln_h, cache.rstd_h);
    kernels::axpy(a.numel(), 1.0f, cache.gh.data(), a.data());
}

// layer_norm: d_a (the pre-activations' gradient) -> d_gh = h W_hhᵀ's (written) and, in place,
// d_gi = x W_ihᵀ's; the gains' and biases' gradients into g.
static void ln_backward(const RNNCellParams& p, RNNCellParams& g, const LSTMStepCache& cache, int H,
                        TensorView d_a, TensorView d_gh) {
    d_gh.copy_from(d_a);
    layer_norm::blocks_backward(d_gh, H, p.ln_weight_hh, cache.ln_h, cache.rstd_h, g.ln_weight_hh,
                                g.bias_hh);
    layer_norm::blocks_backward(d_a, H, p.ln_weight_ih, cache.ln_i, cache.rstd_i, g.ln_weight_ih,
                                g.bias_ih);
}

void LSTMCell::project_input_backward(ConstTensorView d_gi, ConstTensorView x, TensorView d_x) {
    cell_project_input_backward(params, grad, d_gi, x, d_x);
}

void LSTMCell::forward_projected(ConstTensorView gi, ConstTensorView h, ConstTensorView c,
                                 TensorView h_new, TensorView c_new, LSTMStepCache& cache,
                                 StepMask mask, WeightTRows whh_t) const {
    const int H = cfg.hidden_size;
    NZ_CHECK(h.ndim() == 2 && h.dim(1) == H, "LSTMCell: h {} needs (N, {})", h.shape().str(), H);
    const int N = h.dim(0);
    NZ_CHECK_SHAPE(gi, {N, 4 * H});
    cache.gates.resize({N, 4 * H}, false);
    cache.tanh_c.resize({N, H}, false);
    cache.gates.copy_from(gi);
    add_recurrent(params, h, cache.gates, cache, whh_t);  // a = gi + b_hh + h W_hhᵀ (RNN's order)
    lstm::gates_forward(h, c, cache.gates, cache.tanh_c, h_new, c_new, mask);
}

void LSTMCell::backward_projected(ConstTensorView d_h_new, ConstTensorView d_c_new,
                                  ConstTensorView h, ConstTensorView c, const LSTMStepCache& cache,
                                  TensorView d_gi, TensorView d_h, TensorView d_c, StepMask mask) {
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK_SHAPE(d_gi, {N, 4 * H});
    d_gates_.resize({N, 4 * H}, false);
    lstm::gates_backward(d_h_new, d_c_new, c, cache.gates, cache.tanh_c, d_gates_, d_h, d_c, mask);
    kernels::axpy(d_gates_.numel(), 1.0f, d_gates_.data(), d_gi.data());
    if (params.layer_norm()) {  // gh's own LN: its gradient apart from gi's
        d_gh_.resize({N, 4 * H}, false);
        d_gh_.copy_from(d_gates_);
        layer_norm::blocks_backward(d_gh_, H, params.ln_weight_hh, cache.ln_h, cache.rstd_h,
                                    grad.ln_weight_hh, grad.bias_hh);
        cell_add_recurrent_backward(params, grad, d_gh_, h, d_h);
        return;
    }
    cell_add_recurrent_backward(params, grad, d_gates_, h, d_h);
}

void LSTMCell::forward(ConstTensorView x, ConstTensorView h, ConstTensorView c, TensorView h_new,
                       TensorView c_new, LSTMStepCache& cache, StepMask mask, WeightTRows wih_t,
                       WeightTRows whh_t) const {
    NZ_CHECK(x.ndim() == 2 && x.dim(1) == cfg.input_size && h.ndim() == 2 && x.dim(0) == h.dim(0),
             "LSTMCell::forward: x {} and h {} do not fit input_size {}", x.shape().str(),
             h.shape().str(), cfg.input_size);
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK_SHAPE(h, {N, H});
    cache.gates.resize({N, 4 * H}, false);
    cache.tanh_c.resize({N, H}, false);
    cell_project_input(params, x, cache.gates, wih_t);    // a = x W_ihᵀ + b_ih
    normalize_input(cache.gates, cache);                  //   (LN: LN(x W_ihᵀ) + b_ih)
    add_recurrent(params, h, cache.gates, cache, whh_t);  //   + b_hh + h W_hhᵀ
    lstm::gates_forward(h, c, cache.gates, cache.tanh_c, h_new, c_new, mask);
}

void LSTMCell::backward(ConstTensorView d_h_new, ConstTensorView d_c_new, ConstTensorView x,
                        ConstTensorView h, ConstTensorView c, const LSTMStepCache& cache,
                        TensorView d_x, TensorView d_h, TensorView d_c, StepMask mask) {
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK(x.ndim() == 2 && x.dim(0) == N, "LSTMCell::backward: x {} for h {}", x.shape().str(),
             h.shape().str());
    d_gates_.resize({N, 4 * H}, false);
    lstm::gates_backward(d_h_new, d_c_new, c, cache.gates, cache.tanh_c, d_gates_, d_h, d_c, mask);
    if (params.layer_norm()) {
        d_gh_.resize({N, 4 * H}, false);
        ln_backward(params, grad, cache, H, d_gates_, d_gh_);
        cell_add_recurrent_backward(params, grad, d_gh_, h, d_h);
    } else {
        cell_add_recurrent_backward(params, grad, d_gates_, h, d_h);
    }
    cell_project_input_backward(params, grad, d_gates_, x, d_x);
}

void LSTMCell::backward_data(ConstTensorView d_h_new, ConstTensorView d_c_new, ConstTensorView c,
                             const LSTMStepCache& cache, TensorView d_gates, TensorView d_x,
                             TensorView d_h, TensorView d_c, StepMask mask, TensorView d_gh) {
    const int N = c.dim(0), H = cfg.hidden_size;
    NZ_CHECK_SHAPE(d_gates, {N, 4 * H});
    lstm::gates_backward(d_h_new, d_c_new, c, cache.gates, cache.tanh_c, d_gates, d_h, d_c, mask);
    if (params.layer_norm()) {
        NZ_CHECK_SHAPE(d_gh, {N, 4 * H});
        ln_backward(params, grad, cache, H, d_gates, d_gh);
    }
    // a = x W_ihᵀ + h W_hhᵀ + b  =>  d_h += d_a W_hh;  d_x += d_a W_ih   (LN: each its own d)
    gemm(params.layer_norm() ? d_gh : d_gates, false, params.weight_hh, false, d_h, 1.0f, 1.0f);
    if (d_x.data() != nullptr && d_x.numel() > 0) {
        NZ_CHECK_SHAPE(d_x, {N, cfg.input_size});
        gemm(d_gates, false, params.weight_ih, false, d_x, 1.0f, 1.0f);
    }
}

}  // namespace nazar
