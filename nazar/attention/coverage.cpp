// Coverage score kernels and the coverage vector's recurrence (coverage.h). The score of one
// position is the fused additive kernel's with the query half shifted by cov_j w_c, so the SIMD
// add + tanh + dot of additive_kernels.cpp does the work (its lanes at any A).
#include "nazar/attention/coverage.h"

#include "nazar/attention/additive_kernels.h"
#include "nazar/attention/vec.h"
#include "nazar/core/kernels.h"

#include <algorithm>
#include <cstdint>

namespace nazar::attn {

namespace {
// u_j = u + c w_c
void shifted_query(const float* u, const float* w_c, float c, int A, float* u_j) {
    std::copy(u, u + A, u_j);
    kernels::axpy(A, c, w_c, u_j);
}
}  // namespace

void coverage_scores(const float* u, const float* keys, const float* v, const float* w_c,
                     const float* cov, int n, int A, float* u_j, float* tmp, float* e) {
    for (int j = 0; j < n; ++j) {
        shifted_query(u, w_c, cov[j], A, u_j);
        additive_scores(u_j, keys + int64_t{j} * A, v, 1, A, tmp, e + j);
    }
}

void coverage_scores_backward(const float* u, const float* keys, const float* v, const float* w_c,
                              const float* cov, const float* d_e, int n, int A, float* u_j,
                              float* tmp, float* d_pre, float* d_u, float* d_keys, float* d_v,
                              float* d_w_c, float* d_cov) {
    for (int j = 0; j < n; ++j) {
        // the additive backward of one position with query u_j: d_pre_j into a zeroed buffer
        shifted_query(u, w_c, cov[j], A, u_j);
        std::fill(d_pre, d_pre + A, 0.0f);
        additive_scores_backward(u_j, keys + int64_t{j} * A, v, d_e + j, 1, A, tmp, d_pre,
                                 d_keys + int64_t{j} * A, d_v);
        // pre_j = u + k_j + cov_j w_c  =>  d_u += d_pre_j;  d_w_c += cov_j d_pre_j;
        // d_cov_j += w_c · d_pre_j
        kernels::axpy(A, 1.0f, d_pre, d_u);
        kernels::axpy(A, cov[j], d_pre, d_w_c);
        if (d_cov != nullptr) d_cov[j] += dot8(w_c, d_pre, A);
    }
}

void advance_coverage(const AttentionStepCache& prev, Tensor& next) {
    const int B = prev.coverage.dim(0), S = prev.coverage.dim(1), W = prev.weights.dim(1);
    NZ_CHECK_SHAPE(prev.weights, {B, W});
    NZ_CHECK(static_cast<int>(prev.start.size()) == B && static_cast<int>(prev.count.size()) == B,
             "coverage: the previous step has {} windows for {} rows", prev.start.size(), B);
    next.resize({B, S}, false);
    next.copy_from(prev.coverage);
    for (int b = 0; b < B; ++b) {  // cov_{t+1}[start + j] += α_t[j]
        const float* wt = prev.weights.data() + int64_t{b} * W;
        float* c = next.data() + int64_t{b} * S + prev.start[b];
        for (int j = 0; j < prev.count[b]; ++j) c[j] += wt[j];
    }
}

void start_coverage(int B, int S, Tensor& cov) {
    cov.resize({B, S}, false);
    cov.zero();
}

}  // namespace nazar::attn
