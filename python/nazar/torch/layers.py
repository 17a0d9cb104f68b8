"""Layers of nazar.torch (nazar/nn/): embedding, linear, the RNN cells and padding-aware RNNs,
the summed cross-entropy. Needs torch."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


# Layers. nazar's layers use PyTorch's equations, gate order and layouts, so these are the
# torch modules themselves; the RNNs add nazar's (x, lengths) calling convention.


Embedding = nn.Embedding  # weight (V, E); padding_idx row zero, no gradient
Linear = nn.Linear        # weight (out, in), bias (out)
GRUCell = nn.GRUCell      # r, z, n
LSTMCell = nn.LSTMCell    # i, f, g, o


class _Packed:
    """forward(x (B, T, I), lengths (B), hx=None) -> (out (B, T, D*H), h_n).

    The batch is packed by lengths, so each sentence runs exactly as if alone (the reverse
    direction starts at its own last real token); out is zero at padded positions. h_n is
    (L*D, B, H) for GRU and (h_n, c_n) for LSTM, each sentence's state at its last real step.
    """

    def forward(self, x, lengths, hx=None):  # noqa: D102
        lengths = torch.as_tensor(lengths, dtype=torch.int64).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h_n = super().forward(packed, hx)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out, h_n


class GRU(_Packed, nn.GRU):
    """torch.nn.GRU, batch_first, padding-aware; names weight_ih_l{k}[_reverse], ..."""

    def __init__(self, input_size, hidden_size, num_layers=1, bidirectional=False, dropout=0.0, bias=True):
        super().__init__(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=True,
                         dropout=dropout, bidirectional=bidirectional)


class LSTM(_Packed, nn.LSTM):
    """torch.nn.LSTM, batch_first, padding-aware; names weight_ih_l{k}[_reverse], ..."""

    def __init__(self, input_size, hidden_size, num_layers=1, bidirectional=False, dropout=0.0, bias=True):
        super().__init__(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=True,
                         dropout=dropout, bidirectional=bidirectional)


class LayerNormGRUCell(nn.Module):
    """The layer-normalised GRU cell of nazar/nn/gru_cell.h, in explicit ops (torch has none):

        gi = LN(x W_ihᵀ; γ_ih) + b_ih     gh = LN(h W_hhᵀ; γ_hh) + b_hh
        r = σ(gi_r + gh_r)   z = σ(gi_z + gh_z)   n = tanh(gi_n + r ⊙ gh_n)   h' = (1 − z) n + z h
    LN normalises each gate block (r, z, n: H units) of a row on its own (biased variance,
    ε = 1e-5, as F.layer_norm); γ = ln_weight_ih / ln_weight_hh (3H, initialised to 1)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        H, k = hidden_size, hidden_size ** -0.5
        self.hidden_size = H
        self.weight_ih = nn.Parameter(torch.empty(3 * H, input_size).uniform_(-k, k))
        self.weight_hh = nn.Parameter(torch.empty(3 * H, H).uniform_(-k, k))
        self.bias_ih = nn.Parameter(torch.empty(3 * H).uniform_(-k, k))
        self.bias_hh = nn.Parameter(torch.empty(3 * H).uniform_(-k, k))
        self.ln_weight_ih = nn.Parameter(torch.ones(3 * H))
        self.ln_weight_hh = nn.Parameter(torch.ones(3 * H))

    def _ln(self, a, gain, bias):
        H = self.hidden_size
        blocks = nn.functional.layer_norm(a.unflatten(-1, (3, H)), (H,), eps=1e-5)
        return blocks.flatten(-2) * gain + bias

    def forward(self, x, h):
        gi = self._ln(x @ self.weight_ih.t(), self.ln_weight_ih, self.bias_ih)
        gh = self._ln(h @ self.weight_hh.t(), self.ln_weight_hh, self.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h


class LayerNormGRU(nn.Module):
    """Multi-layer, optionally bidirectional GRU of LayerNormGRUCell over a right-padded batch,
    as nazar/nn/rnn.h (and as pack_padded_sequence runs torch's): forward(x (B, T, I),
    lengths (B) or None = all T, hx (L·D, B, H) or None) -> (out (B, T, D·H) zero at padding,
    h_n (L·D, B, H)). A padded position keeps the state, so the reverse direction starts at each
    sentence's own last token. Names as nazar's: weight_ih_l{k}[_reverse], ...,
    ln_weight_ih_l{k}[_reverse], ln_weight_hh_l{k}[_reverse]; dropout between layers (train)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bidirectional=False, dropout=0.0):
        super().__init__()
        self.hidden_size, self.num_layers, self.bidirectional = hidden_size, num_layers, bidirectional
        self.dropout, D = dropout, 2 if bidirectional else 1
        self.cells = []
        for k in range(num_layers):
            for d in range(D):
                cell = LayerNormGRUCell(input_size if k == 0 else D * hidden_size, hidden_size)
                sfx = f"_l{k}" + ("_reverse" if d else "")
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "ln_weight_ih", "ln_weight_hh"):
                    self.register_parameter(name + sfx, getattr(cell, name))
                self.cells.append(cell)

    def forward(self, x, lengths=None, hx=None):
        B, T, D, H = x.shape[0], x.shape[1], 2 if self.bidirectional else 1, self.hidden_size
        lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths).cpu()
        if hx is None:
            hx = x.new_zeros(self.num_layers * D, B, H)
        h_n, inp = [], x
        for k in range(self.num_layers):
            if k > 0 and self.training and self.dropout > 0:
                inp = nn.functional.dropout(inp, self.dropout)
            outs = []
            for d in range(D):
                cell, h = self.cells[k * D + d], hx[k * D + d]
                ys = [None] * T
                for t in (range(T) if d == 0 else reversed(range(T))):
                    real = (t < lengths).to(x.dtype)[:, None]  # (B, 1)
                    h_new = cell(inp[:, t], h)
                    h = real * h_new + (1 - real) * h
                    ys[t] = real * h_new
                outs.append(torch.stack(ys, 1) if T > 0 else x.new_zeros(B, 0, H))
                h_n.append(h)
            inp = torch.cat(outs, -1)
        return inp, torch.stack(h_n)


def xent_loss(logits, targets, ignore_index=-1, label_smoothing=0.0):
    """Σ over non-ignored rows of the (label-smoothed) cross-entropy, as nazar's SoftmaxXent
    (nazar/nn/softmax_xent.h): torch's CrossEntropyLoss(reduction='sum')."""
    return nn.functional.cross_entropy(logits, targets, ignore_index=ignore_index,
                                       label_smoothing=label_smoothing, reduction="sum")


def make_rnn(cell, input_size, hidden_size, layer_norm=False, **kw):
    """cell: "gru" | "lstm"; layer_norm: LayerNormGRU (GRU only)."""
    if layer_norm:
        assert cell == "gru", "layer_norm is implemented for the GRU cell only"
        return LayerNormGRU(input_size, hidden_size, **kw)
    return {"gru": GRU, "lstm": LSTM}[cell](input_size, hidden_size, **kw)
