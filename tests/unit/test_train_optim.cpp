// Optimizer (nazar/train/optim.h): hand-computed updates, coupled vs decoupled weight decay,
// bit-identical resume through a serialized checkpoint, thread-count independence, errors.
// PyTorch parity over several steps lives in tests/parity/test_parity_optim.cpp.
#include "nazar/core/rng.h"
#include "nazar/core/safetensors.h"
#include "nazar/core/threads.h"
#include "nazar/train/optim.h"
#include "tests/common/test_util.h"

#include <cstring>
#include <vector>

namespace test_train_optim {

using namespace nazar;
using nazar::test::random_tensor;

namespace {

// One scalar parameter p = 1 and its gradient.
struct Scalar {
    Tensor p = Tensor::from({1}, std::vector<float>{1.0f});
    Tensor g = Tensor({1});
    ParamList list() { return {{"p", &p, &g}}; }
};

// A small model: several tensors, one larger than an optimizer block (16384) so blocks split.
struct Model {
    Tensor w, b, emb, gw, gb, gemb;
    explicit Model(Rng& rng)
        : w(random_tensor(rng, {7, 5})),
          b(random_tensor(rng, {5})),
          emb(random_tensor(rng, {300, 70})),
          gw({7, 5}),
          gb({5}),
          gemb({300, 70}) {}
    ParamList list() { return {{"w", &w, &gw}, {"b", &b, &gb}, {"emb", &emb, &gemb}}; }
    void random_grads(Rng& rng) {
        for (Tensor* g : {&gw, &gb, &gemb}) rng.fill_uniform(*g, -1, 1);
    }
};

bool bit_equal(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

Optimizer make(OptimKind kind, ParamList params) {
    switch (kind) {
        case OptimKind::sgd:
            return Optimizer::sgd(
                std::move(params),
                {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true});
        case OptimKind::adam:
            return Optimizer::adam(std::move(params), {.lr = 1e-2, .weight_decay = 1e-2});
        case OptimKind::adamw:
            return Optimizer::adamw(std::move(params), {.lr = 1e-2, .weight_decay = 0.1});
    }
    NZ_FAIL("unreachable");
}

}  // namespace

// p ← p − lr·d. Plain: 1 − 0.1·0.5 = 0.95. Weight decay 0.1: d = 0.5 + 0.1·1 = 0.6 -> 0.94.
// Momentum 0.9 (buf = g at t = 1): 0.95, then buf = 0.9·0.5 + 0.5 = 0.95 -> 0.855.
// Nesterov: d = g + 0.9 buf: 1 − 0.1·0.95 = 0.905, then 0.905 − 0.1·(0.5 + 0.9·0.95) = 0.7695.
TEST(Sgd, HandComputedSteps) {
    struct Case {
        SgdOptions opt;
        float after1, after2;
    };
    const Case cases[] = {
        {{.lr = 0.1}, 0.95f, 0.90f},
        {{.lr = 0.1, .weight_decay = 0.1}, 0.94f, 0.94f - 0.1f * (0.5f + 0.1f * 0.94f)},
        {{.lr = 0.1, .momentum = 0.9}, 0.95f, 0.855f},
        {{.lr = 0.1, .momentum = 0.9, .nesterov = true}, 0.905f, 0.7695f},
    };
    for (const Case& c : cases) {
        Scalar s;
        Optimizer opt = Optimizer::sgd(s.list(), c.opt);
        s.g[0] = 0.5f;
        opt.step();
        EXPECT_NEAR(s.p[0], c.after1, 1e-6) << "momentum " << c.opt.momentum;
        opt.step();
        EXPECT_NEAR(s.p[0], c.after2, 1e-6) << "momentum " << c.opt.momentum;
        EXPECT_EQ(opt.steps(), 2);
        EXPECT_EQ(s.g[0], 0.5f);  // gradients are read, not changed
    }
}

// Adam, lr 0.1, g = 0.5 then −0.25 (values from torch.optim.Adam, printed with %.9f):
//   t = 1: m̂ = g, v̂ = g² -> p = 1 − 0.1 · 0.5 / (0.5 + 1e-8)                  = 0.900000036
//   t = 2: m = 0.02, v = 3.1225e-4, m̂ = m / 0.19, v̂ = v / 0.001999 -> p      = 0.873366356
TEST(Adam, HandComputedSteps) {
    Scalar s;
    Optimizer opt = Optimizer::adam(s.list(), {.lr = 0.1});
    s.g[0] = 0.5f;
    opt.step();
    EXPECT_NEAR(s.p[0], 0.900000036f, 2e-7);
    s.g[0] = -0.25f;
    opt.step();
    EXPECT_NEAR(s.p[0], 0.873366356f, 2e-7);
}

// With g = 0: AdamW only decays, p ← p (1 − lr λ) = 1 − 0.1 · 0.01 = 0.999 (m = v = 0 -> no Adam
// update); Adam adds λ p = 0.01 to the gradient, so its first step moves p by ≈ lr: 0.9.
TEST(Adam, DecoupledVersusCoupledWeightDecay) {
    Scalar a, w;
    Optimizer adam = Optimizer::adam(a.list(), {.lr = 0.1, .weight_decay = 0.01});
    Optimizer adamw = Optimizer::adamw(w.list(), {.lr = 0.1, .weight_decay = 0.01});
    adam.step();
    adamw.step();
    EXPECT_NEAR(w.p[0], 0.999f, 1e-7);
    EXPECT_NEAR(a.p[0], 0.9f, 1e-6);
    EXPECT_EQ(adamw.kind(), OptimKind::adamw);
}

// Run 3 steps, checkpoint through the safetensors byte format, restore into a fresh optimizer
// over a copy of the parameters, then 3 more steps on both: parameters must match bit for bit.
TEST(Optimizer, ResumeIsBitIdentical) {
    for (OptimKind kind : {OptimKind::sgd, OptimKind::adam, OptimKind::adamw}) {
        Rng rng(42), grads(7);
        Model a(rng);
        Optimizer opt_a = make(kind, a.list());
        for (int t = 0; t < 3; ++t) {
            a.random_grads(grads);
            opt_a.set_lr(opt_a.lr() * 0.9);
            opt_a.step();
        }
        SafeTensors ckpt;
        ckpt.set_params(a.list());
        opt_a.save_state(ckpt);
        const SafeTensors loaded = parse_safetensors(serialize_safetensors(ckpt), "ckpt");

        Rng rng_b(1);
        Model b(rng_b);  // different values, restored from the checkpoint
        loaded.get_params(b.list());
        Optimizer opt_b = make(kind, b.list());
        opt_b.load_state(loaded);
        EXPECT_EQ(opt_b.steps(), 3);
        EXPECT_EQ(opt_b.lr(), opt_a.lr());
        for (int t = 0; t < 3; ++t) {
            a.random_grads(grads);
            b.gw = a.gw, b.gb = a.gb, b.gemb = a.gemb;
            opt_a.step();
            opt_b.step();
        }
        EXPECT_TRUE(bit_equal(a.w, b.w)) << optim_kind_name(kind);
        EXPECT_TRUE(bit_equal(a.b, b.b)) << optim_kind_name(kind);
        EXPECT_TRUE(bit_equal(a.emb, b.emb)) << optim_kind_name(kind);
    }
}

TEST(Optimizer, StateNamesFollowPyTorchKeys) {
    Rng rng(3);
    Model m(rng);
    SafeTensors st;
    make(OptimKind::adam, m.list()).save_state(st);
    EXPECT_TRUE(st.contains("optim.exp_avg.emb"));
    EXPECT_TRUE(st.contains("optim.exp_avg_sq.w"));
    EXPECT_EQ(st.meta("optim.kind"), "adam");
    EXPECT_EQ(st.meta("optim.step"), "0");
    SafeTensors sgd;
    make(OptimKind::sgd, m.list()).save_state(sgd);
    EXPECT_TRUE(sgd.contains("optim.momentum_buffer.b"));
    EXPECT_EQ(sgd.size(), 3u);
}

TEST(Optimizer, ResultDoesNotDependOnThreadCount) {
    const int saved = num_threads();
    std::vector<Tensor> results;
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        Rng rng(5), grads(6);
        Model m(rng);
        Optimizer opt = make(OptimKind::adamw, m.list());
        for (int t = 0; t < 2; ++t) {
            m.random_grads(grads);
            opt.step();
        }
        results.push_back(m.emb);
    }
    set_num_threads(saved);
    EXPECT_TRUE(bit_equal(results[0], results[1]));
    EXPECT_TRUE(bit_equal(results[0], results[2]));
}

TEST(Optimizer, LoadStateRejectsMismatches) {
    Rng rng(8);
    Model m(rng);
    SafeTensors adam_state;
    make(OptimKind::adam, m.list()).save_state(adam_state);
    Optimizer sgd = make(OptimKind::sgd, m.list());
    EXPECT_THROW(sgd.load_state(adam_state), Error);  // kind differs
    Optimizer adam = make(OptimKind::adam, m.list());

    SafeTensors missing = adam_state;
    missing.erase("optim.exp_avg.w");
    EXPECT_THROW(adam.load_state(missing), Error);
    SafeTensors bad_shape = adam_state;
    bad_shape.set("optim.exp_avg.w", Tensor({5, 7}));
    try {
        adam.load_state(bad_shape);
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("exp_avg.w"), std::string::npos) << e.what();
    }
    SafeTensors extra = adam_state;
    extra.set("optim.exp_avg.decoder.gone", Tensor({2}));
    EXPECT_THROW(adam.load_state(extra), Error);
    SafeTensors bad_step = adam_state;
    bad_step.metadata["optim.step"] = "2.5";
    EXPECT_THROW(adam.load_state(bad_step), Error);
    EXPECT_EQ(adam.steps(), 0);   // failed loads changed nothing
    adam.load_state(adam_state);  // the intact state loads
}

TEST(Optimizer, OptionErrors) {
    Scalar s;
    EXPECT_THROW(Optimizer::sgd(s.list(), {.lr = 0.1, .nesterov = true}), Error);  // no momentum
    EXPECT_THROW(
        Optimizer::sgd(s.list(), {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
        Error);
    EXPECT_THROW(Optimizer::adam(s.list(), {.beta1 = 1.0}), Error);
    EXPECT_THROW(Optimizer::adam(s.list(), {.eps = -1}), Error);
    EXPECT_THROW(Optimizer::sgd(s.list(), {.lr = -0.1}), Error);
    Optimizer ok = Optimizer::adam(s.list(), {});
    EXPECT_THROW(ok.set_lr(std::nan("")), Error);
    EXPECT_THROW(parse_optim_kind("adagrad"), UsageError);
    EXPECT_EQ(parse_optim_kind("adamw"), OptimKind::adamw);
    s.g = Tensor({2});  // gradient no longer matches its value
    EXPECT_THROW(ok.step(), Error);
}

}  // namespace test_train_optim
