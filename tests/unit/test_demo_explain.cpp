// `nazar explain model`: the by-hand decoder step (plain loops in double) agrees with the model's
// own step for Bahdanau and Luong general, and the walk-through prints the four steps.
#include "apps/demo/explain.h"

#include <gtest/gtest.h>

namespace test_demo_explain {

using namespace nazar;

TEST(DemoExplain, ByHandStepMatchesTheModel) {
    for (DecoderKind k : {DecoderKind::bahdanau, DecoderKind::luong}) {
        const demo::StepWalkthrough w = demo::explain_model_step(k);
        SCOPED_TRACE(to_string(k));
        // float32 model vs double by hand on O(1) values of size-4 vectors: 1e-5 is ~100 ulp
        EXPECT_LT(w.max_weight_diff, 1e-5);
        EXPECT_LT(w.max_logp_diff, 1e-5);
        for (const char* part : {"1. scores", "2. weights", "3. context", "p(y_2)",
                                 "check against DecodeSession::step"})
            EXPECT_NE(w.text.find(part), std::string::npos) << part;
    }
    EXPECT_NE(demo::explain_model_step(DecoderKind::bahdanau)
                  .text.find("U_a = attention.key.weight (3x4)"),
              std::string::npos);
    EXPECT_NE(demo::explain_model_step(DecoderKind::luong)
                  .text.find("W_c = decoder.combine.weight (4x8)"),
              std::string::npos);
}

}  // namespace test_demo_explain
