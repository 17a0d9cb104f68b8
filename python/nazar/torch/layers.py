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


class _LayerNormCell(nn.Module):
    """The parameters of a layer-normalised cell of G gate blocks (nazar/nn/gru_cell.h,
    lstm_cell.h), as torch's cells plus the gains ln_weight_ih / ln_weight_hh (G·H, start at 1),
    and its normalisation: LN(a; γ) + b normalises each gate block (H units) of a row on its own
    (biased variance, ε = 1e-5, as F.layer_norm), then scales by γ and shifts by the bias."""

    G = 0

    def __init__(self, input_size, hidden_size):
        super().__init__()
        G, H, k = self.G, hidden_size, hidden_size ** -0.5
        self.hidden_size = H
        self.weight_ih = nn.Parameter(torch.empty(G * H, input_size).uniform_(-k, k))
        self.weight_hh = nn.Parameter(torch.empty(G * H, H).uniform_(-k, k))
        self.bias_ih = nn.Parameter(torch.empty(G * H).uniform_(-k, k))
        self.bias_hh = nn.Parameter(torch.empty(G * H).uniform_(-k, k))
        self.ln_weight_ih = nn.Parameter(torch.ones(G * H))
        self.ln_weight_hh = nn.Parameter(torch.ones(G * H))

    def _ln(self, a, gain, bias):
        blocks = nn.functional.layer_norm(a.unflatten(-1, (self.G, self.hidden_size)), (self.hidden_size,),
                                          eps=1e-5)
        return blocks.flatten(-2) * gain + bias

    def products(self, x, h):
        """gi = LN(x W_ihᵀ; γ_ih) + b_ih,  gh = LN(h W_hhᵀ; γ_hh) + b_hh."""
        return (self._ln(x @ self.weight_ih.t(), self.ln_weight_ih, self.bias_ih),
                self._ln(h @ self.weight_hh.t(), self.ln_weight_hh, self.bias_hh))


class LayerNormGRUCell(_LayerNormCell):
    """The layer-normalised GRU cell of nazar/nn/gru_cell.h, in explicit ops (torch has none):

        gi = LN(x W_ihᵀ; γ_ih) + b_ih     gh = LN(h W_hhᵀ; γ_hh) + b_hh
        r = σ(gi_r + gh_r)   z = σ(gi_z + gh_z)   n = tanh(gi_n + r ⊙ gh_n)   h' = (1 − z) n + z h
    forward(x, h) -> h'."""

    G = 3

    def forward(self, x, h):
        gi, gh = self.products(x, h)
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = gh.chunk(3, -1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h


class LayerNormLSTMCell(_LayerNormCell):
    """The layer-normalised LSTM cell of nazar/nn/lstm_cell.h (gates i, f, g, o; c' is not
    normalised):  a = LN(x W_ihᵀ; γ_ih) + b_ih + LN(h W_hhᵀ; γ_hh) + b_hh,
    c' = σ(a_f) c + σ(a_i) tanh(a_g),  h' = σ(a_o) tanh(c').  forward(x, (h, c)) -> (h', c')."""

    G = 4

    def forward(self, x, hc):
        h, c = hc
        gi, gh = self.products(x, h)
        a_i, a_f, a_g, a_o = (gi + gh).chunk(4, -1)
        c_new = torch.sigmoid(a_f) * c + torch.sigmoid(a_i) * torch.tanh(a_g)
        return torch.sigmoid(a_o) * torch.tanh(c_new), c_new


class GRUTransition(nn.Module):
    """One transition cell of a deep-transition GRU layer (nazar/nn/transition.h; Barone et al.
    2017): a GRU step that reads only the state, i.e. torch's GRUCell with a zero-width input,
    bias_ih standing where W_ih x + b_ih would:

        g = h W_hhᵀ + b_hh   (layer_norm: LN(h W_hhᵀ; γ_hh) + b_hh, per gate block)
        r = σ(b_ir + g_r)   z = σ(b_iz + g_z)   n = tanh(b_in + r ⊙ g_n)   h' = (1 − z) n + z h
    weight_hh (3H, H), bias_ih, bias_hh (3H) ~ U(−1/sqrt(H), 1/sqrt(H)), ln_weight_hh (3H) = 1.
    forward(h) -> h'."""

    def __init__(self, hidden_size, layer_norm=False):
        super().__init__()
        H, k = hidden_size, hidden_size ** -0.5
        self.hidden_size = H
        self.weight_hh = nn.Parameter(torch.empty(3 * H, H).uniform_(-k, k))
        self.bias_ih = nn.Parameter(torch.empty(3 * H).uniform_(-k, k))
        self.bias_hh = nn.Parameter(torch.empty(3 * H).uniform_(-k, k))
        if layer_norm:
            self.ln_weight_hh = nn.Parameter(torch.ones(3 * H))

    def forward(self, h):
        a = h @ self.weight_hh.t()
        if hasattr(self, "ln_weight_hh"):
            a = nn.functional.layer_norm(a.unflatten(-1, (3, self.hidden_size)), (self.hidden_size,),
                                         eps=1e-5).flatten(-2) * self.ln_weight_hh
        g_r, g_z, g_n = (a + self.bias_hh).chunk(3, -1)
        i_r, i_z, i_n = self.bias_ih.chunk(3, -1)
        r, z = torch.sigmoid(i_r + g_r), torch.sigmoid(i_z + g_z)
        n = torch.tanh(i_n + r * g_n)
        return (1 - z) * n + z * h


class _ExplicitRNN(nn.Module):
    """Multi-layer, optionally bidirectional RNN of one cell per layer-direction over a
    right-padded batch, step by step in explicit ops, as nazar/nn/rnn.h (and as
    pack_padded_sequence runs torch's): forward(x (B, T, I), lengths (B) or None = all T, hx or
    None) -> (out (B, T, D·H) zero at padding, h_n), hx / h_n (L·D, B, H) for the GRU and pairs of
    them (h, c) for the LSTM, as torch's. A padded position keeps the state, so the reverse
    direction starts at each sentence's own last token. Names as nazar's: weight_ih_l{k}[_reverse],
    ... (and ln_weight_ih_l{k}[_reverse], ln_weight_hh_l{k}[...] for layer-normalised cells);
    dropout between layers (train mode). residual: layer k > 0 outputs its states plus the input
    it read (after the dropout), y_k = h_k + x_k; h_n stays the cells' states.
    transition_depth D > 1 (GRU only, deep transition): each step runs the cell, then D − 1
    GRUTransition cells j = 1 … D − 1 on its new state; the last one's state is the output and the
    state the next step starts from (a padded position skips the whole chain). Their tensors
    follow the cell's: weight_hh_l{k}[_reverse]_t{j}, bias_ih_…_t{j}, bias_hh_…_t{j} (and
    ln_weight_hh_…_t{j} with layer-normalised cells)."""

    Cell, LSTM, LAYER_NORM = None, False, False
    NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "ln_weight_ih", "ln_weight_hh")

    def __init__(self, input_size, hidden_size, num_layers=1, bidirectional=False, dropout=0.0, residual=False,
                 transition_depth=1):
        super().__init__()
        if transition_depth < 1 or (transition_depth > 1 and self.LSTM):
            raise ValueError(f"transition_depth must be >= 1 (> 1 for GRU cells only), got {transition_depth}")
        self.hidden_size, self.num_layers, self.bidirectional = hidden_size, num_layers, bidirectional
        self.dropout, self.residual, D = dropout, residual, 2 if bidirectional else 1
        self.transition_depth = transition_depth
        self.cells, self.transitions = [], []  # [L·D], [L·D][D_t − 1]
        for k in range(num_layers):
            for d in range(D):
                cell = self.Cell(input_size if k == 0 else D * hidden_size, hidden_size)
                sfx = f"_l{k}" + ("_reverse" if d else "")
                for name in self.NAMES:
                    if hasattr(cell, name):
                        self.register_parameter(name + sfx, getattr(cell, name))
                self.cells.append(cell)
                self.transitions.append([self._transition(hidden_size, f"{sfx}_t{j}")
                                         for j in range(1, transition_depth)])

    def _transition(self, hidden_size, sfx):
        tr = GRUTransition(hidden_size, layer_norm=self.LAYER_NORM)
        for name, p in tr.named_parameters():
            self.register_parameter(name + sfx, p)
        return tr

    def forward(self, x, lengths=None, hx=None):
        B, T, D, H = x.shape[0], x.shape[1], 2 if self.bidirectional else 1, self.hidden_size
        lstm = self.LSTM
        lengths = torch.full((B,), T) if lengths is None else torch.as_tensor(lengths).cpu()
        if hx is None:
            zeros = x.new_zeros(self.num_layers * D, B, H)
            hx = (zeros, zeros) if lstm else zeros
        states = list(zip(*hx)) if lstm else list(hx)  # [L·D] h or (h, c)
        finals, inp = [], x
        for k in range(self.num_layers):
            if k > 0 and self.training and self.dropout > 0:
                inp = nn.functional.dropout(inp, self.dropout)
            outs = []
            for d in range(D):
                cell, s = self.cells[k * D + d], states[k * D + d]
                ys = [None] * T
                for t in (range(T) if d == 0 else reversed(range(T))):
                    real = (t < lengths).to(x.dtype)[:, None]  # (B, 1)
                    new = cell(inp[:, t], s)
                    for tr in self.transitions[k * D + d]:  # GRU only
                        new = tr(new)
                    keep = (lambda a, b: real * a + (1 - real) * b)  # noqa: E731
                    s = tuple(map(keep, new, s)) if lstm else keep(new, s)
                    ys[t] = real * (new[0] if lstm else new)
                outs.append(torch.stack(ys, 1) if T > 0 else x.new_zeros(B, 0, H))
                finals.append(s)
            out = torch.cat(outs, -1)
            inp = out + inp if self.residual and k > 0 else out
        if lstm:
            return inp, (torch.stack([h for h, _ in finals]), torch.stack([c for _, c in finals]))
        return inp, torch.stack(finals)


class LayerNormGRU(_ExplicitRNN):
    """_ExplicitRNN of LayerNormGRUCell (and layer-normalised transitions)."""
    Cell, LAYER_NORM = LayerNormGRUCell, True


class LayerNormLSTM(_ExplicitRNN):
    """_ExplicitRNN of LayerNormLSTMCell."""
    Cell, LSTM = LayerNormLSTMCell, True


class ExplicitGRU(_ExplicitRNN):
    """_ExplicitRNN of torch's GRUCell (for what nn.GRU cannot do: residual connections, deep
    transition)."""
    Cell = nn.GRUCell


class ExplicitLSTM(_ExplicitRNN):
    """_ExplicitRNN of torch's LSTMCell."""
    Cell, LSTM = nn.LSTMCell, True


def xent_loss(logits, targets, ignore_index=-1, label_smoothing=0.0):
    """Σ over non-ignored rows of the (label-smoothed) cross-entropy, as nazar's SoftmaxXent
    (nazar/nn/softmax_xent.h): torch's CrossEntropyLoss(reduction='sum')."""
    return nn.functional.cross_entropy(logits, targets, ignore_index=ignore_index,
                                       label_smoothing=label_smoothing, reduction="sum")


def make_rnn(cell, input_size, hidden_size, layer_norm=False, residual=False, transition_depth=1, **kw):
    """cell: "gru" | "lstm"; layer_norm: LayerNormGRU / LayerNormLSTM (explicit ops); residual
    (layer k > 0 adds its input) and transition_depth > 1 (deep transition, GRU only): explicit
    ops too, of the layer-normalised or torch's cells."""
    if transition_depth != 1 and cell != "gru":
        raise ValueError(f"transition_depth {transition_depth} (deep transition) needs GRU cells, got {cell}")
    extra = {"residual": residual, "transition_depth": transition_depth}
    if layer_norm:
        return {"gru": LayerNormGRU, "lstm": LayerNormLSTM}[cell](input_size, hidden_size, **extra, **kw)
    if residual or transition_depth != 1:
        return {"gru": ExplicitGRU, "lstm": ExplicitLSTM}[cell](input_size, hidden_size, **extra, **kw)
    return {"gru": GRU, "lstm": LSTM}[cell](input_size, hidden_size, **kw)
