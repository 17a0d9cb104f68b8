// Embedding: lookup, sparse touched-row gradients, padding_idx, error paths.
#include "nazar/core/params.h"
#include "nazar/nn/embedding.h"
#include "tests/common/test_util.h"

#include <cmath>
#include <vector>

namespace test_nn_embedding {

using namespace nazar;
using nazar::test::close_abs;
using nazar::test::random_tensor;

[[maybe_unused]] static Tensor T2(int r, int c, std::vector<float> v) {
    return Tensor::from({r, c}, v);
}

TEST(Embedding, LookupAndSparseGradient) {
    Rng rng(4);
    Embedding emb({.num_embeddings = 5, .embedding_dim = 2, .padding_idx = 0}, rng);
    EXPECT_FLOAT_EQ(emb.params.weight.at(0, 0), 0.0f);  // padding row zero
    emb.params.weight = T2(5, 2, {0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
    const std::vector<int32_t> ids{3, 1, 3, 0};
    Tensor out({2, 2, 2});  // a (B=2, T=2) batch of ids
    emb.forward(ids, out);
    EXPECT_TRUE(close_abs(out.reshape({4, 2}), T2(4, 2, {5, 6, 1, 2, 5, 6, 0, 0}), 0));

    Tensor d = T2(4, 2, {1, 1, 2, 2, 3, 3, 4, 4});
    emb.backward(d, ids);
    // row 3 gets d[0] + d[2] = [4, 4]; row 1 gets [2, 2]; row 0 is the padding row: nothing
    EXPECT_TRUE(close_abs(emb.grad.weight, T2(5, 2, {0, 0, 2, 2, 0, 0, 4, 4, 0, 0}), 0));
    EXPECT_EQ(std::vector<int32_t>(emb.touched_rows().begin(), emb.touched_rows().end()),
              (std::vector<int32_t>{1, 3}));
    const std::vector<int32_t> ids2{4, 1};
    emb.backward(T2(2, 2, {1, 0, 0, 1}), ids2);
    EXPECT_EQ(std::vector<int32_t>(emb.touched_rows().begin(), emb.touched_rows().end()),
              (std::vector<int32_t>{1, 3, 4}));
    EXPECT_FLOAT_EQ(emb.grad.weight.at(1, 1), 3.0f);
    emb.zero_grad();
    EXPECT_TRUE(emb.touched_rows().empty());
    EXPECT_TRUE(close_abs(emb.grad.weight, Tensor({5, 2}), 0));
}

TEST(Embedding, OutOfRangeIdNamesIdAndV) {
    Rng rng(5);
    Embedding emb({.num_embeddings = 5, .embedding_dim = 2}, rng);
    Tensor out({2, 2});
    const std::vector<int32_t> bad{1, 7};
    try {
        emb.forward(bad, out);
        FAIL() << "no throw";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("id 7"), std::string::npos) << msg;
        EXPECT_NE(msg.find("[0, 5)"), std::string::npos) << msg;
    }
    const std::vector<int32_t> neg{-1, 0};
    EXPECT_THROW(emb.forward(neg, out), Error);
    EXPECT_THROW(emb.backward(out, neg), Error);
    Tensor wrong({3, 2});
    const std::vector<int32_t> ok{1, 2};
    EXPECT_THROW(emb.forward(ok, wrong), Error);
    EXPECT_THROW(Embedding({.num_embeddings = 5, .embedding_dim = 2, .padding_idx = 5}, rng),
                 Error);
}

}  // namespace test_nn_embedding
