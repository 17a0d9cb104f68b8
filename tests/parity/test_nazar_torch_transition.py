#!/usr/bin/python3
"""Self-checks of the PyTorch reference's deep-transition GRU encoder (python/nazar/torch,
nazar/nn/transition.h; Barone et al. 2017): the explicit RNN with transition_depth D against each
sentence run alone through torch's own GRUCell steps (a transition is a GRUCell with a zero-width
input) or, with layer normalisation, through the equations written out here; depth 1 is the plain
model; the parameter names and shapes of the weight-naming contract; the config key (written only
when > 1, GRU only, 1-8) and the model file round trip.

    /usr/bin/python3 tests/parity/test_nazar_torch_transition.py
Exit code 77 (skipped) when torch or numpy is missing.
"""

import json
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
    print(f"nazar_torch transition self-test: {e}; skipped")
    sys.exit(77)

torch.set_default_dtype(torch.float64)

CELL_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
TRANSITION_NAMES = ("weight_hh", "bias_ih", "bias_hh")


def _ln(a, gain, H):
    """LN per gate block of H units (biased variance, ε = 1e-5), scaled by gain: by hand."""
    blocks = a.unflatten(-1, (-1, H))
    mu = blocks.mean(-1, keepdim=True)
    var = ((blocks - mu) ** 2).mean(-1, keepdim=True)
    return ((blocks - mu) / torch.sqrt(var + 1e-5)).flatten(-2) * gain


def _gru(gi, gh, h):  # torch's GRU update from the two products (gate order r, z, n)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    return (1 - z) * torch.tanh(i_n + r * h_n) + z * h


def _torch_steps(P, sfx, depth, I, H):
    """(cell, transitions) as torch.nn.GRUCell modules holding the RNN's tensors of sfx
    ("_l{k}[_reverse]"); the transitions are GRUCell(0, H): W_ih x + b_ih = b_ih."""
    cell = torch.nn.GRUCell(I, H)
    trs = [torch.nn.GRUCell(0, H) for _ in range(1, depth)]
    with torch.no_grad():
        for name in CELL_NAMES:
            getattr(cell, name).copy_(P[name + sfx])
        for j, tr in enumerate(trs, 1):
            for name in TRANSITION_NAMES:
                getattr(tr, name).copy_(P[f"{name}{sfx}_t{j}"])
    step = lambda x, h: cell(x[None], h[None])[0]  # noqa: E731
    return step, [lambda h, tr=tr: tr(h.new_zeros(1, 0), h[None])[0] for tr in trs]


def _ln_steps(P, sfx, depth, H):
    """The layer-normalised cell and transitions of sfx, written out from the tensors by name."""
    def step(x, h):
        return _gru(_ln(x @ P["weight_ih" + sfx].t(), P["ln_weight_ih" + sfx], H) + P["bias_ih" + sfx],
                    _ln(h @ P["weight_hh" + sfx].t(), P["ln_weight_hh" + sfx], H) + P["bias_hh" + sfx], h)

    def transition(j):
        t = f"{sfx}_t{j}"
        return lambda h: _gru(P["bias_ih" + t], _ln(h @ P["weight_hh" + t].t(), P["ln_weight_hh" + t], H)
                              + P["bias_hh" + t], h)
    return step, [transition(j) for j in range(1, depth)]


def reference(rnn, x, lengths, h0, layer_norm=False, residual=False):
    """(out, h_n) of the RNN, each sentence alone (no padding), step by step: the cell, then its
    D − 1 transitions; the last state is the output and the next step's state."""
    P, H, L = dict(rnn.named_parameters()), rnn.hidden_size, rnn.num_layers
    dirs, depth = 2 if rnn.bidirectional else 1, rnn.transition_depth
    out, h_n = torch.zeros(x.shape[0], x.shape[1], dirs * H), torch.zeros(L * dirs, x.shape[0], H)
    for b, n in enumerate(lengths):
        inp = x[b, :n]
        for k in range(L):
            halves = []
            for d in range(dirs):
                sfx = f"_l{k}" + ("_reverse" if d else "")
                step, trs = (_ln_steps(P, sfx, depth, H) if layer_norm
                             else _torch_steps(P, sfx, depth, inp.shape[1], H))
                h, ys = h0[k * dirs + d, b], [None] * n
                for t in (range(n) if d == 0 else reversed(range(n))):
                    h = step(inp[t], h)
                    for tr in trs:
                        h = tr(h)
                    ys[t] = h
                halves.append(torch.stack(ys))
                h_n[k * dirs + d, b] = h
            y = torch.cat(halves, -1)
            inp = y + inp if residual and k > 0 else y
        out[b, :n] = inp
    return out, h_n


def _rnn(depth, layer_norm=False, residual=False, layers=2, I=3, H=4, seed=0):
    torch.manual_seed(seed)
    rnn = nt.make_rnn("gru", I, H, num_layers=layers, bidirectional=True, layer_norm=layer_norm,
                      residual=residual, transition_depth=depth).double().eval()
    with torch.no_grad():  # gains away from 1, so that a gain in the wrong place shows
        for name, p in rnn.named_parameters():
            if name.startswith("ln_weight"):
                p.uniform_(0.5, 1.5)
    return rnn


class DeepTransitionRNN(unittest.TestCase):
    lengths = [5, 2, 4]

    def inputs(self, layers=2, I=3, H=4):
        g = torch.Generator().manual_seed(7)
        x = torch.rand(3, 5, I, generator=g) * 2 - 1
        for b, n in enumerate(self.lengths):
            x[b, n:] = 100.0  # garbage in the padding must not matter
        return x, torch.rand(layers * 2, 3, H, generator=g) * 2 - 1

    def check(self, depth, layer_norm=False, residual=False, layers=2, H=4):
        rnn = _rnn(depth, layer_norm, residual, layers, H=H)
        x, h0 = self.inputs(layers, H=H)
        out, h_n = rnn(x, self.lengths, h0)
        want_out, want_h = reference(rnn, x, self.lengths, h0, layer_norm, residual)
        torch.testing.assert_close(out, want_out, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(h_n, want_h, rtol=1e-12, atol=1e-12)
        return rnn, x, h0

    def test_against_torch_gru_cells(self):
        for depth in (2, 3, 4):
            with self.subTest(depth=depth):
                self.check(depth)

    def test_layer_norm_against_the_equations(self):
        for depth in (2, 3):
            with self.subTest(depth=depth):
                self.check(depth, layer_norm=True, H=5)

    def test_with_residual_connections(self):
        self.check(3, residual=True, layers=3)
        self.check(2, layer_norm=True, residual=True, layers=3)

    def test_padding_gets_no_gradient_and_the_transitions_matter(self):
        rnn, x, h0 = self.check(3)
        x.requires_grad_(True)
        out, h_n = rnn(x, self.lengths, h0)
        (out.sum() + h_n.sum()).backward()
        for b, n in enumerate(self.lengths):
            self.assertEqual(float(x.grad[b, n:].abs().sum()), 0.0)
            self.assertEqual(float(out[b, n:].abs().sum()), 0.0)
        for name, p in rnn.named_parameters():
            self.assertGreater(float(p.grad.abs().sum()), 0.0, name)
        with torch.no_grad():  # the transitions' tensors change the result
            rnn.bias_ih_l1_reverse_t2.add_(0.1)
            self.assertFalse(torch.allclose(rnn(x, self.lengths, h0)[0], out))

    def test_depth_one_is_the_plain_rnn(self):
        self.assertIs(type(nt.make_rnn("gru", 3, 4, transition_depth=1)), nt.GRU)
        plain, explicit = _rnn(1), nt.layers.ExplicitGRU(3, 4, num_layers=2, bidirectional=True).double()
        explicit.load_state_dict(plain.state_dict())
        x, h0 = self.inputs()
        for a, b in zip(plain(x, self.lengths, h0), explicit(x, self.lengths, h0)):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)

    def test_refusals(self):
        for kw in ({"cell": "lstm", "transition_depth": 2}, {"cell": "lstm", "transition_depth": 2, "layer_norm": True},
                   {"cell": "gru", "transition_depth": 0}, {"cell": "gru", "transition_depth": 0, "layer_norm": True}):
            with self.subTest(**kw), self.assertRaises(ValueError):
                nt.make_rnn(input_size=3, hidden_size=4, **kw)


class Names(unittest.TestCase):
    def test_rnn_names_in_order_and_shapes(self):
        for layer_norm in (False, True):
            rnn, H = _rnn(3, layer_norm, H=4), 4
            want = []
            for k in range(2):
                for sfx in (f"_l{k}", f"_l{k}_reverse"):
                    want += [n + sfx for n in CELL_NAMES]
                    want += [n + sfx for n in ("ln_weight_ih", "ln_weight_hh")] if layer_norm else []
                    for j in (1, 2):
                        want += [f"{n}{sfx}_t{j}" for n in TRANSITION_NAMES]
                        want += [f"ln_weight_hh{sfx}_t{j}"] if layer_norm else []
            self.assertEqual([n for n, _ in rnn.named_parameters()], want)
            self.assertEqual(list(rnn.state_dict()), want)
            sd = rnn.state_dict()
            self.assertEqual(tuple(sd["weight_hh_l1_reverse_t2"].shape), (3 * H, H))
            self.assertEqual(tuple(sd["bias_ih_l0_t1"].shape), (3 * H,))

    def test_init(self):
        torch.manual_seed(0)
        rnn, k = nt.make_rnn("gru", 3, 16, bidirectional=True, layer_norm=True, transition_depth=2), 16 ** -0.5
        for name, p in rnn.named_parameters():
            if name.startswith("ln_weight"):
                self.assertTrue(torch.equal(p, torch.ones_like(p)), name)
            else:
                self.assertLessEqual(float(p.abs().max()), k, name)
                self.assertGreater(float(p.std()), k / 4, name)

    def test_model_names(self):
        m = nt.Seq2Seq(MODEL)
        sd = m.state_dict()
        self.assertEqual(tuple(sd["encoder.rnn.weight_hh_l0_reverse_t1"].shape), (12, 4))
        for name in ("bias_ih_l1_t1", "bias_hh_l1_reverse_t1", "ln_weight_hh_l0_t1"):
            self.assertIn("encoder.rnn." + name, sd)
        self.assertNotIn("encoder.rnn.ln_weight_ih_l0_t1", sd)
        self.assertFalse([k for k in sd if k.startswith("decoder.") and "_t1" in k])


MODEL = {"src_vocab_size": 12, "tgt_vocab_size": 13, "embedding_size": 6,
         "encoder": {"hidden_size": 4, "num_layers": 2, "layer_norm": True, "transition_depth": 2},
         "decoder": {"kind": "bahdanau", "hidden_size": 5}, "attention": {"score": "additive"}}
SRC = [[4, 5, 6, 7, 8], [9, 10], [11, 4, 6]]
TGT = [[5, 6, 7], [8, 9, 10, 11, 12], [4]]


def _with_depth(depth, **encoder):
    cfg = json.loads(json.dumps(MODEL))
    cfg["encoder"].update(encoder, transition_depth=depth)
    return cfg


class Config(unittest.TestCase):
    def test_round_trip_and_written_only_when_deep(self):
        for depth in (1, 2, 8):
            cfg = nt.model_config(_with_depth(depth))
            text = nt.config_json(cfg)
            self.assertEqual("transition_depth" in json.loads(text)["encoder"], depth > 1)
            self.assertEqual(nt.model_config(text), cfg)
            self.assertEqual(nt.model_config(text)["encoder"]["transition_depth"], depth)
        self.assertNotIn("transition_depth", nt.config_json(_with_depth(1)))
        self.assertIn('"transition_depth":2', nt.config_json(_with_depth(2)))

    def test_refusals(self):
        for bad in (_with_depth(2, cell="lstm", layer_norm=False), _with_depth(2, cell="lstm"), _with_depth(0),
                    _with_depth(9), _with_depth(True), _with_depth(2.0), _with_depth("2")):
            with self.subTest(encoder=bad["encoder"]), self.assertRaises(ValueError):
                nt.model_config(bad)
        nt.model_config(_with_depth(1, cell="lstm"))  # depth 1: any cell

    def test_depth_one_is_the_plain_model(self):
        plain = json.loads(json.dumps(MODEL))
        del plain["encoder"]["transition_depth"]
        torch.manual_seed(5)
        a = nt.Seq2Seq(plain)
        torch.manual_seed(5)
        b = nt.Seq2Seq(_with_depth(1))
        self.assertEqual(nt.config_json(a.config), nt.config_json(b.config))
        self.assertEqual(list(a.state_dict()), list(b.state_dict()))
        torch.testing.assert_close(nt.score(a, SRC, TGT), nt.score(b, SRC, TGT), rtol=0, atol=0)

    def test_model_file_round_trip(self):
        torch.manual_seed(1)
        m = nt.Seq2Seq(_with_depth(3))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.safetensors")
            nt.save_model(p, m, {})
            back, meta = nt.load_model(p)
        self.assertEqual(json.loads(meta["nazar.config"])["encoder"]["transition_depth"], 3)
        self.assertEqual(list(back.state_dict()), list(m.state_dict()))
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v.float(), back.state_dict()[k]), k)
        torch.testing.assert_close(nt.score(back.double(), SRC, TGT), nt.score(m.float().double(), SRC, TGT))
        b = 1  # padding in the batch is invisible: a sentence scores as if alone
        torch.testing.assert_close(nt.score(m, SRC, TGT)[b:b + 1], nt.score(m, SRC[b:b + 1], TGT[b:b + 1]))


if __name__ == "__main__":
    unittest.main()
