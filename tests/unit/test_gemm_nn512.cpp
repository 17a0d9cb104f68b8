// nazar's own NN kernel (nazar/core/gemm/nn512.h) and the per-batch transposed weights built on
// it (refresh_weight_t / gemm_xwt, blas.h): the kernel against the naive oracle over row counts
// that exercise every tile height and the 64-block recursion, column tails of the 32-wide
// strips, K around the 256 block, padded leading dimensions, alpha/beta (beta = 0 must not read
// C); column ranges leave the rest of C alone; gemm_xwt through Wᵀ equals the NT product; and a
// whole model computes the same loss, gradients and decoding log-probabilities with the kernel
// on and off. Where the CPU lacks AVX-512 all of them are skipped (the model test would compare
// OpenBLAS with itself). Every switch a test turns is restored (tests/common/kernel_switches.h).
#include "nazar/core/blas.h"
#include "nazar/core/gemm/nn512.h"
#include "nazar/core/threads.h"
#include "nazar/models/decode_session.h"
#include "nazar/models/seq2seq.h"
#include "nazar/models/train_pass.h"
#include "tests/common/kernel_switches.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace nazar {
namespace test_gemm_nn512 {
namespace {

// float sums of K <= 600 products in [-1, 1] against a double oracle (as test_blas_threading)
constexpr double kTol = 1e-4;

struct Mats {
    int M, N, K, lda, ldb, ldc;
    std::vector<float> A, B, C;
};

Mats random_mats(int M, int N, int K, uint64_t seed) {
    Rng rng(seed);
    Mats m{M, N, K, K + 3, N + 5, N + 2, {}, {}, {}};
    m.A.resize(static_cast<std::size_t>(M) * m.lda);
    m.B.resize(static_cast<std::size_t>(K) * m.ldb);
    m.C.resize(static_cast<std::size_t>(M) * m.ldc);
    for (auto* v : {&m.A, &m.B, &m.C})
        for (float& x : *v) x = rng.uniform(-1, 1);
    return m;
}

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
    double worst = 0, scale = 1e-30;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(got[i]) != std::isnan(want[i]))
            return std::numeric_limits<double>::infinity();
        if (std::isnan(want[i])) continue;
        worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
        scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    }
    return worst / scale;
}

class Nn512 : public ::testing::Test {
protected:
    void SetUp() override {
        if (!detail::set_nn512(true)) GTEST_SKIP() << "no AVX-512 on this CPU";
    }
    test::SwitchGuard<bool> keep_ = test::keep_nn512();  // made before SetUp, restored after
};

TEST_F(Nn512, KernelMatchesTheOracle) {
    int cases = 0;
    for (int M : {1, 2, 5, 8, 12, 13, 23, 25, 64, 100})
        for (int N : {1, 15, 16, 17, 31, 32, 33, 100})
            for (int K : {1, 7, 255, 256, 257, 600}) {
                if (M * N * K > 2'000'000) continue;
                for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, 2.0f}}) {
                    Mats m = random_mats(M, N, K, static_cast<uint64_t>(M * 1000 + N * 10 + K));
                    std::vector<float> want = m.C;
                    detail::gemm_nn512(M, 0, N, K, alpha, m.A.data(), m.lda, m.B.data(), m.ldb,
                                       beta, m.C.data(), m.ldc);
                    gemm_naive(false, false, M, N, K, alpha, m.A.data(), m.lda, m.B.data(), m.ldb,
                               beta, want.data(), m.ldc);
                    ASSERT_LE(rel_err(m.C, want), kTol)
                        << "M " << M << " N " << N << " K " << K << " beta " << beta;
                    ++cases;
                }
            }
    EXPECT_GT(cases, 500);
}

TEST_F(Nn512, ManyRowsRecurseAndBetaZeroIgnoresC) {
    // 64 tiles of 12 rows are one pass; 800 rows take a second. beta = 0: NaN in C is overwritten.
    Mats m = random_mats(800, 40, 70, 3);
    std::fill(m.C.begin(), m.C.end(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> want(m.C.size(), 0.0f);
    detail::gemm_nn512(800, 0, 40, 70, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f, m.C.data(),
                       m.ldc);
    gemm_naive(false, false, 800, 40, 70, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f,
               want.data(), m.ldc);
    for (int i = 0; i < 800; ++i)  // the padding columns of each row are not part of C
        for (int j = 40; j < m.ldc; ++j)
            m.C[static_cast<std::size_t>(i) * m.ldc + j] = want[i * m.ldc + j];
    EXPECT_LE(rel_err(m.C, want), kTol);
}

TEST_F(Nn512, ColumnRangeLeavesTheRestOfC) {
    for (const auto& [c0, c1] : {std::pair{32, 75}, std::pair{5, 70}, std::pair{37, 38}}) {
        Mats m = random_mats(20, 100, 300, 4);  // K = 300: two K blocks, the second short
        const std::vector<float> before = m.C;
        std::vector<float> want = m.C;
        detail::gemm_nn512(20, c0, c1, 300, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 1.0f,
                           m.C.data(), m.ldc);
        gemm_naive(false, false, 20, c1 - c0, 300, 1.0f, m.A.data(), m.lda, m.B.data() + c0, m.ldb,
                   1.0f, want.data() + c0, m.ldc);
        EXPECT_LE(rel_err(m.C, want), kTol) << c0 << ".." << c1;
        for (int i = 0; i < 20; ++i)
            for (int j = 0; j < m.ldc; ++j)
                if (j < c0 || j >= c1) {
                    EXPECT_EQ(m.C[i * m.ldc + j], before[i * m.ldc + j]) << i << "," << j;
                }
    }
}

TEST_F(Nn512, ZeroKOrAlphaIsBetaC) {
    // As BLAS: C = beta C, and A and B are not read (NaN there must not leak into C).
    Mats m = random_mats(13, 40, 20, 6);
    std::fill(m.A.begin(), m.A.end(), std::numeric_limits<float>::quiet_NaN());
    const std::vector<float> before = m.C;
    detail::gemm_nn512(13, 0, 40, 20, 0.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.5f, m.C.data(),
                       m.ldc);
    for (int i = 0; i < 13; ++i)
        for (int j = 0; j < 40; ++j) ASSERT_EQ(m.C[i * m.ldc + j], 0.5f * before[i * m.ldc + j]);
    detail::gemm_nn512(13, 0, 40, 0, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f, m.C.data(),
                       m.ldc);
    for (int i = 0; i < 13; ++i)
        for (int j = 0; j < 40; ++j) ASSERT_EQ(m.C[i * m.ldc + j], 0.0f);
}

TEST_F(Nn512, GemmRawRoutesNnProductsForEveryThreadCount) {
    const auto keep_threads = test::keep_num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const auto& [M, N, K] :
             {std::tuple{9, 300, 200}, std::tuple{64, 1536, 512}, std::tuple{333, 77, 129}}) {
            Mats m = random_mats(M, N, K, 9);
            std::vector<float> want = m.C;
            gemm_raw(false, false, M, N, K, 0.5f, m.A.data(), m.lda, m.B.data(), m.ldb, 1.0f,
                     m.C.data(), m.ldc);
            gemm_naive(false, false, M, N, K, 0.5f, m.A.data(), m.lda, m.B.data(), m.ldb, 1.0f,
                       want.data(), m.ldc);
            EXPECT_LE(rel_err(m.C, want), kTol) << threads << " threads, M " << M;
            // beta = 0 over the pool: NaN in C is overwritten, never read
            std::fill(m.C.begin(), m.C.end(), std::numeric_limits<float>::quiet_NaN());
            std::fill(want.begin(), want.end(), 0.0f);
            gemm_raw(false, false, M, N, K, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f,
                     m.C.data(), m.ldc);
            gemm_naive(false, false, M, N, K, 1.0f, m.A.data(), m.lda, m.B.data(), m.ldb, 0.0f,
                       want.data(), m.ldc);
            for (int i = 0; i < M; ++i)
                for (int j = N; j < m.ldc; ++j)
                    m.C[static_cast<std::size_t>(i) * m.ldc + j] = 0.0f;  // not C
            EXPECT_LE(rel_err(m.C, want), kTol) << threads << " threads, M " << M << ", beta 0";
        }
    }
}

// Behind oneDNN, NN products go to the library whatever their size (its packed kernels beat
// nn512's in-place reads there); behind OpenBLAS nn512 keeps those of up to 512 rows. x Wᵀ through
// a packed Wᵀ stays on nn512 either way. The products are right on every path.
TEST_F(Nn512, NnProductsRunWhereTheLibraryCallsFor) {
    const std::string library = gemm_path(false, false, 2048, 2048, 2048).kernel;
    const bool onednn = library.find("oneDNN") != std::string::npos;
    EXPECT_EQ(gemm_path(false, false, 64, 512, 512).kernel, onednn ? library : "nazar NN");
    EXPECT_EQ(gemm_path(false, false, 256, 512, 8000).kernel, onednn ? library : "nazar NN");
    EXPECT_EQ(gemm_path(false, false, 64, 1536, 512, true).kernel, "nazar NN");
}

// Element (k, n) of a strip-packed Wᵀ (blas.h): W[n][k].
float packed_at(const WeightT& wt, int k, int n) {
    return wt->at(n / 32, k, n % 32);
}

TEST_F(Nn512, PackedBIsBitIdenticalToInPlace) {
    // Same tiles, same k order: only where B's rows are read from differs.
    for (const auto& [M, N, K] :
         {std::tuple{64, 1536, 512}, std::tuple{13, 100, 300}, std::tuple{25, 33, 7}}) {
        Rng rng(static_cast<uint64_t>(M + N + K));
        const Tensor W = test::random_tensor(rng, {N, K}), x = test::random_tensor(rng, {M, K});
        Tensor Wt({K, N});
        for (int n = 0; n < N; ++n)
            for (int k = 0; k < K; ++k) Wt.at(k, n) = W.at(n, k);
        WeightT wt;
        refresh_weight_t(wt, W);
        const WeightTRows rows = weight_t_rows(wt);
        for (const auto& [c0, c1] :
             {std::pair{0, N}, std::pair{32, N}, std::pair{0, std::min(N, 32)}}) {
            Tensor a = test::random_tensor(rng, {M, N});
            Tensor b = a;
            detail::gemm_nn512(M, c0, c1, K, 0.5f, x.data(), K, Wt.data(), N, 1.5f, a.data(), N);
            detail::gemm_nn512_packed(M, c0, c1, K, 0.5f, x.data(), K, rows.data, rows.strip_stride,
                                      1.5f, b.data(), N);
            EXPECT_EQ(max_abs_diff(a, b), 0.0)
                << M << "x" << N << "x" << K << " columns " << c0 << ".." << c1;
        }
    }
}

TEST_F(Nn512, TransposedWeightGivesTheNtProduct) {
    Rng rng(21);
    const Tensor W = test::random_tensor(rng, {150, 90});  // (N, K)
    WeightT wt;
    refresh_weight_t(wt, W);
    ASSERT_TRUE(wt);
    EXPECT_EQ(wt->shape(), Shape({5, 90, 32}));  // ceil(150 / 32) strips of 90 rows of 32
    for (int i = 0; i < 150; ++i)
        for (int k = 0; k < 90; ++k) ASSERT_EQ(packed_at(wt, k, i), W.at(i, k));
    for (int i = 150; i < 160; ++i)
        for (int k = 0; k < 90; ++k)
            ASSERT_EQ(packed_at(wt, k, i), 0.0f);  // the last strip's padding
    for (int M : {1, 8, 9, 40, 600}) {  // <= 8 rows and > 512: the NT path; between: through Wᵀ
        const Tensor x = test::random_tensor(rng, {M, 90});
        Tensor got = test::random_tensor(rng, {M, 150});
        Tensor want = got;
        gemm_xwt(M, 150, 90, 1.0f, x.data(), 90, W.data(), 90, weight_t_rows(wt), 1.0f, got.data(),
                 150);
        gemm_naive(false, true, M, 150, 90, 1.0f, x.data(), 90, W.data(), 90, 1.0f, want.data(),
                   150);
        EXPECT_LE(max_abs_diff(got, want), 1e-4) << "M " << M;
    }
    // A column block W[:, 30:90]: rows 30.. of Wᵀ.
    const Tensor x = test::random_tensor(rng, {20, 60});
    Tensor got({20, 150}), want({20, 150});
    gemm_xwt(20, 150, 60, 1.0f, x.data(), 60, W.data() + 30, 90, weight_t_rows(wt, 30), 0.0f,
             got.data(), 150);
    gemm_naive(false, true, 20, 150, 60, 1.0f, x.data(), 60, W.data() + 30, 90, 0.0f, want.data(),
               150);
    EXPECT_LE(max_abs_diff(got, want), 1e-4);
    // Refreshing rewrites the memory of a sole owner and never writes into a shared copy.
    const float* mem = wt->data();
    const Tensor W2 = test::random_tensor(rng, {150, 90});
    refresh_weight_t(wt, W2);
    EXPECT_EQ(wt->data(), mem);
    EXPECT_EQ(packed_at(wt, 3, 7), W2.at(7, 3));
    EXPECT_EQ(packed_at(wt, 89, 149), W2.at(149, 89));
    refresh_weight_t(wt, W);
    const WeightT shared = wt;
    refresh_weight_t(wt, W2);
    EXPECT_NE(wt.get(), shared.get());
    EXPECT_EQ(packed_at(shared, 3, 7), W.at(7, 3));
    EXPECT_EQ(packed_at(wt, 3, 7), W2.at(7, 3));
    // Off: nothing is made and gemm_xwt is the NT product.
    detail::set_nn512(false);
    refresh_weight_t(wt, W);
    EXPECT_FALSE(wt);
}

// gemm_xwt_bias (each thread filling its own columns with the bias, then multiplying) sums
// exactly as filling C with 0 + bias and accumulating gemm_xwt onto it: bit for bit, through the
// packed Wᵀ (where the CPU has AVX-512) and on the NT path (<= 8 rows, > 512, no Wᵀ: every CPU;
// 600 rows x 150 fill over the pool), on one and two threads, with a −0 bias (written as +0) and
// a leading dimension of C wider than N (the columns past N untouched).
TEST(WeightT, BiasedProductEqualsFillingThenAccumulating) {
    const auto keep_threads = test::keep_num_threads();
    const test::SwitchGuard<bool> keep = test::keep_nn512();
    const bool nn512 = detail::set_nn512(true);
    Rng rng(31);
    const int N = 150, K = 90, ldc = N + 6;
    const Tensor W = test::random_tensor(rng, {N, K});
    Tensor bias = test::random_tensor(rng, {N});
    bias.data()[3] = -0.0f;
    bias.data()[40] = 0.0f;
    WeightT wt;
    refresh_weight_t(wt, W);
    ASSERT_EQ(static_cast<bool>(wt), nn512);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (int M : {1, 8, 9, 40, 320, 600}) {
            const Tensor x = test::random_tensor(rng, {M, K});
            for (const bool through_wt : {true, false}) {
                if (through_wt && !nn512) continue;
                const WeightTRows rows = through_wt ? weight_t_rows(wt) : WeightTRows{};
                Tensor got = test::random_tensor(rng, {M, ldc});
                Tensor want = got;
                gemm_xwt_bias(M, N, K, x.data(), K, W.data(), K, rows, bias.data(), got.data(),
                              ldc);
                for (int i = 0; i < M; ++i)
                    for (int j = 0; j < N; ++j) want.data()[i * ldc + j] = 0.0f + bias.data()[j];
                gemm_xwt(M, N, K, 1.0f, x.data(), K, W.data(), K, rows, 1.0f, want.data(), ldc);
                EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * got.numel()), 0)
                    << threads << " threads, M " << M << (through_wt ? ", through Wᵀ" : ", NT");
                // no bias: the plain product (beta = 0: C's old contents, NaN here, never read)
                std::fill_n(got.data(), got.numel(), std::numeric_limits<float>::quiet_NaN());
                std::fill_n(want.data(), want.numel(), std::numeric_limits<float>::quiet_NaN());
                gemm_xwt_bias(M, N, K, x.data(), K, W.data(), K, rows, nullptr, got.data(), ldc);
                gemm_xwt(M, N, K, 1.0f, x.data(), K, W.data(), K, rows, 0.0f, want.data(), ldc);
                for (int i = 0; i < M; ++i)
                    for (int j = 0; j < N; ++j)
                        ASSERT_EQ(got.data()[i * ldc + j], want.data()[i * ldc + j])
                            << threads << " threads, M " << M << ", no bias, " << i << "," << j;
            }
        }
    }
    // K = 0: C is the bias rows
    Tensor c({4, N});
    gemm_xwt_bias(4, N, 0, nullptr, 0, W.data(), K, {}, bias.data(), c.data(), N);
    EXPECT_EQ(c.at(2, 3), 0.0f);
    EXPECT_FALSE(std::signbit(c.at(2, 3)));
    EXPECT_EQ(c.at(3, 7), bias.data()[7]);
}

// Everything a model computes with transposed step weights and the NN kernel matches the same
// model on OpenBLAS alone: a 12-sentence batch (steps of 12 rows > kSmallGemmRows), for GRU and
// LSTM, one and two decoder layers, Bahdanau, Luong with input feeding, and local-p.
TEST(WeightT, ModelMatchesWithTheKernelOnAndOff) {
    std::vector<ModelConfig> configs;
    configs.push_back(test::tiny_config());
    auto feed = test::tiny_config(DecoderKind::luong, ScoreKind::general);
    feed.decoder.input_feeding = true;
    feed.decoder.num_layers = 2;
    feed.decoder.cell = CellType::lstm;
    configs.push_back(feed);
    auto lp = test::tiny_config(DecoderKind::luong, ScoreKind::general);
    lp.attention.local = LocalMode::predictive;
    lp.attention.window = 1;
    lp.encoder.cell = CellType::lstm;
    configs.push_back(lp);
    std::vector<std::vector<int32_t>> srcs, tgts;
    Rng data(7);
    for (int i = 0; i < 12; ++i) {
        std::vector<int32_t> s(1 + i % 5), t(1 + (i * 3) % 4);
        for (auto& x : s) x = 4 + static_cast<int32_t>(data.uniform(0, 5.99f));
        for (auto& x : t) x = 4 + static_cast<int32_t>(data.uniform(0, 5.99f));
        srcs.push_back(s);
        tgts.push_back(t);
    }
    const Batch b = test::make_batch(srcs, tgts);
    const auto keep = test::keep_nn512();
    if (!detail::set_nn512(true))
        GTEST_SKIP() << "no AVX-512 on this CPU: on and off would both be OpenBLAS";
    for (const ModelConfig& c : configs) {
        // Two training steps and two encodings on the same objects with the weights changed in
        // between: the per-batch copies must follow the weights (a stale Wᵀ would differ).
        std::vector<std::vector<float>> grads[2];
        std::vector<double> loss[2];
        std::vector<float> step_lp[2];
        for (int on = 0; on < 2; ++on) {
            detail::set_nn512(on == 1);
            Seq2Seq m(c, 5);
            DecodeSession m_s(m);
            Rng rng(3);
            EncodedSource enc, wide;
            std::vector<int> rows;
            for (int r = 0; r < 2 * b.B; ++r) rows.push_back(r / 2);
            for (int round = 0; round < 2; ++round) {
                zero_grads(m.parameters());
                loss[on].push_back(TrainPass(m).train_step(b, TrainOptions{}, rng).loss);
                for (const auto& p : m.parameters())
                    grads[on].emplace_back(p.grad->data(), p.grad->data() + p.grad->numel());
                m_s.encode(b.src, b.src_lengths, b.S, enc, 2);  // 24 step rows
                m_s.select_rows(enc, rows, wide);
                DecoderState st;
                m_s.init_state(wide, st);
                Tensor lp({2 * b.B, 10});
                for (int t = 0; t < 3; ++t) {
                    m_s.step(std::vector<int32_t>(2 * b.B, t == 0 ? 2 : 5 + t), wide, st, lp, {});
                    step_lp[on].insert(step_lp[on].end(), lp.data(), lp.data() + lp.numel());
                }
                for (const auto& p :
                     m.parameters())  // a plain gradient step, the same for on and off
                    for (int64_t i = 0; i < p.value->numel(); ++i)
                        p.value->data()[i] -= 0.5f * p.grad->data()[i];
            }
        }
        for (int round = 0; round < 2; ++round)
            EXPECT_NEAR(loss[0][round], loss[1][round], 1e-5 * std::abs(loss[0][round]))
                << "round " << round;
        ASSERT_EQ(grads[0].size(), grads[1].size());
        for (std::size_t i = 0; i < grads[0].size(); ++i)
            EXPECT_LE(rel_err(grads[1][i], grads[0][i]), 1e-4) << i;
        EXPECT_LE(rel_err(step_lp[1], step_lp[0]), 1e-5);
    }
}

}  // namespace
}  // namespace test_gemm_nn512
}  // namespace nazar
