#!/usr/bin/python3
"""Self-checks of the PyTorch reference python/nazar_torch.py (the fixtures are only as good as
it is): safetensors I/O, padded sentences behave as if alone (RNNs and attention), the local
attention window rules of nazar/attention/local.h, empty sentences.

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
    def check_rnn(self, cell):
        torch.manual_seed(0)
        rnn = nt.make_rnn(cell, 3, 4, num_layers=2, bidirectional=True).double()
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

    def test_gru(self):
        self.check_rnn("gru")

    def test_lstm(self):
        self.check_rnn("lstm")

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


if __name__ == "__main__":
    unittest.main()
