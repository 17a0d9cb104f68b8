#!/usr/bin/python3
"""Self-checks of the PyTorch reference python/nazar_torch.py (the fixtures are only as good as it
is): safetensors I/O, padded sentences behave as if alone (RNNs and attention), local windows as
nazar/attention/local.h, empty sentences, guided alignment, monotonic attention (soft and hard).

    /usr/bin/python3 tests/parity/test_nazar_torch.py      (CTest: parity.nazar_torch_selftest)
Exit code 77 (skipped) when torch or numpy is missing.
"""

import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import numpy as np
    import torch
    import nazar_torch as nt
except ImportError as e:
    print(f"nazar_torch self-test: {e}; skipped")
    sys.exit(77)

torch.set_default_dtype(torch.float64)


class SafetensorsIO(unittest.TestCase):
    def test_round_trip_all_dtypes_and_metadata(self):
        t = {"a.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "d": np.array([0.1, -2.5]),
             "ids": np.array([[1, 2], [3, 0]], dtype=np.int64), "n": np.array([7], dtype=np.int32),
             "scalar": np.float32(3.0), "empty": np.zeros((0, 4), np.float32)}
        meta = {"nazar.config": '{"x": 1}', "ü": "ß"}
        data = nt.serialize_safetensors(t, meta)
        back, m = nt.parse_safetensors(data)
        self.assertEqual(m, meta)
        self.assertEqual(sorted(back), sorted(t))
        for k in t:
            self.assertEqual(back[k].dtype, np.asarray(t[k]).dtype, k)
            np.testing.assert_array_equal(back[k], t[k])
        n = int.from_bytes(data[:8], "little")
        self.assertEqual(n % 8, 0)

    def test_atomic_save_and_load(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.safetensors")
            nt.save_safetensors(p, {"w": torch.ones(2, 2, dtype=torch.float32)})
            nt.save_safetensors(p, {"w": torch.zeros(3, dtype=torch.float32)})
            self.assertEqual(os.listdir(d), ["m.safetensors"])
            t, _ = nt.load_safetensors(p)
            self.assertEqual(t["w"].shape, (3,))

    def test_load_state_dict_with_prefix(self):
        torch.manual_seed(3)
        src = nt.Attention("additive", 4, 6, 5).float()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.safetensors")
            nt.save_safetensors(p, {"attention." + k: v for k, v in src.state_dict().items()}
                                | {"generator.bias": torch.zeros(3, dtype=torch.float32)})
            dst = nt.Attention("additive", 4, 6, 5).float()
            nt.load_state_dict(dst, p, prefix="attention.")
        for k, v in src.state_dict().items():
            torch.testing.assert_close(dst.state_dict()[k], v)

    def test_rejects_duplicates_and_truncation(self):
        data = nt.serialize_safetensors({"w": np.ones(2, np.float32)})
        with self.assertRaises(ValueError):
            nt.parse_safetensors(data[:-1])
        bad = data.replace(b'{"w":', b'{"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"w":', 1)
        bad = len(bad[8:]).to_bytes(8, "little") + bad[8:]
        with self.assertRaises(ValueError):
            nt.parse_safetensors(bad)

    def test_state_dict_names_follow_the_contract(self):
        rnn = nt.GRU(3, 4, num_layers=2, bidirectional=True)
        self.assertIn("weight_ih_l1_reverse", rnn.state_dict())
        att = nt.Attention("additive", 4, 6, 5, local="local-p", position_size=3)
        self.assertEqual(sorted(att.state_dict()), ["key.weight", "position.weight", "position_v.weight",
                                                    "query.weight", "v.weight"])
        self.assertEqual(tuple(att.key.weight.shape), (5, 6))
        self.assertEqual(tuple(nt.Attention("general", 4, 6).key.weight.shape), (4, 6))


class PaddingIsInvisible(unittest.TestCase):
    def check_rnn(self, cell, layer_norm=False, residual=False):
        torch.manual_seed(0)
        rnn = nt.make_rnn(cell, 3, 4, num_layers=2, bidirectional=True, layer_norm=layer_norm,
                          residual=residual).double()
        lengths = [5, 2, 4]
        x = torch.randn(3, 5, 3)
        x[1, 2:] = 100.0  # garbage in the padding must not matter
        out, h_n = rnn(x, lengths)
        if cell == "lstm":
            h_n = h_n[0]
        for b, n in enumerate(lengths):
            o1, h1 = rnn(x[b:b + 1, :n], [n])
            h1 = h1[0] if cell == "lstm" else h1
            torch.testing.assert_close(out[b:b + 1, :n], o1)
            torch.testing.assert_close(h_n[:, b:b + 1], h1)
            self.assertTrue(bool((out[b, n:] == 0).all()))

    def test_rnns(self):  # GRU and LSTM, plain, layer-normalised, residual
        for cell, layer_norm, residual in (("gru", 0, 0), ("lstm", 0, 0), ("gru", 1, 0), ("lstm", 1, 0), ("gru", 0, 1),
                                           ("lstm", 1, 1)):
            with self.subTest(cell=cell, layer_norm=layer_norm, residual=residual):
                self.check_rnn(cell, bool(layer_norm), bool(residual))


def _sig(v):
    return 1 / (1 + np.exp(-v))


class LayerNormCells(unittest.TestCase):
    """The explicit-ops cells against the equations of docs/spec.md §2.3 written with numpy."""

    def cell(self, cls, seed, H=5):
        """A cell with gains in [0.5, 1.5], inputs x (3, 4), h (3, H), and its gi, gh by numpy."""
        torch.manual_seed(seed)
        cell = cls(4, H).double()
        with torch.no_grad():
            cell.ln_weight_ih.uniform_(0.5, 1.5)
            cell.ln_weight_hh.uniform_(0.5, 1.5)
        x, h = torch.randn(3, 4), torch.randn(3, H)
        p = {k: v.detach().numpy() for k, v in cell.named_parameters()}

        def ln(a, g, b):
            blk = a.reshape(a.shape[0], cls.G, H)
            blk = (blk - blk.mean(-1, keepdims=True)) / np.sqrt(blk.var(-1, keepdims=True) + 1e-5)
            return blk.reshape(a.shape) * g + b
        return cell, x, h, (ln(x.numpy() @ p["weight_ih"].T, p["ln_weight_ih"], p["bias_ih"]),
                            ln(h.numpy() @ p["weight_hh"].T, p["ln_weight_hh"], p["bias_hh"]))

    def test_cell_matches_numpy(self):
        (cell, x, h, (gi, gh)), H = self.cell(nt.LayerNormGRUCell, 1), 5
        r, z = _sig(gi[:, :H] + gh[:, :H]), _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        np.testing.assert_allclose(cell(x, h).detach().numpy(), (1 - z) * n + z * h.numpy(), rtol=1e-12)

    def test_lstm_cell_matches_numpy(self):
        (cell, x, h, (gi, gh)), H = self.cell(nt.LayerNormLSTMCell, 2), 5
        a, c = gi + gh, torch.randn(3, H)
        c_new = _sig(a[:, H:2 * H]) * c.numpy() + _sig(a[:, :H]) * np.tanh(a[:, 2 * H:3 * H])
        h_new, c_got = cell(x, (h, c))
        np.testing.assert_allclose(c_got.detach().numpy(), c_new, rtol=1e-12)
        np.testing.assert_allclose(h_new.detach().numpy(), _sig(a[:, 3 * H:]) * np.tanh(c_new), rtol=1e-12)

    def test_names(self):
        for cell in ("gru", "lstm"):
            rnn = nt.make_rnn(cell, 3, 4, num_layers=2, bidirectional=True, layer_norm=True)
            names = list(rnn.state_dict())
            self.assertEqual(names[:6], ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                         "ln_weight_ih_l0", "ln_weight_hh_l0"])
            self.assertIn("ln_weight_hh_l1_reverse", names)

    def test_attention(self):
        for cfg in [dict(score="additive", attention_size=3), dict(score="general"),
                    dict(score="general", local="local-m", window=1),
                    dict(score="dot", local="local-p", window=2)]:
            with self.subTest(**cfg):
                torch.manual_seed(1)
                H = 6 if cfg["score"] == "dot" else 5
                att = nt.Attention(query_size=H, context_size=6, **cfg).double()
                lengths = torch.tensor([7, 3])
                enc = torch.randn(2, 7, 6)
                q = torch.randn(2, H)
                for t in (0, 4):
                    c, w = att(q, att.precompute(enc), enc, lengths, t)
                    c1, w1 = att(q[1:], att.precompute(enc[1:, :3]), enc[1:, :3], lengths[1:], t)
                    torch.testing.assert_close(c[1:], c1)
                    torch.testing.assert_close(w[1:, :3], w1)
                    self.assertTrue(bool((w[1, 3:] == 0).all()))


class LocalWindows(unittest.TestCase):
    def test_local_m_window_and_clamp(self):
        att = nt.Attention("dot", 4, 4, local="local-m", window=2)
        lengths = torch.tensor([10, 3])
        p = att.positions(torch.zeros(2, 4), lengths, 6)
        self.assertEqual(p.tolist(), [6.0, 2.0])  # min(t, S_b - 1)
        self.assertEqual(att.windows(p, lengths), [(4, 8), (0, 2)])

    def test_local_p_rounds_half_up_then_clamps(self):
        att = nt.Attention("dot", 4, 4, local="local-p", window=1)
        lengths = torch.tensor([10, 10, 4, 4])
        p = torch.tensor([2.5, 2.49, 3.7, 0.2])
        self.assertEqual(att.windows(p, lengths), [(2, 4), (1, 3), (2, 3), (0, 1)])

    def test_local_p_gaussian_not_renormalised(self):
        torch.manual_seed(2)
        att = nt.Attention("general", 5, 6, local="local-p", window=2).double()
        enc = torch.randn(1, 9, 6)
        q = torch.randn(1, 5)
        lengths = torch.tensor([9])
        _, w = att(q, att.precompute(enc), enc, lengths, 0)
        p = float(att.positions(q, lengths, 0))
        lo, hi = att.windows(torch.tensor([p]), lengths)[0]
        self.assertLessEqual(hi - lo + 1, 5)
        self.assertTrue(bool((w[0, :lo] == 0).all()) and bool((w[0, hi + 1:] == 0).all()))
        self.assertLess(float(w.sum()), 1.0)
        # dividing by the Gaussian gives back a softmax over the window
        i = torch.arange(lo, hi + 1, dtype=torch.float64)
        g = torch.exp(-(i - p) ** 2 / (2 * 1.0 ** 2))
        self.assertAlmostEqual(float((w[0, lo:hi + 1] / g).sum()), 1.0, places=12)

    def test_empty_sentence_gives_zero_weights_and_finite_gradients(self):
        for local in ("global", "local-m", "local-p"):
            with self.subTest(local=local):
                att = nt.Attention("additive", 4, 4, 3, local=local, window=1).double()
                enc = torch.randn(2, 3, 4, requires_grad=True)
                q = torch.randn(2, 4, requires_grad=True)
                c, w = att(q, att.precompute(enc), enc, torch.tensor([3, 0]), 1)
                self.assertTrue(bool((w[1] == 0).all()) and bool((c[1] == 0).all()))
                c.sum().backward()
                self.assertTrue(bool(torch.isfinite(q.grad).all()) and bool(torch.isfinite(enc.grad).all()))

    def test_dot_needs_equal_sizes(self):
        with self.assertRaises(AssertionError):
            nt.Attention("dot", 4, 6)


def _model_config(**over):
    cfg = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6, "encoder": {"hidden_size": 4},
           "decoder": {"kind": "luong", "hidden_size": 5, "input_feeding": True},
           "attention": {"score": "general"}}
    for k, v in over.items():
        if isinstance(v, dict):
            cfg.setdefault(k, {}).update(v)
        else:
            cfg[k] = v
    return cfg


MODEL_VARIANTS = {
    "bahdanau": _model_config(decoder={"kind": "bahdanau", "input_feeding": False}, attention={"score": "additive"}),
    "bahdanau_deep_tied": _model_config(decoder={"kind": "bahdanau", "input_feeding": False, "deep_output": True,
                                                 "deep_output_size": 6, "num_layers": 2},
                                        attention={"score": "additive"}, tie_target_embeddings=True),
    "luong_general_feed": _model_config(),
    "luong_local_p_lstm": _model_config(encoder={"cell": "lstm", "num_layers": 2},
                                        decoder={"cell": "lstm", "num_layers": 2},
                                        attention={"local": "local-p", "window": 1}),
    "luong_local_m_last": _model_config(decoder={"bridge": "last"}, attention={"local": "local-m", "window": 1}),
    "bahdanau_monotonic": _model_config(decoder={"kind": "bahdanau", "input_feeding": False},
                                        attention={"score": "additive", "monotonic": True, "monotonic_noise": 0.5}),
    "luong_monotonic": _model_config(attention={"monotonic": True, "scale": "learned", "monotonic_bias_init": 0.5}),
}
SRC = [[4, 5, 6, 7, 8], [9, 10], [11, 4, 6]]
TGT = [[5, 6, 7], [8, 9, 10, 11, 12], [4]]


def replay(m, ids, y, hard=True):  # (Σ log p of y + </s>, attention rows) by the step API, one sentence
    enc = m.encode(torch.tensor([ids]).reshape(1, len(ids)), [len(ids)])
    state, total, rows = m.init_state(enc), 0.0, []
    for prev, nxt in zip([2] + y, y + [3]):
        lp, a, state = m.step(torch.tensor([prev]), enc, state, hard)
        total, rows = total + lp[0, nxt], rows + [a[0]]
    return total, torch.stack(rows)


class Models(unittest.TestCase):
    def model(self, name):
        torch.manual_seed(4)
        return nt.Seq2Seq(MODEL_VARIANTS[name]).double().eval()

    def test_state_dict_names_follow_the_contract(self):
        sd = self.model("bahdanau_deep_tied").state_dict()
        for k in ["encoder.embedding.weight", "encoder.rnn.weight_ih_l0_reverse", "bridge.weight", "bridge.bias",
                  "decoder.embedding.weight", "decoder.rnn.weight_hh_l1", "decoder.deep_output.state.weight",
                  "decoder.deep_output.prev.weight", "decoder.deep_output.context.weight", "attention.query.weight",
                  "attention.key.weight", "attention.v.weight", "generator.weight", "generator.bias"]:
            self.assertIn(k, sd)
        self.assertEqual(tuple(sd["decoder.rnn.weight_ih_l0"].shape), (15, 6 + 8))  # [e ; c_t]
        self.assertEqual(sd["generator.weight"].data_ptr(), sd["decoder.embedding.weight"].data_ptr())
        sd = self.model("luong_general_feed").state_dict()
        self.assertEqual(tuple(sd["decoder.combine.weight"].shape), (5, 5 + 8))
        self.assertEqual(tuple(sd["decoder.rnn.weight_ih_l0"].shape), (15, 6 + 5))  # [e ; s~_{t-1}]
        self.assertEqual(tuple(sd["attention.key.weight"].shape), (5, 8))
        self.assertNotIn("decoder.combine.weight", self.model("bahdanau").state_dict())
        self.assertEqual(self.model("luong_monotonic").state_dict()["attention.monotonic_bias"].tolist(), [0.5])
        self.assertNotIn("monotonic", nt.config_json(MODEL_VARIANTS["luong_general_feed"]))  # written when on

    def test_config_errors(self):
        for bad in [_model_config(attention={"score": "dot"}), _model_config(decoder={"deep_output": True}),
                    _model_config(colour="red"), _model_config(encoder={"bidirectional": False},
                                                               decoder={"kind": "bahdanau", "input_feeding": False,
                                                                        "bridge": "backward-first"})] + [
                _model_config(attention=dict(bad, monotonic=True)) for bad in  # monotonic: global, no coverage
                ({"local": "local-m"}, {"local": "local-p"}, {"score": "additive", "coverage": True},
                 {"monotonic_noise": -1.0}, {"monotonic_bias_init": float("inf")})] + [
                _model_config(attention={"monotonic": True}, copy_attention=True)]:
            with self.assertRaises(ValueError):
                nt.Seq2Seq(bad)

    def test_padding_is_invisible_and_score_is_minus_loss(self):
        for name in MODEL_VARIANTS:
            with self.subTest(name=name):
                m = self.model(name)
                s = nt.score(m, SRC, TGT)
                for b in range(len(SRC)):
                    torch.testing.assert_close(s[b:b + 1], nt.score(m, SRC[b:b + 1], TGT[b:b + 1]))
                total, tokens = nt.loss(m, nt.make_batch(SRC, TGT))
                self.assertEqual(tokens, sum(len(y) + 1 for y in TGT))
                torch.testing.assert_close(s.sum(), -total)

    def test_step_api_equals_forced_decoding(self):
        for name in MODEL_VARIANTS:
            with self.subTest(name=name):
                m = self.model(name)
                batch = nt.make_batch(SRC, TGT)
                enc = m.encode(batch.src, batch.src_lengths)
                state = m.init_state(enc)
                total = torch.zeros(len(SRC), dtype=torch.float64)
                for t in range(batch.tgt_in.shape[1]):
                    lp, _, state = m.step(batch.tgt_in[:, t], enc, state, hard=False)
                    y = batch.tgt_out[:, t]
                    total += lp.gather(1, y[:, None]).squeeze(1).masked_fill(y == 0, 0.0)
                torch.testing.assert_close(total, nt.score(m, batch))

    def test_greedy_is_beam_one_and_beam_scores_are_consistent(self):
        for name in MODEL_VARIANTS:
            with self.subTest(name=name):
                m = self.model(name)
                with torch.no_grad():
                    m.generator.bias[3] += 2.0  # let some hypotheses finish
                g = nt.greedy(m, SRC)
                beams = nt.beam_search(m, SRC, beam_size=1, alpha=0.0)
                for r, hs in zip(g, beams):
                    self.assertEqual(r["tokens"], hs[0]["tokens"])
                    self.assertAlmostEqual(r["score"], hs[0]["log_prob"], places=10)
                    torch.testing.assert_close(r["attention"], hs[0]["attention"])
                for ids, hs in zip(SRC, nt.beam_search(m, SRC, beam_size=4, n_best=3, alpha=0.6)):
                    self.assertEqual(len(hs), 3)
                    self.assertEqual([h["score"] for h in hs], sorted((h["score"] for h in hs), reverse=True))
                    for h in hs:
                        self.assertLessEqual(len(h["tokens"]), nt.max_decode_length(len(ids)))
                        y = h["tokens"][:-1] if h["finished"] else h["tokens"]
                        self.assertNotIn(0, h["tokens"])  # <pad> and <s> are never emitted
                        self.assertNotIn(2, h["tokens"])
                        if h["finished"]:  # log_prob = forced-decoding score (monotonic: hard, as decoding)
                            lp, rows = replay(m, ids, y) if m.attention.monotonic else (nt.score(m, [ids], [y])[0], ())
                            self.assertAlmostEqual(h["log_prob"], float(lp), places=9)
                            self.assertTrue(not len(rows) or torch.equal(h["attention"], rows[:, :len(ids)]))
                        self.assertAlmostEqual(h["score"], h["log_prob"] / nt.length_penalty(len(h["tokens"]), 0.6),
                                               places=12)

    def test_searches_never_emit_pad_or_bos(self):
        m = self.model("bahdanau")
        with torch.no_grad():  # <pad> and <s> are every step's argmax, by far
            m.generator.bias[0] += 30.0
            m.generator.bias[2] += 20.0
            m.generator.bias[3] += 1.0
        g = nt.greedy(m, SRC)
        beams = nt.beam_search(m, SRC, beam_size=3, n_best=3, alpha=0.0)
        for ids, r, hs in zip(SRC, g, beams):
            self.assertFalse({0, 2} & set(r["tokens"]))
            y = r["tokens"][:-1] if r["finished"] else r["tokens"]
            if r["finished"]:  # the score is the model's own log p of the tokens: = forced decoding
                self.assertAlmostEqual(r["score"], float(nt.score(m, [ids], [y])[0]), places=9)
            self.assertLess(r["score"], -10.0)  # unrenormalised: every token is far below <pad>
            for h in hs:
                self.assertFalse({0, 2} & set(h["tokens"]))
            self.assertEqual(r["tokens"], nt.beam_search(m, [ids], beam_size=1, alpha=0.0)[0][0]["tokens"])

    def test_scheduled_sampling(self):
        m = self.model("bahdanau").train()
        batch = nt.make_batch(SRC, TGT)
        teacher, _ = m(batch.src, batch.src_lengths, batch.tgt_in)
        same, _ = m(batch.src, batch.src_lengths, batch.tgt_in, sampling_prob=0.0)
        torch.testing.assert_close(same, teacher)
        sampled, _ = m(batch.src, batch.src_lengths, batch.tgt_in, sampling_prob=1.0)
        # p = 1: step t > 0 reads argmax of step t-1, which is what greedy-style feeding gives
        fed = batch.tgt_in.clone()
        fed[:, 1:] = sampled[:, :-1].argmax(-1)
        replay, _ = m(batch.src, batch.src_lengths, fed)
        torch.testing.assert_close(sampled, replay)
        self.assertFalse(torch.allclose(sampled, teacher))
        evald, _ = m.eval()(batch.src, batch.src_lengths, batch.tgt_in, sampling_prob=1.0)  # eval: no sampling
        torch.testing.assert_close(evald, teacher)

    def test_dropout_masks(self):
        """Masks of ones are the identity, eval mode ignores masks, and a zero mask on the decoder
        output leaves only the generator bias (the mask really reaches each site)."""
        m = self.model("bahdanau_deep_tied").train()
        batch = nt.make_batch(SRC, TGT)
        B, S = batch.src.shape
        T = batch.tgt_in.shape[1]
        E, C, D = 6, 8, 6

        def full(v, *shape):
            return torch.full(shape, v, dtype=torch.float64)
        ones = {"src_emb": full(1, B, S, E), "enc_out": full(1, B, S, C), "tgt_emb": full(1, B, T, E),
                "dec_out": full(1, B, T, D), "attention": full(1, B, T, S)}
        plain, alpha = m(batch.src, batch.src_lengths, batch.tgt_in)
        masked, alpha1 = m(batch.src, batch.src_lengths, batch.tgt_in, masks=ones)
        torch.testing.assert_close(masked, plain)
        torch.testing.assert_close(alpha1, alpha)
        for site in ones:
            with self.subTest(site=site):
                dropped = dict(ones)
                dropped[site] = 2 * torch.bernoulli(full(0.5, *ones[site].shape), generator=torch.Generator().manual_seed(1))
                out, _ = m(batch.src, batch.src_lengths, batch.tgt_in, masks=dropped)
                self.assertFalse(torch.allclose(out, plain), site)
                evald, _ = m.eval()(batch.src, batch.src_lengths, batch.tgt_in, masks=dropped)
                torch.testing.assert_close(evald, plain)
                m.train()
        zero = dict(ones, dec_out=full(0, B, T, D))
        out, _ = m(batch.src, batch.src_lengths, batch.tgt_in, masks=zero)
        torch.testing.assert_close(out, m.generator.bias.expand_as(out))

    def test_model_file_round_trip(self):
        for name in MODEL_VARIANTS:
            with self.subTest(name=name), tempfile.TemporaryDirectory() as d:
                torch.manual_seed(1)
                m = nt.Seq2Seq(MODEL_VARIANTS[name])
                p, q = os.path.join(d, "a.safetensors"), os.path.join(d, "b.safetensors")
                nt.save_model(p, m, {"nazar.src_vocab": "{}"})
                back, meta = nt.load_model(p)
                self.assertEqual(meta["nazar.format"], "1")
                self.assertEqual(meta["nazar.src_vocab"], "{}")
                self.assertEqual(nt.model_config(meta["nazar.config"]), m.config)
                for k, v in m.state_dict().items():
                    self.assertTrue(torch.equal(v.float(), back.state_dict()[k]), k)
                nt.save_model(q, back, meta)
                with open(p, "rb") as a, open(q, "rb") as b:
                    self.assertEqual(a.read(), b.read())
                # a checkpoint: the same file plus optimizer / training state, which load_model ignores
                tensors, meta = nt.load_safetensors(p)
                tensors["optim.exp_avg.generator.bias"] = tensors["generator.bias"]
                tensors["train.step"] = np.array([7.0], np.float32)
                nt.save_safetensors(q, tensors, meta)
                ck, _ = nt.load_model(q)
                for k, v in back.state_dict().items():
                    self.assertTrue(torch.equal(v, ck.state_dict()[k]), k)


class Monotonic(unittest.TestCase):
    def test_hard_choice_by_hand(self):  # dot: e_j = q · h_j; r = -1: e + r = (-0.5, 2, -3, 0.5, 3)
        att, enc = nt.Attention("dot", 1, 1, monotonic=True), torch.tensor([0.5, 3, -2, 1.5, 4]).reshape(1, 5, 1)
        prev = torch.eye(5)[[0, 2, 4, 0]] * torch.tensor([[1.0], [1], [1], [0]])  # 2: from 4 >= S_b; 3: ran off
        ctx, a = att(torch.ones(4, 1), enc.repeat(4, 1, 1), enc.repeat(4, 1, 1), [5, 5, 4, 5], prev=prev, hard=True)
        self.assertEqual((a.tolist(), ctx[:, 0].tolist()),
                         ([[0, 1, 0, 0, 0], [0, 0, 0, 1, 0], [0] * 5, [0] * 5], [3.0, 1.5, 0.0, 0.0]))

    def test_hard_decoding_is_the_expected_alignment_when_p_is_0_or_1(self):
        for m in (Models.model(self, name) for name in ("bahdanau_monotonic", "luong_monotonic")):
            with torch.no_grad():  # |e_j + r| >> 40: p = σ(·) is 0 or 1 (to 1e-17)
                (m.attention.v if hasattr(m.attention, "v") else m.attention.key).weight.mul_(1e6)
            for ids, r in zip(SRC, nt.greedy(m, SRC)):
                y = r["tokens"][:-1] if r["finished"] else r["tokens"]
                (lp, rows), (hard_lp, _) = replay(m, ids, y, hard=False), replay(m, ids, y)
                torch.testing.assert_close(rows[:len(r["tokens"]), :len(ids)], r["attention"], atol=1e-12, rtol=0)
                self.assertAlmostEqual(float(lp), float(hard_lp), places=9)

    def test_gradients_flow_through_prev(self):  # luong without input feeding: α_0 reaches α_1 only as prev
        m = nt.Seq2Seq(_model_config(decoder={"input_feeding": False}, attention={"monotonic": True}))
        enc = m.encode(torch.tensor([[4, 5, 6]]), [3])
        _, a0, state = m.step(torch.tensor([2]), enc, m.init_state(enc), hard=False)
        _, a1, _ = m.step(torch.tensor([5]), enc, state, hard=False)
        self.assertGreater(float(torch.autograd.grad(a1[0, 2], a0)[0].abs().sum()), 0.0)

    def test_recursive_equals_parallel_noise_and_gradients(self):
        m, batch = Models.model(self, "bahdanau_monotonic").train(), nt.make_batch(SRC, TGT)
        mod, noise, grads = sys.modules[nt.Attention.__module__], {"monotonic_noise": 0.5 * torch.randn(3, 6, 5)}, []
        self.addCleanup(setattr, mod, "monotonic_alignment", nt.monotonic_alignment)
        for mod.monotonic_alignment in (nt.monotonic_alignment, nt.monotonic_alignment_parallel):
            logits, alphas = m(batch.src, batch.src_lengths, batch.tgt_in, masks=noise)
            m.zero_grad()
            (logits.logsumexp(-1).sum() + alphas.pow(2).sum()).backward()
            grads.append({k: p.grad.clone() for k, p in m.named_parameters()})
        for k, g in grads[0].items():  # finite, equal, and r has one
            self.assertTrue(bool(torch.isfinite(g).all()) and (k != "attention.monotonic_bias" or float(g) != 0), k)
            torch.testing.assert_close(g, grads[1][k], atol=1e-10, rtol=1e-8)
        plain, _ = m.eval()(batch.src, batch.src_lengths, batch.tgt_in, masks=noise)  # eval: no noise
        drawn, _ = m.train()(batch.src, batch.src_lengths, batch.tgt_in)  # σ = 0.5, drawn
        self.assertFalse(torch.allclose(drawn, plain) or torch.allclose(logits, plain))


class GuidedAlignment(unittest.TestCase):
    """nt.guided_alignment_loss by hand: A_t = the position's links normalised to 1, duplicates
    once, links where α = 0 (outside a local window) skipped, positions without links free."""

    def test_hand_computed(self):
        a = torch.tensor([[[0.5, 0.25, 0.25, 0.0], [0.0, 0.1, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]]],
                         requires_grad=True)
        links = [[(0, 0), (1, 0), (1, 0), (0, 1), (2, 1)]]  # t = 2 unaligned; (0, 1) has α = 0
        loss, positions = nt.guided_alignment_loss(a, links)
        e = nt.GUIDED_ALIGNMENT_EPSILON
        want = -(0.5 * np.log(0.5 + e) + 0.5 * np.log(0.25 + e) + 0.5 * np.log(0.6 + e))
        self.assertAlmostEqual(float(loss), want, places=12)
        self.assertEqual(positions, 2)
        loss.backward()
        g = a.grad[0]
        self.assertAlmostEqual(float(g[0, 0]), -0.5 / (0.5 + e), places=12)
        self.assertAlmostEqual(float(g[1, 2]), -0.5 / (0.6 + e), places=12)
        self.assertEqual(float(g[1, 0]), 0.0)  # skipped: α = 0
        self.assertEqual(float(g[2].abs().sum()), 0.0)


if __name__ == "__main__":
    unittest.main()
