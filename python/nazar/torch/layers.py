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


def xent_loss(logits, targets, ignore_index=-1, label_smoothing=0.0):
    """Σ over non-ignored rows of the (label-smoothed) cross-entropy, as nazar's SoftmaxXent
    (nazar/nn/softmax_xent.h): torch's CrossEntropyLoss(reduction='sum')."""
    return nn.functional.cross_entropy(logits, targets, ignore_index=ignore_index,
                                       label_smoothing=label_smoothing, reduction="sum")


def make_rnn(cell, input_size, hidden_size, **kw):
    """cell: "gru" | "lstm"."""
    return {"gru": GRU, "lstm": LSTM}[cell](input_size, hidden_size, **kw)
