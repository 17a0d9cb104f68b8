#!/usr/bin/python3
"""Self-checks of the PyTorch reference's MoChA (monotonic chunkwise attention, Chiu & Raffel 2018;
python/nazar/torch/attention.py, nazar/attention/naive_mocha.h, docs/spec.md §5.6): the chunkwise
weights β by hand, the vectorised form against the looped definition in float64, w = 1 is
monotonic attention, Σ β = Σ α, the hard form is the soft one when p is exactly 0 or 1, gradcheck
of β with respect to α and u and the oracle's backward formula, the config key and its errors, the
parameter chunk_v.weight, and the model: it reports (and sums, drops, aligns with) β while it
carries α from step to step.

    /usr/bin/python3 tests/parity/test_nazar_torch_mocha.py     (CTest: parity.nazar_torch_mocha)
    /usr/bin/python3 -m pytest tests/parity/test_nazar_torch_mocha.py
Exit code 77 (skipped) when torch is missing.
"""

import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import torch
    import nazar_torch as nt
except ImportError as e:
    print(f"nazar_torch MoChA self-test: {e}; skipped")
    sys.exit(77)

torch.set_default_dtype(torch.float64)

SRC = [[4, 5, 6, 7, 8, 9, 10], [9, 10], [11, 4, 6, 7], []]
TGT = [[5, 6, 7], [8, 9, 10, 11, 12], [4], [6, 7]]


def _model_config(**over):
    cfg = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6, "encoder": {"hidden_size": 4},
           "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": False},
           "attention": {"score": "concat", "attention_size": 3, "monotonic": True, "monotonic_bias_init": 0.5,
                         "monotonic_noise": 0.0, "mocha_chunk": 3}}
    for k, v in over.items():
        if isinstance(v, dict):
            cfg.setdefault(k, {}).update(v)
        else:
            cfg[k] = v
    return cfg


VARIANTS = {
    "luong_concat": _model_config(),
    "luong_concat_feed": _model_config(decoder={"input_feeding": True}, attention={"mocha_chunk": 2}),
    "bahdanau_additive": _model_config(decoder={"kind": "bahdanau"},
                                       attention={"score": "additive", "mocha_chunk": 2, "monotonic_noise": 0.5}),
}


def model(name, seed=4):
    torch.manual_seed(seed)
    m = nt.Seq2Seq(VARIANTS[name]).double().eval()
    with torch.no_grad():  # a chunk energy that matters: u spans a few units
        m.attention.chunk_v.weight.mul_(4.0)
    return m


def alignments(B, S, lengths, generator):
    """Valid expected alignments α (B, S): monotonic_alignment of random p, from random prev."""
    real = torch.arange(S)[None, :] < torch.as_tensor(lengths)[:, None]
    p = torch.rand(B, S, generator=generator) * real
    prev = torch.softmax(torch.randn(B, S, generator=generator), -1) * real
    return nt.monotonic_alignment(p, prev)


def moving_sum_form(alpha, u, w):
    """The paper's form with ONE maximum per row: exp(u − m) ⊙ movsum_fwd(α / movsum_bwd(exp(u − m)))."""
    S, E = u.shape[-1], torch.exp(u - u.max(-1, keepdim=True).values)
    D = torch.stack([E[..., max(0, k - w + 1):k + 1].sum(-1) for k in range(S)], -1)
    r = alpha / D
    return E * torch.stack([r[..., j:j + w].sum(-1) for j in range(S)], -1)


def oracle_backward(alpha, u, w, d_beta):
    """naive_mocha.h's backward, one row: D_k, G_k over window(k) = [max(0, k − w + 1), k];
    dα_k = G_k / D_k, du_j = e^{u_j} (dβ_j Σ_{k=j}^{j+w−1} α_k / D_k − Σ_{k=j}^{j+w−1} α_k G_k / D_k²)."""
    S, E = len(u), torch.exp(u - u.max())
    win = [range(max(0, k - w + 1), k + 1) for k in range(S)]
    D = torch.stack([sum(E[l] for l in win[k]) for k in range(S)])
    G = torch.stack([sum(d_beta[j] * E[j] for j in win[k]) for k in range(S)])
    d_u = torch.stack([E[j] * sum(d_beta[j] * alpha[k] / D[k] - alpha[k] * G[k] / D[k] ** 2
                                  for k in range(j, min(j + w, S))) for j in range(S)])
    return G / D, d_u


def spec_backward(alpha, u, w, d_beta):
    """docs/spec.md §5.7's backward, one row: s_{k,j} the softmax of window(k), G_k = Σ_j dβ_j s_{k,j},
    dα_k = G_k, du_j = Σ_{k=j}^{j+w−1} α_k s_{k,j} (dβ_j − G_k)."""
    S = len(u)
    s = torch.zeros(S, S)  # s[k, j]
    for k in range(S):
        lo = max(0, k - w + 1)
        s[k, lo:k + 1] = torch.softmax(u[lo:k + 1], -1)
    G = s @ d_beta
    return G, torch.stack([sum(alpha[k] * s[k, j] * (d_beta[j] - G[k]) for k in range(j, min(j + w, S)))
                           for j in range(S)])


class ChunkwiseWeights(unittest.TestCase):
    def test_hand_worked(self):
        # e^u = (1, 2, 3), α = (1/2, 1/4, 1/8). w = 2: windows {0}, {0, 1}, {1, 2}, D = (1, 3, 5):
        # β_0 = α_0 + α_1/3 = 7/12, β_1 = 2α_1/3 + 2α_2/5 = 13/60, β_2 = 3α_2/5 = 3/40.
        # w = 3 (and any w >= 3: every window is cut at position 0): windows {0}, {0, 1}, {0, 1, 2},
        # D = (1, 3, 6): β = (1/2 + 1/12 + 1/48, 1/6 + 1/24, 1/16) = (29/48, 5/24, 1/16).
        alpha, u = torch.tensor([0.5, 0.25, 0.125]), torch.log(torch.tensor([1.0, 2.0, 3.0]))
        want = {1: [0.5, 0.25, 0.125], 2: [7 / 12, 13 / 60, 3 / 40], 3: [29 / 48, 5 / 24, 1 / 16],
                5: [29 / 48, 5 / 24, 1 / 16]}
        for w, beta in want.items():
            for f in (nt.chunkwise_weights, nt.chunkwise_weights_reference):
                got = f(alpha[None], u[None], w)[0]
                torch.testing.assert_close(got, torch.tensor(beta), atol=1e-15, rtol=0, msg=f"{f.__name__} w={w}")
        # hard: the softmax of u over [max(0, k − w + 1), k]; k = −1: nothing
        hard = nt.hard_chunk(u[None].repeat(4, 1), [2, 1, 0, -1], 2)
        torch.testing.assert_close(hard, torch.tensor([[0, 0.4, 0.6], [1 / 3, 2 / 3, 0], [1.0, 0, 0], [0.0, 0, 0]]),
                                   atol=1e-15, rtol=0)
        torch.testing.assert_close(nt.hard_chunk(u[None], [2], 7), torch.tensor([[1 / 6, 1 / 3, 1 / 2]]),
                                   atol=1e-15, rtol=0)

    def test_forms_agree_and_sum_to_alpha(self):
        g = torch.Generator().manual_seed(1)
        for w in (1, 2, 3, 4, 7, 10):
            for scale in (0.1, 3.0, 30.0):
                with self.subTest(w=w, scale=scale):
                    lengths = [9, 4, 1, 0, 7]
                    alpha = alignments(5, 9, lengths, g)
                    u = torch.randn(5, 9, generator=g) * scale
                    beta = nt.chunkwise_weights(alpha, u, w, lengths)
                    torch.testing.assert_close(beta, nt.chunkwise_weights_reference(alpha, u, w, lengths),
                                               atol=1e-15, rtol=1e-13)
                    torch.testing.assert_close(beta.sum(-1), alpha.sum(-1), atol=1e-14, rtol=0)  # Σ β = Σ α
                    real = torch.arange(9)[None, :] < torch.tensor(lengths)[:, None]
                    self.assertTrue(bool((beta[~real] == 0).all()) and bool((beta >= 0).all()))
                    if w == 1:
                        self.assertTrue(torch.equal(beta, alpha))  # w = 1: β = α exactly
        # leading dimensions (B, T, S) and lengths (B, T), as a whole batch of steps
        alpha, u = alignments(6, 5, [5, 3] * 3, g).reshape(2, 3, 5), torch.randn(2, 3, 5, generator=g)
        lengths = torch.tensor([5, 3] * 3).reshape(2, 3)
        torch.testing.assert_close(nt.chunkwise_weights(alpha, u, 2, lengths),
                                   nt.chunkwise_weights_reference(alpha, u, 2, lengths), atol=1e-15, rtol=1e-13)
        self.assertEqual(tuple(nt.chunkwise_weights(torch.zeros(3, 0), torch.zeros(3, 0), 4).shape), (3, 0))

    def test_per_window_maxima_where_one_row_maximum_underflows(self):
        # u spans 1000 (float64 underflows at −745): the windows far below the row's maximum have
        # an all-zero moving sum under one maximum per row (0/0), not under their own maxima.
        alpha, u = torch.tensor([[0.25, 0.25, 0.25, 0.25, 0.0]]), torch.tensor([[-1000.0, -999, -1001, 0, 5]])
        self.assertTrue(bool(torch.isnan(moving_sum_form(alpha, u, 2)).any()))
        beta = nt.chunkwise_weights(alpha, u, 2)
        e = torch.tensor([1.0, torch.e])
        want = torch.tensor([[0.25 + 0.25 * e[0] / e.sum(), 0.25 * e[1] / e.sum() + 0.25 / (1 + torch.e ** -2),
                              0.25 * torch.e ** -2 / (1 + torch.e ** -2), 0.25, 0.0]])
        torch.testing.assert_close(beta, want, atol=1e-15, rtol=1e-14)
        torch.testing.assert_close(nt.chunkwise_weights_reference(alpha, u, 2), want, atol=1e-15, rtol=1e-14)
        small = nt.chunkwise_weights(alpha.float(), u.float() / 10, 3)  # float32: −100 underflows too
        self.assertTrue(bool(torch.isfinite(small).all()))
        self.assertAlmostEqual(float(small.sum()), 1.0, places=6)

    def test_hard_is_soft_at_a_one_hot_alignment(self):
        g = torch.Generator().manual_seed(2)
        u = torch.randn(1, 6, generator=g) * 2
        for w in (1, 2, 3, 6, 9):
            for k in range(-1, 6):
                alpha = torch.zeros(1, 6) if k < 0 else torch.eye(6)[k:k + 1]
                hard = nt.hard_chunk(u, [k], w)
                torch.testing.assert_close(nt.chunkwise_weights(alpha, u, w), hard, atol=1e-15, rtol=0)
                if k < 0:
                    self.assertEqual(hard.abs().sum().item(), 0.0)
                else:
                    self.assertAlmostEqual(float(hard.sum()), 1.0, places=14)
                    self.assertEqual(hard[0].nonzero()[:, 0].tolist(), list(range(max(0, k - w + 1), k + 1)))

    def test_gradcheck(self):
        g = torch.Generator().manual_seed(3)
        for w in (1, 2, 3, 6):
            with self.subTest(w=w):
                lengths = [6, 4, 0]
                alpha = alignments(3, 6, lengths, g).requires_grad_()
                u = (torch.randn(3, 6, generator=g) * 2).requires_grad_()
                for f in (nt.chunkwise_weights, nt.chunkwise_weights_reference):
                    self.assertTrue(torch.autograd.gradcheck(lambda a, e, f=f: f(a, e, w, lengths), (alpha, u)))

    def test_the_backward_formulas(self):  # naive_mocha.h's and docs/spec.md §5.7's d α, d u vs autograd
        g = torch.Generator().manual_seed(5)
        for w in (1, 2, 4, 8):
            alpha = alignments(1, 7, [7], g)[0].requires_grad_()
            u = (torch.randn(7, generator=g) * 2).requires_grad_()
            d_beta = torch.randn(7, generator=g)
            d_alpha, d_u = torch.autograd.grad((nt.chunkwise_weights(alpha, u, w) * d_beta).sum(), (alpha, u))
            for formula in (oracle_backward, spec_backward):
                want_alpha, want_u = formula(alpha.detach(), u.detach(), w, d_beta)
                torch.testing.assert_close(d_alpha, want_alpha, atol=1e-14, rtol=1e-12, msg=formula.__name__)
                torch.testing.assert_close(d_u, want_u, atol=1e-14, rtol=1e-12, msg=formula.__name__)


class Config(unittest.TestCase):
    def test_errors(self):
        cases = [({"monotonic": False}, "mocha_chunk 3 needs monotonic attention"),
                 ({"score": "general"}, "MoChA needs an additive or concat score"),
                 ({"score": "dot"}, "MoChA needs an additive or concat score"),
                 ({"mocha_chunk": -1}, r"MoChA: the chunk w must be in \[1, 256\]"),
                 ({"mocha_chunk": 257}, r"MoChA: the chunk w must be in \[1, 256\]"),
                 ({"mocha_chunk": 2.0}, "'attention.mocha_chunk' must be an integer"),
                 ({"mocha_chunk": True}, "'attention.mocha_chunk' must be an integer")]
        for attention, message in cases:
            with self.subTest(attention=attention):
                cfg = _model_config(attention=attention, encoder={"hidden_size": 3},
                                    decoder={"hidden_size": 6})  # dot: H == C
                with self.assertRaisesRegex(ValueError, message):
                    nt.model_config(cfg)
        with self.assertRaisesRegex(ValueError, "needs monotonic attention"):  # not only a monotonic model's key
            nt.model_config(_model_config(attention={"monotonic": False, "score": "general", "mocha_chunk": 1}))
        for bad in ({"monotonic": False}, {"score": "general"}):
            with self.assertRaises(AssertionError):
                nt.Attention(**dict({"score": "additive", "query_size": 5, "context_size": 8, "attention_size": 3,
                                     "monotonic": True, "mocha_chunk": 2}, **bad))

    def test_key_parameter_and_model_file(self):
        self.assertEqual(nt.DEFAULT_CONFIG["attention"]["mocha_chunk"], 0)
        plain = _model_config(attention={"mocha_chunk": 0})
        self.assertEqual(nt.model_config(plain)["attention"]["mocha_chunk"], 0)
        self.assertNotIn("mocha_chunk", nt.config_json(plain))  # written only when > 0
        self.assertNotIn("attention.chunk_v.weight", nt.Seq2Seq(plain).state_dict())
        self.assertIn('"mocha_chunk":3', nt.config_json(VARIANTS["luong_concat"]))
        m = model("luong_concat")
        self.assertEqual(tuple(m.state_dict()["attention.chunk_v.weight"].shape), (1, 3))
        self.assertEqual(sorted(k for k in m.state_dict() if k.startswith("attention.")),
                         ["attention.chunk_v.weight", "attention.key.weight", "attention.monotonic_bias",
                          "attention.query.weight", "attention.v.weight"])
        bound = 1 / 3 ** 0.5  # nn.Linear's init: U(−1/√A, 1/√A)
        torch.manual_seed(0)
        self.assertLessEqual(float(nt.Seq2Seq(VARIANTS["luong_concat"]).attention.chunk_v.weight.abs().max()), bound)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.safetensors")
            nt.save_model(p, m)
            back, meta = nt.load_model(p, torch.float64)
            self.assertEqual(back.attention.mocha_chunk, 3)
            self.assertEqual(nt.model_config(meta["nazar.config"]), m.config)
            torch.testing.assert_close(nt.score(back, SRC, TGT), nt.score(m.float().double(), SRC, TGT))


def twin(m, mocha_chunk):
    """The same weights with another mocha_chunk (0: plain monotonic attention, without chunk_v)."""
    cfg = dict(m.config, attention=dict(m.config["attention"], mocha_chunk=mocha_chunk))
    other = nt.Seq2Seq(cfg).double().eval()
    sd = {k: v for k, v in m.state_dict().items() if mocha_chunk or k != "attention.chunk_v.weight"}
    other.load_state_dict(sd, strict=True)
    return other


def steps(m, ids, y, hard):
    """(log p of y + </s>, reported rows, carried α rows) by the step API, one sentence."""
    enc = m.encode(torch.tensor([ids], dtype=torch.int64).reshape(1, len(ids)), [len(ids)])
    state, total, rows, carried = m.init_state(enc), 0.0, [], []
    with torch.no_grad():
        for prev, nxt in zip([2] + y, y + [3]):
            lp, a, state = m.step(torch.tensor([prev]), enc, state, hard)
            total, rows, carried = total + lp[0, nxt], rows + [a[0]], carried + [state.align[0]]
    return float(total), torch.stack(rows), torch.stack(carried)


class Model(unittest.TestCase):
    def test_w1_is_monotonic_attention(self):
        for name in VARIANTS:
            with self.subTest(name=name):
                m = twin(model(name), 1)
                mono = twin(m, 0)
                batch = nt.make_batch(SRC, TGT)
                (la, aa), (lb, ab) = m(batch.src, batch.src_lengths, batch.tgt_in), \
                    mono(batch.src, batch.src_lengths, batch.tgt_in)
                self.assertTrue(torch.equal(la, lb) and torch.equal(aa, ab))
                for r, s in zip(nt.beam_search(m, SRC, beam_size=3, n_best=2), nt.beam_search(mono, SRC, 3, 2)):
                    self.assertEqual([h["tokens"] for h in r], [h["tokens"] for h in s])
                    for h, k in zip(r, s):
                        self.assertTrue(torch.equal(h["attention"], k["attention"]))

    def test_reports_beta_and_carries_alpha(self):
        # Luong without input feeding: the RNN never reads the context, so a MoChA model and its
        # monotonic twin have the same queries, hence the same α at every step: the carried
        # state must be that α, while the reported rows are β (other than α, the same sums)
        m = model("luong_concat")
        with torch.no_grad():  # hard stops at 0 and 2, a move from 0 to 2, a sentence run off the end
            m.attention.monotonic_bias.fill_(0.0)
            m.attention.v.weight.mul_(3.0)
        mono, stops, differs = twin(m, 0), set(), {False: 0, True: 0}
        for ids, y in zip(SRC, TGT):
            for hard in (False, True):
                _, beta, carried = steps(m, ids, y, hard)
                _, alpha, carried_mono = steps(mono, ids, y, hard)
                self.assertTrue(torch.equal(carried, carried_mono) and torch.equal(alpha, carried_mono))
                torch.testing.assert_close(beta.sum(-1), alpha.sum(-1), atol=1e-14, rtol=0)
                differs[hard] += not torch.allclose(beta, alpha)
                if not ids:
                    continue
                u = torch.stack([m.attention.chunk_v(m.attention._hidden(*q)).squeeze(-1)[0]
                                 for q in queries(m, ids, y)])
                k = [int(r.nonzero()[-1]) if r.any() else -1 for r in alpha]
                stops.update(k if hard else [])
                want = nt.hard_chunk(u, k, 3) if hard else nt.chunkwise_weights_reference(alpha, u, 3)
                torch.testing.assert_close(beta, want, atol=1e-14, rtol=1e-12)
        self.assertTrue(differs[False] and differs[True] and {-1, 0, 2} <= stops, (differs, stops))

    def test_teacher_forcing_context_dropout_and_guided_alignment_read_beta(self):
        m, batch = model("bahdanau_additive"), nt.make_batch(SRC, TGT)
        _, betas = m(batch.src, batch.src_lengths, batch.tgt_in)
        for b, (ids, y) in enumerate(zip(SRC, TGT)):  # forward's weights = the soft steps' reported β
            lp, rows, _ = steps(m, ids, y, hard=False)
            torch.testing.assert_close(betas[b, :len(y) + 1, :len(ids)], rows[:, :len(ids)], atol=1e-14, rtol=0)
            self.assertAlmostEqual(lp, float(nt.score(m, [ids], [y])[0]), places=12)
        links = [[(0, 0), (2, 1)], [(1, 0)], [(0, 0)], []]
        loss, _ = nt.guided_alignment_loss(betas, links)
        want = -(torch.log(betas[0, 0, 0] + 1e-6) + torch.log(betas[0, 1, 2] + 1e-6)
                 + torch.log(betas[1, 0, 1] + 1e-6) + torch.log(betas[2, 0, 0] + 1e-6))
        self.assertAlmostEqual(float(loss), float(want), places=12)
        # one step at the attention: context = (β ⊙ mask) H, not renormalised; β itself returned
        att, g = m.attention, torch.Generator().manual_seed(6)
        enc = torch.randn(3, 5, 8, generator=g)
        prev, lengths = torch.eye(5)[[0, 1, 0]] * torch.tensor([[1.0], [1], [0]]), [5, 3, 0]
        mask = (torch.rand(3, 5, generator=g) > 0.3).to(torch.float64) / 0.7
        q = torch.randn(3, 5, generator=g)
        ctx, beta, alpha = att(q, att.precompute(enc), enc, lengths, 0, mask, prev=prev, with_alignment=True)
        _, beta_plain = att(q, att.precompute(enc), enc, lengths, 0, prev=prev)
        self.assertTrue(torch.equal(beta, beta_plain))
        torch.testing.assert_close(ctx, torch.einsum("bs,bsc->bc", beta * mask, enc), atol=1e-14, rtol=0)
        u = att.chunk_v(att._hidden(q, att.precompute(enc))).squeeze(-1)
        torch.testing.assert_close(beta, nt.chunkwise_weights_reference(alpha, u, 2, lengths), atol=1e-14, rtol=0)

    def test_hard_decoding_is_the_soft_form_when_p_is_0_or_1(self):
        for name in VARIANTS:
            m = model(name)
            with torch.no_grad():  # |e_j + r| >> 40: p = σ(·) is 0 or 1 (to 1e-17)
                m.attention.v.weight.mul_(1e6)
            for ids, r in zip(SRC, nt.greedy(m, SRC)):
                with self.subTest(name=name, ids=ids):
                    y = r["tokens"][:-1] if r["finished"] else r["tokens"]
                    (lp, rows, _), (hard_lp, hard_rows, _) = steps(m, ids, y, False), steps(m, ids, y, True)
                    torch.testing.assert_close(rows[:len(r["tokens"]), :len(ids)], r["attention"], atol=1e-12,
                                               rtol=0)
                    torch.testing.assert_close(rows, hard_rows, atol=1e-12, rtol=0)
                    self.assertAlmostEqual(lp, hard_lp, places=9)

    def test_gradients_padding_and_noise(self):
        m, batch = model("bahdanau_additive").train(), nt.make_batch(SRC, TGT)
        noise = {"monotonic_noise": 0.5 * torch.randn(4, 6, 7)}
        logits, betas = m(batch.src, batch.src_lengths, batch.tgt_in, masks=noise)
        (logits.logsumexp(-1).sum() + betas.pow(2).sum()).backward()
        for k, p in m.named_parameters():
            self.assertTrue(bool(torch.isfinite(p.grad).all()), k)
        self.assertGreater(float(m.attention.chunk_v.weight.grad.abs().sum()), 0.0)
        self.assertTrue(bool((betas[3] == 0).all()))  # the empty sentence attends to nothing
        m.eval()
        s = nt.score(m, SRC, TGT)
        for b in range(len(SRC)):  # padding is invisible
            torch.testing.assert_close(s[b:b + 1], nt.score(m, SRC[b:b + 1], TGT[b:b + 1]))


def queries(m, ids, y):
    """Each soft step's (query, keys) of a Luong model without input feeding (query s_t)."""
    enc = m.encode(torch.tensor([ids], dtype=torch.int64), [len(ids)])
    state, out = m.init_state(enc), []
    with torch.no_grad():
        for prev in [2] + y:
            _, h = m.decoder.rnn(m.decoder.embedding(torch.tensor([prev]))[:, None, :], state.h)
            out.append((h[-1], enc.keys))
            _, _, state = m.step(torch.tensor([prev]), enc, state, False)
    return out


if __name__ == "__main__":
    unittest.main()
