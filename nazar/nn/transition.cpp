// Deep-transition GRU steps (see transition.h; docs/spec.md §2.4).
#include "nazar/nn/transition.h"

#include "nazar/core/check.h"
#include "nazar/core/kernels.h"
#include "nazar/nn/absent.h"
#include "nazar/nn/gru_cell.h"
#include "nazar/nn/layer_norm.h"

#include <cmath>

namespace nazar {

TransitionParams make_transition_params(int hidden_size, bool bias, Rng* rng, ParamMode mode,
                                        bool layer_norm) {
    NZ_CHECK(hidden_size > 0, "deep transition: hidden size must be positive, got {}", hidden_size);
    const int GH = 3 * hidden_size;
    TransitionParams p;
    if (mode == ParamMode::inference && !rng) return p;  // no gradient: every tensor absent
    p.weight_hh = make_param({GH, hidden_size}, mode);
    if (bias) {
        p.bias_ih = make_param({GH}, mode);
        p.bias_hh = make_param({GH}, mode);
    }
    if (rng && mode == ParamMode::training) {  // as a GRU cell's tensors, in visit order
        const float k = 1.0f / std::sqrt(static_cast<float>(hidden_size));
        p.visit(
            [&](const std::string&, Tensor& t) {
                if (!absent(t)) rng->fill_uniform(t, -k, k);
            },
            "");
    }
    if (layer_norm) {  // after the draws: γ = 1 (training values), 0 (a gradient), placeholders
        p.ln_weight_hh = make_param({GH}, mode);
        if (rng && mode == ParamMode::training) p.ln_weight_hh.fill(1.0f);
    }
    return p;
}

namespace transition {

void prepare(const std::vector<TransitionParams>& P, int64_t N, int B, int H, TransitionCache& tc) {
    const std::size_t J = P.size();
    for (auto* v : {&tc.h, &tc.gates, &tc.gh_n, &tc.ln_h, &tc.rstd_h}) v->resize(J);
    tc.whh_t.resize(J);
    tc.out.resize({N, H}, false);
    tc.bias_rows.resize({static_cast<int64_t>(J) * B, 3 * H}, false);
    for (std::size_t i = 0; i < J; ++i) {
        tc.h[i].resize({N, H}, false);
        tc.gates[i].resize({N, 3 * H}, false);
        tc.gh_n[i].resize({N, H}, false);
        if (P[i].layer_norm()) {
            tc.ln_h[i].resize({N, 3 * H}, false);
            tc.rstd_h[i].resize({N, 3}, false);
        }
        // the gate kernel's gi: b_ih,j on each of B rows (0 without biases)
        const TensorView rows =
            tc.bias_rows.slice(static_cast<int64_t>(i) * B, static_cast<int64_t>(i + 1) * B);
        rows.zero();
        if (!absent(P[i].bias_ih))
            for (int b = 0; b < B; ++b)
                kernels::axpy(3 * H, 1.0f, P[i].bias_ih.data(), rows.data() + int64_t{b} * 3 * H);
        refresh_weight_t_for_rows(tc.whh_t[i], P[i].weight_hh, B);
    }
}

namespace {

// a (n, 3H) = h W_jᵀ + b_hh,j, or LN(h W_jᵀ; γ_j) + b_hh,j (â and rstd kept when given)
void recurrent(const TransitionParams& p, int H, ConstTensorView h, TensorView a,
               const WeightT& whh_t, TensorView xhat, TensorView rstd) {
    const int n = h.dim(0);
    const bool ln = p.layer_norm();
    const float* bias = ln || absent(p.bias_hh) ? nullptr : p.bias_hh.data();
    gemm_xwt_bias(n, 3 * H, H, h.data(), H, p.weight_hh.data(), H, weight_t_rows(whh_t), bias,
                  a.data(), 3 * H);
    if (ln) layer_norm::blocks_forward(a, H, p.ln_weight_hh, p.bias_hh, xhat, rstd);
}

ConstTensorView bias_rows(const TransitionCache& tc, std::size_t i, int n) {
    const int64_t B = tc.bias_rows.dim(0) / static_cast<int64_t>(tc.whh_t.size());
    return tc.bias_rows.slice(static_cast<int64_t>(i) * B, static_cast<int64_t>(i) * B + n);
}

}  // namespace

void forward(const std::vector<TransitionParams>& P, int H, int64_t o, int n, TransitionCache& tc) {
    const std::size_t J = P.size();
    for (std::size_t i = 0; i < J; ++i) {
        const TensorView h = tc.h[i].slice(o, o + n), a = tc.gates[i].slice(o, o + n);
        const bool ln = P[i].layer_norm();
        recurrent(P[i], H, h, a, tc.whh_t[i], ln ? tc.ln_h[i].slice(o, o + n) : TensorView(),
                  ln ? tc.rstd_h[i].slice(o, o + n) : TensorView());
        const TensorView h_new = (i + 1 < J ? tc.h[i + 1] : tc.out).slice(o, o + n);
        gru::gates_forward(bias_rows(tc, i, n), h, a, tc.gh_n[i].slice(o, o + n), h_new);
    }
}

void infer(const std::vector<TransitionParams>& P, int H, TensorView h, TensorView gates,
           TensorView gh_n, const TransitionCache& tc) {
    const int n = h.dim(0);
    for (std::size_t i = 0; i < P.size(); ++i) {
        recurrent(P[i], H, h, gates, tc.whh_t[i], {}, {});
        gru::gates_forward(bias_rows(tc, i, n), h, gates, gh_n, h);  // h_new may alias h
    }
}

void backward(const std::vector<TransitionParams>& P, std::vector<TransitionParams>& grad, int H,
              int64_t o, int n, const TransitionCache& tc, std::vector<Tensor>& d_gh, TensorView d,
              TensorView d_tmp, TensorView d_gi) {
    for (std::size_t i = P.size(); i-- > 0;) {
        const TensorView dgh = d_gh[i].slice(o, o + n);
        d_tmp.zero();
        gru::gates_backward(d, tc.h[i].slice(o, o + n), tc.gates[i].slice(o, o + n),
                            tc.gh_n[i].slice(o, o + n), d_gi, dgh, d_tmp);
        if (!absent(grad[i].bias_ih)) kernels::sum_rows_into(d_gi, grad[i].bias_ih);
        if (P[i].layer_norm())  // d_gh: of g, then of h W_jᵀ; γ_j's and b_hh,j's gradients
            layer_norm::blocks_backward(dgh, H, P[i].ln_weight_hh, tc.ln_h[i].slice(o, o + n),
                                        tc.rstd_h[i].slice(o, o + n), grad[i].ln_weight_hh,
                                        grad[i].bias_hh);
        gemm(dgh, false, P[i].weight_hh, false, d_tmp, 1.0f, 1.0f);  // d h^{j−1} += d_g W_j
        d.copy_from(d_tmp);
    }
}

void weight_grads(std::vector<TransitionParams>& grad, int64_t N, const TransitionCache& tc,
                  const std::vector<Tensor>& d_gh) {
    if (N == 0) return;
    for (std::size_t i = 0; i < grad.size(); ++i) {
        const ConstTensorView dg = d_gh[i].slice(0, N);
        gemm(dg, true, tc.h[i].slice(0, N), false, grad[i].weight_hh, 1.0f, 1.0f);
        if (!absent(grad[i].bias_hh) && absent(grad[i].ln_weight_hh))
            kernels::sum_rows_into(dg, grad[i].bias_hh);
    }
}

}  // namespace transition

}  // namespace nazar
