// Attention vs PyTorch (tests/parity/parity.h): additive, concat, dot, general, scaled dot,
// general with a learned scale, local-m, local-p (general and additive scores).
// As a decoder uses it: keys once (precompute), T steps of forward over a padded batch, the
// per-step backwards accumulating into d_keys / d_enc_out, then ONE precompute_backward.
// Compared: the contexts (T, B, C), the dense weights (T, B, S) (zero at padding and outside
// the window), d_query (T, B, H), d_enc_out (B, S, C) and every parameter gradient by name.
//
// Tolerance 1e-5 (norm-wise relative) throughout: float64 reference vs float32 nazar; a step is
// a few dot products of length <= 6 and a softmax over <= 9 positions (error ~1e-7), the local-p
// position p_t = S_b·sigmoid(·) adds a factor S_b <= 9. A wrong window, a missing mask or a
// transposed weight gives errors of 1e-2 or more.
#include "parity.h"

#include "nazar/attention/attention.h"
#include "nazar/core/rng.h"

#include <gtest/gtest.h>

namespace nazar {
namespace test_parity_attention {
namespace {

using test::Fixture;
constexpr double kTol = 1e-5;

AttentionConfig config_of(const nlohmann::json& c) {
    AttentionConfig cfg;
    cfg.score = parse_score_kind(c["score"].get<std::string>());
    cfg.scale = parse_scale_mode(c["scale"].get<std::string>());
    cfg.local = parse_local_mode(c["local"].get<std::string>());
    cfg.window = c["window"].get<int>();
    cfg.query_size = c["query_size"].get<int>();
    cfg.context_size = c["context_size"].get<int>();
    cfg.attention_size = c["attention_size"].get<int>();
    cfg.position_size = c["position_size"].get<int>();
    return cfg;
}

void check_attention(const std::string& name) {
    Fixture f(name);
    Rng rng(1);
    Attention att(config_of(f.config), rng);
    ParamList params;
    collect_params(att.params, att.grad, "", params);
    f.set_params(params);
    zero_grads(params);

    const Tensor &query = f["query"], &enc_out = f["enc_out"];  // (T, B, H), (B, S, C)
    const std::vector<int> lengths = f.ints("lengths");
    const int T = query.dim(0), B = query.dim(1), H = query.dim(2);
    const int S = enc_out.dim(1), C = enc_out.dim(2);
    ASSERT_EQ(T, f.config["steps"].get<int>());

    AttentionKeys keys;
    att.precompute(enc_out, keys);
    std::vector<AttentionStepCache> caches(static_cast<std::size_t>(T));
    Tensor context(Shape{T, B, C}), weights(Shape{T, B, S});
    for (int t = 0; t < T; ++t) {
        att.forward(query.select(t), keys, enc_out, lengths, t, context.select(t), caches[t]);
        dense_weights(caches[t], weights.select(t));
    }

    // Backward in reverse step order, as a decoder does; d_keys collects every step.
    const Tensor& R = f["R.context"];  // (T, B, C)
    Tensor d_query(Shape{T, B, H}), d_enc_out = Tensor::like(enc_out);
    Tensor d_keys = Tensor::like(keys.keys);
    for (int t = T - 1; t >= 0; --t)
        att.backward(R.select(t), query.select(t), keys, enc_out, lengths, caches[t],
                     d_query.select(t), d_keys.view(), d_enc_out);
    att.precompute_backward(enc_out, d_keys, d_enc_out);

    f.expect_output("context", context, kTol);
    f.expect_output("weights", weights, kTol);
    f.expect_grad("query", d_query, kTol);
    f.expect_grad("enc_out", d_enc_out, kTol);
    f.expect_grads(params, kTol);
    f.expect_all_compared();
}

TEST(ParityAttention, Additive) {
    check_attention("attention_additive");
}
TEST(ParityAttention, Concat) {
    check_attention("attention_concat");
}
TEST(ParityAttention, Dot) {
    check_attention("attention_dot");
}
TEST(ParityAttention, General) {
    check_attention("attention_general");
}
TEST(ParityAttention, ScaledDot) {
    check_attention("attention_scaled_dot");
}
TEST(ParityAttention, GeneralLearnedScale) {
    check_attention("attention_general_learned_scale");
}
TEST(ParityAttention, LocalMonotonic) {
    check_attention("attention_local_m");
}  // D = 1, t past S_b − 1
TEST(ParityAttention, LocalPredictive) {
    check_attention("attention_local_p");
}  // D = 2, P = 3
TEST(ParityAttention, LocalPredictiveAdditive) {
    check_attention("attention_local_p_additive");
}  // D = 1

}  // namespace
}  // namespace test_parity_attention
}  // namespace nazar
