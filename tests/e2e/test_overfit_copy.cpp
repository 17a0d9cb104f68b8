// End-to-end: a tiny copy task (target = source) is learnt to near-zero loss with Adam in a
// few hundred steps, and greedy decoding then reproduces every input followed by </s>.
// Fixed seeds and a step budget, no timing thresholds (the run takes well under a second).
#include "nazar/decode/greedy.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "nazar/train/optim.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

namespace nazar {
namespace test_overfit_copy {
namespace {

ModelConfig copy_config(DecoderKind kind, ScoreKind score) {
    ModelConfig c;
    c.src_vocab_size = c.tgt_vocab_size = 12;  // 8 symbols
    c.embedding_size = 16;
    c.encoder = {.cell = CellType::gru, .hidden_size = 24, .num_layers = 1, .bidirectional = true};
    c.decoder.kind = kind;
    c.decoder.hidden_size = 32;
    c.decoder.input_feeding = kind == DecoderKind::luong;
    c.attention.score = score;
    c.attention.attention_size = 24;
    return c;
}

void overfit_copy(const ModelConfig& cfg) {
    Rng data_rng(5);
    std::vector<std::vector<int32_t>> sents;
    for (int i = 0; i < 24; ++i) {
        std::vector<int32_t> s(3 + data_rng.below(5));
        for (auto& x : s) x = 4 + static_cast<int32_t>(data_rng.below(8));
        sents.push_back(s);
    }
    const Batch batch = test::make_batch(sents, sents);
    Seq2Seq model(cfg, 7);
    ParamList params = model.parameters();
    Optimizer adam = Optimizer::adam(params, {.lr = 1e-2});
    Rng rng(3);
    double per_token = 1e9;
    int steps = 0;
    for (; steps < 600 && per_token > 0.01; ++steps) {
        zero_grads(params);
        const LossStats st = TrainPass(model).train_step(batch, {}, rng);
        per_token = st.loss / static_cast<double>(st.tokens);
        adam.step();
    }
    EXPECT_LT(per_token, 0.01) << "after " << steps << " steps";
    EXPECT_LT(TrainPass(model).eval_loss(batch).loss / static_cast<double>(batch.tgt_tokens()),
              0.02);
    const auto out = greedy_decode(model, batch.src, batch.src_lengths, batch.S);
    int exact = 0;
    for (std::size_t i = 0; i < sents.size(); ++i) {
        std::vector<int32_t> want = sents[i];
        want.push_back(3);
        exact += out[i].tokens == want;
        EXPECT_EQ(out[i].tokens, want) << "sentence " << i;
    }
    EXPECT_EQ(exact, static_cast<int>(sents.size()));
}

TEST(OverfitCopy, Bahdanau) {
    overfit_copy(copy_config(DecoderKind::bahdanau, ScoreKind::additive));
}
TEST(OverfitCopy, LuongGeneralInputFeeding) {
    overfit_copy(copy_config(DecoderKind::luong, ScoreKind::general));
}

}  // namespace
}  // namespace test_overfit_copy
}  // namespace nazar
