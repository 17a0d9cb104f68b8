// GRU cell: fused gate kernels and the step API (see gru_cell.h; math in docs/derivations/gru.md).
#include "nazar/nn/gru_cell.h"

#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/nn/absent.h"
#include "nazar/nn/layer_norm.h"

#include <algorithm>
#include <cmath>

namespace nazar {

namespace {
constexpr int64_t kGateRows = 16;  // rows per parallel chunk of the fused gate kernels
}  // namespace

RNNCellParams make_rnn_cell_params(int gates, int input_size, int hidden_size, bool bias, Rng* rng,
                                   ParamMode mode, bool layer_norm) {
    NZ_CHECK(input_size > 0 && hidden_size > 0,
             "recurrent cell: sizes must be positive, got input {} hidden {}", input_size,
             hidden_size);
    const int GH = gates * hidden_size;
    RNNCellParams p;
    if (mode == ParamMode::inference && !rng) return p;  // no gradient: every tensor absent
    p.weight_ih = make_param({GH, input_size}, mode);
    p.weight_hh = make_param({GH, hidden_size}, mode);
    if (bias) {
        p.bias_ih = make_param({GH}, mode);
        p.bias_hh = make_param({GH}, mode);
    } else {  // absent: numel 0, skipped by collect_params and by visit's consumers
        p.bias_ih = Tensor({0});
        p.bias_hh = Tensor({0});
    }
    if (rng && mode == ParamMode::training) {  // PyTorch: every parameter ~ U(-1/sqrt(H),
                                               // 1/sqrt(H)), in state_dict order
        const float k = 1.0f / std::sqrt(static_cast<float>(hidden_size));
        p.visit([&](const std::string&, Tensor& t) {
            if (!absent(t)) rng->fill_uniform(t, -k, k);
        });
    }
    if (layer_norm) {  // after the draws: γ = 1 (training values), 0 (a gradient), placeholders
        p.ln_weight_ih = make_param({GH}, mode);
        p.ln_weight_hh = make_param({GH}, mode);
        if (rng && mode == ParamMode::training) {
            p.ln_weight_ih.fill(1.0f);
            p.ln_weight_hh.fill(1.0f);
        }
    }
    return p;
}

static void check_rows(ConstTensorView v, int cols, const char* what) {
    NZ_CHECK(v.ndim() >= 1 && v.shape()[-1] == cols, "{}: {} needs last dimension {}", what,
             v.shape().str(), cols);
}

void cell_project_input(const RNNCellParams& p, ConstTensorView x, TensorView gi,
                        WeightTRows wih_t) {
    const int GH = p.weight_ih.dim(0), I = p.weight_ih.dim(1);
    check_rows(x, I, "cell_project_input x");
    check_rows(gi, GH, "cell_project_input gi");
    const ConstTensorView xm = x.as_matrix();
    const TensorView gm = gi.as_matrix();
    NZ_CHECK(xm.dim(0) == gm.dim(0), "cell_project_input: {} rows of x but {} of gi", xm.dim(0),
             gm.dim(0));
    if (xm.dim(0) == 0) return;
    // gi = x W_ihᵀ (+ b_ih; with LN the bias is added after normalising)
    gemm_xwt_bias(xm.dim(0), GH, I, xm.data(), I, p.weight_ih.data(), I, wih_t,
                  absent(p.bias_ih) || p.layer_norm() ? nullptr : p.bias_ih.data(), gm.data(), GH);
}

void cell_project_input_backward(const RNNCellParams& p, RNNCellParams& grad, ConstTensorView d_gi,
                                 ConstTensorView x, TensorView d_x) {
    const int GH = p.weight_ih.dim(0), I = p.weight_ih.dim(1);
    check_rows(x, I, "cell_project_input_backward x");
    check_rows(d_gi, GH, "cell_project_input_backward d_gi");
    const ConstTensorView xm = x.as_matrix(), dm = d_gi.as_matrix();
    NZ_CHECK(xm.dim(0) == dm.dim(0), "cell_project_input_backward: {} rows of x but {} of d_gi",
             xm.dim(0), dm.dim(0));
    if (xm.dim(0) == 0) return;
    // gi = x W_ihᵀ + b_ih   =>   d_W_ih += d_giᵀ x;  d_b_ih += Σ_rows d_gi;  d_x += d_gi W_ih
    gemm(dm, true, xm, false, grad.weight_ih, 1.0f, 1.0f);
    if (!absent(p.bias_ih) && !p.layer_norm()) kernels::sum_rows_into(dm, grad.bias_ih);
    if (!absent(d_x)) {
        NZ_CHECK(d_x.shape() == x.shape(), "cell_project_input_backward: d_x {} vs x {}",
                 d_x.shape().str(), x.shape().str());
        gemm(dm, false, p.weight_ih, false, d_x.as_matrix(), 1.0f, 1.0f);
    }
}

void cell_add_recurrent(const RNNCellParams& p, ConstTensorView h, TensorView a,
                        WeightTRows whh_t) {
    const int GH = p.weight_hh.dim(0), H = p.weight_hh.dim(1);
    NZ_CHECK(
        h.ndim() == 2 && h.dim(1) == H && a.ndim() == 2 && a.dim(1) == GH && a.dim(0) == h.dim(0),
        "cell_add_recurrent: h {} and a {} do not fit weight_hh {}", h.shape().str(),
        a.shape().str(), p.weight_hh.shape().str());
    if (h.dim(0) == 0) return;
    if (!absent(p.bias_hh) && !p.layer_norm()) kernels::add_bias_rows(a, p.bias_hh);
    gemm_xwt(h.dim(0), GH, H, 1.0f, h.data(), H, p.weight_hh.data(), H, whh_t, 1.0f, a.data(),
             GH);  // a += h W_hhᵀ
}

void cell_add_recurrent_backward(const RNNCellParams& p, RNNCellParams& grad, ConstTensorView d_a,
                                 ConstTensorView h, TensorView d_h) {
    const int GH = p.weight_hh.dim(0), H = p.weight_hh.dim(1);
    const ConstTensorView hm = h.as_matrix(), dm = d_a.as_matrix();
    NZ_CHECK(hm.dim(1) == H && dm.dim(1) == GH && hm.dim(0) == dm.dim(0),
             "cell_add_recurrent_backward: h {} and d_a {} do not fit weight_hh {}",
             h.shape().str(), d_a.shape().str(), p.weight_hh.shape().str());
    if (hm.dim(0) == 0) return;
    // a += h W_hhᵀ + b_hh   =>   d_W_hh += d_aᵀ h;  d_b_hh += Σ_rows d_a;  d_h += d_a W_hh
    gemm(dm, true, hm, false, grad.weight_hh, 1.0f, 1.0f);
    if (!absent(p.bias_hh) && !p.layer_norm()) kernels::sum_rows_into(dm, grad.bias_hh);
    if (!absent(d_h)) {
        NZ_CHECK(d_h.shape() == h.shape(), "cell_add_recurrent_backward: d_h {} vs h {}",
                 d_h.shape().str(), h.shape().str());
        gemm(dm, false, p.weight_hh, false, d_h.as_matrix(), 1.0f, 1.0f);
    }
}

void cell_normalize_input(const RNNCellParams& p, int hidden_size, TensorView gi, Tensor& xhat,
                          Tensor& rstd) {
    if (!p.layer_norm()) return;
    const int N = gi.dim(0), H = hidden_size, G = p.weight_ih.dim(0) / H;
    NZ_CHECK_SHAPE(gi, {N, G * H});
    xhat.resize({N, G * H}, false);
    rstd.resize({N, G}, false);
    layer_norm::blocks_forward(gi, H, p.ln_weight_ih, p.bias_ih, xhat, rstd);
}

namespace gru {

void gates_forward(ConstTensorView gi, ConstTensorView h, TensorView gates, TensorView gh_n,
                   TensorView h_new, StepMask mask) {
    const int N = h.dim(0), H = h.dim(1);
    NZ_CHECK_SHAPE(gi, {N, 3 * H});
    NZ_CHECK_SHAPE(gates, {N, 3 * H});
    NZ_CHECK_SHAPE(gh_n, {N, H});
    NZ_CHECK_SHAPE(h_new, {N, H});
    NZ_CHECK(mask.lengths.empty() || static_cast<int>(mask.lengths.size()) == N,
             "gru::gates_forward: {} lengths for {} rows", mask.lengths.size(), N);
    // rows are independent: split over the pool (a step of 64 rows x 512 units is ~30 µs)
    parallel_for(N, kGateRows, [&](int64_t r0, int64_t r1) {
        for (int b = static_cast<int>(r0); b < static_cast<int>(r1); ++b) {
            const float* x = gi.data() + static_cast<int64_t>(b) * 3 * H;  // gi_r | gi_z | gi_n
            float* g =
                gates.data() + static_cast<int64_t>(b) * 3 * H;  // gh_r | gh_z | gh_n -> r | z | n
            float* ghn = gh_n.data() + static_cast<int64_t>(b) * H;
            const float* hp = h.data() + static_cast<int64_t>(b) * H;
            float* hn = h_new.data() + static_cast<int64_t>(b) * H;
            // r, z = σ(gi + gh)
            for (int j = 0; j < 2 * H; ++j) g[j] += x[j];
            kernels::sigmoid(g, g, 2 * H);
            // n = tanh(gi_n + r ⊙ gh_n)
            const float* r = g;
            const float* z = g + H;
            float* n = g + 2 * H;
            for (int j = 0; j < H; ++j) {
                ghn[j] = n[j];
                n[j] = x[2 * H + j] + r[j] * ghn[j];
            }
            kernels::tanh(n, n, H);
            // h' = (1 − z) ⊙ n + z ⊙ h  = n + z ⊙ (h − n);  masked rows keep h
            if (mask.active(b)) {
                for (int j = 0; j < H; ++j) hn[j] = n[j] + z[j] * (hp[j] - n[j]);
            } else if (hn != hp) {
                std::copy_n(hp, H, hn);
            }
        }
    });
}

// One active row of gates_backward. The restrict-qualified pointers (gates_backward's checks
// rule out aliasing between a row's inputs and outputs) let GCC vectorise the loop; without them
// it ran scalar, about 4% of small-config training samples. Same arithmetic per element.
static void gates_backward_row(const float* __restrict dy, const float* __restrict hp,
                               const float* __restrict r, const float* __restrict z,
                               const float* __restrict n, const float* __restrict ghn,
                               float* __restrict dh, float* __restrict dgi, float* __restrict dgh,
                               int H) {
    for (int j = 0; j < H; ++j) {
        // h' = (1 − z) n + z h   =>  d_n = d_h' (1 − z),  d_z = d_h' (h − n),  d_h += d_h' z
        const float dn = dy[j] * (1.0f - z[j]);
        const float dz = dy[j] * (hp[j] - n[j]);
        dh[j] += dy[j] * z[j];
        // n = tanh(a_n), a_n = gi_n + r gh_n  =>  d_a_n = d_n (1 − n²);  d_r = d_a_n gh_n
        const float da_n = dn * (1.0f - n[j] * n[j]);
        const float dr = da_n * ghn[j];
        // r, z = σ(a)  =>  d_a = d σ (1 − σ)
        const float da_r = dr * r[j] * (1.0f - r[j]);
        const float da_z = dz * z[j] * (1.0f - z[j]);
        dgi[j] = da_r;
        dgi[H + j] = da_z;
        dgi[2 * H + j] = da_n;
        dgh[j] = da_r;
        dgh[H + j] = da_z;
        dgh[2 * H + j] = da_n * r[j];  // gh_n enters through r ⊙ gh_n
    }
}

void gates_backward(ConstTensorView d_h_new, ConstTensorView h, ConstTensorView gates,
                    ConstTensorView gh_n, TensorView d_gi, TensorView d_gh, TensorView d_h,
                    StepMask mask) {
    const int N = h.dim(0), H = h.dim(1);
    NZ_CHECK_SHAPE(d_h_new, {N, H});
    NZ_CHECK_SHAPE(gates, {N, 3 * H});
    NZ_CHECK_SHAPE(gh_n, {N, H});
    NZ_CHECK_SHAPE(d_gi, {N, 3 * H});
    NZ_CHECK_SHAPE(d_gh, {N, 3 * H});
    NZ_CHECK_SHAPE(d_h, {N, H});
    NZ_CHECK(d_h.data() != d_h_new.data(), "gru::gates_backward: d_h must not alias d_h_new");
    NZ_CHECK(d_gi.data() != d_gh.data(), "gru::gates_backward: d_gi must not alias d_gh");
    NZ_CHECK(mask.lengths.empty() || static_cast<int>(mask.lengths.size()) == N,
             "gru::gates_backward: {} lengths for {} rows", mask.lengths.size(), N);
    // rows are independent: split over the pool (a step of 64 rows x 512 units is ~30 µs)
    parallel_for(N, kGateRows, [&](int64_t r0, int64_t r1) {
        for (int b = static_cast<int>(r0); b < static_cast<int>(r1); ++b) {
            const int64_t o3 = static_cast<int64_t>(b) * 3 * H, o1 = static_cast<int64_t>(b) * H;
            const float* dy = d_h_new.data() + o1;
            float* dh = d_h.data() + o1;
            float* dgi = d_gi.data() + o3;
            float* dgh = d_gh.data() + o3;
            if (!mask.active(b)) {  // h' = h
                for (int j = 0; j < H; ++j) dh[j] += dy[j];
                std::fill_n(dgi, 3 * H, 0.0f);
                std::fill_n(dgh, 3 * H, 0.0f);
                continue;
            }
            const float* r = gates.data() + o3;
            const float* z = r + H;
            const float* n = r + 2 * H;
            const float* hp = h.data() + o1;
            const float* ghn = gh_n.data() + o1;
            gates_backward_row(dy, hp, r, z, n, ghn, dh, dgi, dgh, H);
        }
    });
}

}  // namespace gru

GRUCell::GRUCell(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    params = make_rnn_cell_params(3, cfg.input_size, cfg.hidden_size, cfg.bias, &rng, mode,
                                  cfg.layer_norm);
    grad = make_rnn_cell_params(3, cfg.input_size, cfg.hidden_size, cfg.bias, nullptr, mode,
                                cfg.layer_norm);
}

void GRUCell::project_input(ConstTensorView x, TensorView gi) const {
    cell_project_input(params, x, gi);
}

void GRUCell::normalize_input(TensorView gi, GRUStepCache& cache) const {
    cell_normalize_input(params, cfg.hidden_size, gi, cache.ln_i, cache.rstd_i);
}

// d_gi, d_gh: the normalised sums' gradients in, the bare products' out (layer_norm.h); the
// gains' and biases' gradients into g.
static void ln_backward(const RNNCellParams& p, RNNCellParams& g, const GRUStepCache& cache, int H,
                        TensorView d_gi, TensorView d_gh) {
    layer_norm::blocks_backward(d_gh, H, p.ln_weight_hh, cache.ln_h, cache.rstd_h, g.ln_weight_hh,
                                g.bias_hh);
    layer_norm::blocks_backward(d_gi, H, p.ln_weight_ih, cache.ln_i, cache.rstd_i, g.ln_weight_ih,
                                g.bias_ih);
}

void GRUCell::project_input_backward(ConstTensorView d_gi, ConstTensorView x, TensorView d_x) {
    cell_project_input_backward(params, grad, d_gi, x, d_x);
}

void GRUCell::forward_projected(ConstTensorView gi, ConstTensorView h, TensorView h_new,
                                GRUStepCache& cache, StepMask mask, WeightTRows whh_t) const {
    const int H = cfg.hidden_size;
    NZ_CHECK(h.ndim() == 2 && h.dim(1) == H, "GRUCell: h {} needs (N, {})", h.shape().str(), H);
    const int N = h.dim(0);
    NZ_CHECK_SHAPE(gi, {N, 3 * H});
    // gh = (0 + b_hh) + h W_hhᵀ: the bias rows written once (no zero fill, no add pass), then
    // the product accumulated onto them, the same sums as adding into a zeroed buffer
    const bool ln = params.layer_norm();
    cache.gates.resize({N, 3 * H}, absent(params.bias_hh) || ln);
    cache.gh_n.resize({N, H}, false);
    if (N > 0 && !absent(params.bias_hh) && !ln) {
        gemm_xwt_bias(N, 3 * H, H, h.data(), H, params.weight_hh.data(), H, whh_t,
                      params.bias_hh.data(), cache.gates.data(), 3 * H);
    } else {
        cell_add_recurrent(params, h, cache.gates, whh_t);
    }
    if (ln) {  // gh = LN(h W_hhᵀ; γ_hh) + b_hh
        cache.ln_h.resize({N, 3 * H}, false);
        cache.rstd_h.resize({N, 3}, false);
        layer_norm::blocks_forward(cache.gates, H, params.ln_weight_hh, params.bias_hh, cache.ln_h,
                                   cache.rstd_h);
    }
    gru::gates_forward(gi, h, cache.gates, cache.gh_n, h_new, mask);
}

void GRUCell::backward_projected(ConstTensorView d_h_new, ConstTensorView h,
                                 const GRUStepCache& cache, TensorView d_gi, TensorView d_h,
                                 StepMask mask) {
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK_SHAPE(d_gi, {N, 3 * H});
    d_gi_.resize({N, 3 * H}, false);
    d_gh_.resize({N, 3 * H}, false);
    gru::gates_backward(d_h_new, h, cache.gates, cache.gh_n, d_gi_, d_gh_, d_h, mask);
    kernels::axpy(d_gi_.numel(), 1.0f, d_gi_.data(), d_gi.data());
    if (params.layer_norm())
        layer_norm::blocks_backward(d_gh_, H, params.ln_weight_hh, cache.ln_h, cache.rstd_h,
                                    grad.ln_weight_hh, grad.bias_hh);
    cell_add_recurrent_backward(params, grad, d_gh_, h, d_h);
}

void GRUCell::forward(ConstTensorView x, ConstTensorView h, TensorView h_new, GRUStepCache& cache,
                      StepMask mask, WeightTRows wih_t, WeightTRows whh_t) const {
    NZ_CHECK(x.ndim() == 2 && x.dim(1) == cfg.input_size && h.ndim() == 2 && x.dim(0) == h.dim(0),
             "GRUCell::forward: x {} and h {} do not fit input_size {}", x.shape().str(),
             h.shape().str(), cfg.input_size);
    cache.gi.resize({x.dim(0), 3 * cfg.hidden_size}, false);
    cell_project_input(params, x, cache.gi, wih_t);
    normalize_input(cache.gi, cache);
    forward_projected(cache.gi, h, h_new, cache, mask, whh_t);
}

void GRUCell::backward(ConstTensorView d_h_new, ConstTensorView x, ConstTensorView h,
                       const GRUStepCache& cache, TensorView d_x, TensorView d_h, StepMask mask) {
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK(x.ndim() == 2 && x.dim(0) == N, "GRUCell::backward: x {} for h {}", x.shape().str(),
             h.shape().str());
    d_gi_.resize({N, 3 * H}, false);
    d_gh_.resize({N, 3 * H}, false);
    gru::gates_backward(d_h_new, h, cache.gates, cache.gh_n, d_gi_, d_gh_, d_h, mask);
    if (params.layer_norm()) ln_backward(params, grad, cache, H, d_gi_, d_gh_);
    cell_add_recurrent_backward(params, grad, d_gh_, h, d_h);
    cell_project_input_backward(params, grad, d_gi_, x, d_x);
}

void GRUCell::backward_data(ConstTensorView d_h_new, ConstTensorView h, const GRUStepCache& cache,
                            TensorView d_gi, TensorView d_gh, TensorView d_x, TensorView d_h,
                            StepMask mask) {
    const int N = h.dim(0), H = cfg.hidden_size;
    NZ_CHECK_SHAPE(d_gi, {N, 3 * H});
    NZ_CHECK_SHAPE(d_gh, {N, 3 * H});
    gru::gates_backward(d_h_new, h, cache.gates, cache.gh_n, d_gi, d_gh, d_h, mask);
    if (params.layer_norm()) ln_backward(params, grad, cache, H, d_gi, d_gh);
    // gh = h W_hhᵀ + b_hh  =>  d_h += d_gh W_hh;   gi = x W_ihᵀ + b_ih  =>  d_x += d_gi W_ih
    gemm(d_gh, false, params.weight_hh, false, d_h, 1.0f, 1.0f);
    if (!absent(d_x)) {
        NZ_CHECK_SHAPE(d_x, {N, cfg.input_size});
        gemm(d_gi, false, params.weight_ih, false, d_x, 1.0f, 1.0f);
    }
}

}  // namespace nazar
