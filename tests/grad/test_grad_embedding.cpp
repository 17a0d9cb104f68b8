// Finite-difference check of Embedding::backward: repeated ids accumulate, the padding row
// gets no gradient (PyTorch's padding_idx), and touched_rows() lists exactly the rows used.
#include "nazar/nn/embedding.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_util.h"

#include <vector>

namespace test_grad_embedding {

using namespace nazar;
using namespace nazar::test;

TEST(EmbeddingGrad, RepeatedIdsAndPaddingRow) {
    Rng rng(51);
    const int V = 6, E = 3;
    Embedding emb({.num_embeddings = V, .embedding_dim = E, .padding_idx = 0}, rng);
    const std::vector<int32_t> ids{2, 5, 2, 0, 3, 0};  // a (2, 3) batch; 0 = <pad>
    Tensor out({2, 3, E}), R = random_tensor(rng, {2, 3, E});
    auto loss = [&] {
        emb.forward(ids, out);
        return dot_loss(out, R);
    };
    loss();
    emb.backward(R, ids);
    // Rows 1..V-1 only: the padding row's output does depend on it numerically, but PyTorch
    // (and nazar) give it no gradient by definition. Linear in the weights: exact up to rounding.
    EXPECT_TRUE(check_gradients(
        loss, {{"weight[1:]", emb.params.weight.slice(1, V), emb.grad.weight.slice(1, V)}},
        {.eps = 1e-2, .rtol = 1e-3, .atol = 5e-4}));
    for (int e = 0; e < E; ++e) EXPECT_EQ(emb.grad.weight.at(0, e), 0.0f);
    EXPECT_EQ(std::vector<int32_t>(emb.touched_rows().begin(), emb.touched_rows().end()),
              (std::vector<int32_t>{2, 3, 5}));
}

}  // namespace test_grad_embedding
