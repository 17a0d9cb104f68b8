// One decoder step of monotonic attention (and MoChA) for the step-level tests
// (tests/unit/test_monotonic_attention.cpp, test_mocha_attention.cpp): a random step with padded,
// length-1 and empty sentences, α_{t−1} a random sub-distribution, and the backward checked
// against the double-precision oracle (attn::naive with MonotonicStep).
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/attention/naive.h"
#include "tests/common/test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace nazar::test::monotonic {

constexpr int kB = 5, kS = 19;
inline const std::vector<int> kLengths{kS, 1, 0, 13, 7};  // padded, length 1 and empty sentences

// A step's inputs: random parameters (a learned scale of 0.7; MoChA's v_c 3 times its draw, so
// that the chunks are far from uniform), queries, encoder states, an upstream d c, and α_{t−1} a
// random sub-distribution over each sentence's positions (0 at padding), as a middle step sees.
struct Problem {
    Problem(AttentionConfig cfg, uint64_t seed)
        : rng(seed),
          att(cfg, rng),
          q(random_tensor(rng, {kB, cfg.query_size}, -1.5, 1.5)),
          h(random_tensor(rng, {kB, kS, cfg.context_size}, -1.5, 1.5)),
          d_ctx(random_tensor(rng, {kB, cfg.context_size})),
          prev({kB, kS}),
          noise(random_tensor(rng, {kB, kS}, -1, 1)) {
        if (cfg.scale == ScaleMode::learned) att.params.scale[0] = 0.7f;
        for (int b = 0; b < kB; ++b) {
            float left = 0.9f;
            for (int j = 0; j < kLengths[b]; ++j) {
                const float a = left * rng.uniform(0.0f, 0.6f);
                prev.at(b, j) = a;
                left -= a;
            }
        }
        for (int64_t i = 0; i < att.params.v_c.numel(); ++i) att.params.v_c[i] *= 3.0f;
        att.precompute(h, keys);
    }
    Rng rng;
    Attention att;
    Tensor q, h, d_ctx, prev, noise;
    AttentionKeys keys;
};

inline AttentionStepCache step_cache(const Problem& pb, bool noisy, bool hard) {
    AttentionStepCache cache;
    cache.previous = Tensor::clone(pb.prev);
    if (noisy) cache.noise = Tensor::clone(pb.noise);
    cache.hard = hard;
    return cache;
}

// |got − ref| ≤ tol · max(1, max|ref|)
inline ::testing::AssertionResult close_grad(ConstTensorView got, ConstTensorView ref, double tol) {
    double mx = 1.0;
    for (int64_t i = 0; i < ref.numel(); ++i) mx = std::max(mx, std::fabs(double(ref[i])));
    return close_abs(got, ref, tol * mx);
}

inline Tensor one_hot_previous(const std::vector<int>& at) {
    Tensor prev({kB, kS});
    for (int b = 0; b < kB; ++b)
        if (at[b] >= 0) prev.at(b, at[b]) = 1.0f;
    return prev;
}

// Tolerance as tests/unit/test_attention_oracle.cpp: float32 sums of ≤ 19 positions of O(1)
// terms; a wrong term or transpose is ≥ 1e-2.
constexpr double kGradTol = 5e-5;

// Step t = 3's backward (d c = pb.d_ctx, d α_{t−1} collected) against the oracle's: d query,
// d enc_out, d α_{t−1} and every parameter's gradient. Returns how many parameters were compared.
inline int expect_backward_matches_oracle(Problem& pb, bool noisy, const std::string& what) {
    Attention& att = pb.att;
    const int H = att.cfg.query_size, C = att.cfg.context_size;
    AttentionStepCache cache = step_cache(pb, noisy, false);
    Tensor ctx({kB, C}), d_q({kB, H}), d_h({kB, kS, C}), d_prev({kB, kS});
    Tensor d_keys = Tensor::like(pb.keys.keys);
    Tensor d_q_ref({kB, H}), d_h_ref({kB, kS, C}), d_prev_ref({kB, kS});
    att.grad.visit([](const std::string&, Tensor& g) { g.zero(); });
    AttentionParams ref = att.grad;
    att.forward(pb.q, pb.keys, pb.h, kLengths, 3, ctx, cache);
    AttentionExtraGrad extra;
    extra.d_previous = d_prev;
    att.extra = &extra;
    att.backward(pb.d_ctx, pb.q, pb.keys, pb.h, kLengths, cache, d_q, d_keys, d_h);
    att.extra = nullptr;
    att.precompute_backward(pb.h, d_keys, d_h);
    attn::naive::MonotonicStep mono;
    mono.previous = pb.prev;
    if (noisy) mono.noise = pb.noise;
    mono.d_previous = d_prev_ref;
    attn::naive::attention_backward(att, pb.q, pb.h, kLengths, 3, pb.d_ctx, d_q_ref, d_h_ref, ref,
                                    &mono);
    EXPECT_TRUE(close_grad(d_q, d_q_ref, kGradTol)) << what << " d_query";
    EXPECT_TRUE(close_grad(d_h, d_h_ref, kGradTol)) << what << " d_enc_out";
    EXPECT_TRUE(close_grad(d_prev, d_prev_ref, kGradTol)) << what << " d_previous";
    int checked = 0;
    ref.visit([&](const std::string& name, Tensor& r) {
        Tensor* got = nullptr;
        att.grad.visit([&](const std::string& n, Tensor& g) {
            if (n == name) got = &g;
        });
        if (r.numel() > 0) {
            ++checked;
            EXPECT_TRUE(close_grad(*got, r, kGradTol)) << what << " " << name;
        }
    });
    return checked;
}

}  // namespace nazar::test::monotonic
