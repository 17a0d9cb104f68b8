#!/usr/bin/python3
"""Self-checks of the PyTorch reference's layers that nn.GRU / nn.LSTM and the attention module do
not cover (python/nazar/torch): the explicit residual RNN against torch's own layers composed by
hand, and monotonic attention's expected alignment (Raffel et al. 2017) in its recursive and
parallel forms.

    /usr/bin/python3 tests/parity/test_nazar_torch_layers.py   (CTest: parity.nazar_torch_layers)
Exit code 77 (skipped) when torch or numpy is missing.
"""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import torch
    import nazar_torch as nt
except ImportError as e:
    print(f"nazar_torch layers self-test: {e}; skipped")
    sys.exit(77)

torch.set_default_dtype(torch.float64)


class ResidualRNN(unittest.TestCase):
    """The explicit residual RNN against torch's own nn.GRU / nn.LSTM layers run one by one with
    the same weights: layer k > 0 outputs its states plus its input, h_n are the cells' states."""

    def check(self, cell):
        torch.manual_seed(3)
        rnn = nt.make_rnn(cell, 3, 4, num_layers=3, bidirectional=True, residual=True).double().eval()
        layers = [{"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[cell](3 if k == 0 else 8, 4, batch_first=True,
                                                                      bidirectional=True).double()
                  for k in range(3)]
        named = dict(rnn.named_parameters())
        for k, layer in enumerate(layers):
            with torch.no_grad():
                for name, p in layer.named_parameters():  # weight_ih_l0[_reverse] -> ..._l{k}
                    p.copy_(named[name.replace("_l0", f"_l{k}")])
        x = torch.randn(2, 5, 3, dtype=torch.float64)
        out, h_n = rnn(x, [5, 5])
        inp, finals = x, []
        for k, layer in enumerate(layers):
            y, f = layer(inp)
            finals.append(f[0] if cell == "lstm" else f)
            inp = y + inp if k > 0 else y
        torch.testing.assert_close(out, inp)
        torch.testing.assert_close(h_n[0] if cell == "lstm" else h_n, torch.cat(finals))

    def test_gru(self):
        self.check("gru")

    def test_lstm(self):
        self.check("lstm")


class MonotonicAlignment(unittest.TestCase):
    """Raffel et al.'s expected alignment: the recursive and the parallel forms agree (values and
    autograd gradients), on a step worked by hand, with p of exactly 0 and 1, and on long rows of
    small p; the hard limit (p in {0, 1}) is one-hot at the first p = 1 from the previous stop."""

    def test_by_hand(self):
        p = torch.tensor([[0.5, 0.25, 1.0]], dtype=torch.float64)
        prev = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
        for f in (nt.monotonic_alignment, nt.monotonic_alignment_parallel):
            torch.testing.assert_close(f(p, prev), torch.tensor([[0.5, 0.125, 0.375]], dtype=torch.float64))

    def test_forms_agree(self):
        g = torch.Generator().manual_seed(7)
        for S in (1, 6, 50):
            p = (0.02 + 0.96 * torch.rand(3, S, generator=g, dtype=torch.float64)).requires_grad_()
            prev = torch.rand(3, S, generator=g, dtype=torch.float64)
            prev = (prev / prev.sum(-1, keepdim=True)).requires_grad_()
            R = torch.randn(3, S, generator=g, dtype=torch.float64)
            a, b = nt.monotonic_alignment(p, prev), nt.monotonic_alignment_parallel(p, prev)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
            ga = torch.autograd.grad((a * R).sum(), (p, prev))
            gb = torch.autograd.grad((b * R).sum(), (p, prev))
            for x, y in zip(ga, gb):
                torch.testing.assert_close(x, y, rtol=0, atol=1e-10)
        p = torch.tensor([[0.0, 1.0, 0.3, 1.0, 0.0]], dtype=torch.float64)
        prev = torch.tensor([[0.2, 0.1, 0.3, 0.1, 0.3]], dtype=torch.float64)
        torch.testing.assert_close(nt.monotonic_alignment(p, prev), nt.monotonic_alignment_parallel(p, prev),
                                   rtol=0, atol=1e-13)
        p = 0.01 * torch.rand(1, 200, generator=g, dtype=torch.float64)  # Π (1 − p) ≈ e^-1 .. e^-2
        prev = torch.zeros(1, 200, dtype=torch.float64)
        prev[0, 0] = 1
        torch.testing.assert_close(nt.monotonic_alignment(p, prev), nt.monotonic_alignment_parallel(p, prev),
                                   rtol=1e-12, atol=0)

    def test_hard_limit(self):
        p = torch.tensor([[0.0, 1.0, 0.0, 1.0]], dtype=torch.float64)
        for start, stop in ((0, 1), (2, 3), (1, 1)):
            prev = torch.zeros(1, 4, dtype=torch.float64)
            prev[0, start] = 1
            want = torch.zeros(1, 4, dtype=torch.float64)
            want[0, stop] = 1
            torch.testing.assert_close(nt.monotonic_alignment(p, prev), want)


if __name__ == "__main__":
    unittest.main()
