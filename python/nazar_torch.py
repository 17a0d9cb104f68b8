"""nazar in PyTorch: the same layers, attention and (later) models, with the same parameter names.

The state_dict names follow nazar's weight-naming contract (DESIGN.md §5), so a nazar
.safetensors model loads here with `module.load_state_dict(tensors)` and vice versa:

    Embedding            weight (V, E)                         torch.nn.Embedding
    Linear               weight (out, in), bias (out)          torch.nn.Linear
    xent_loss            summed (label-smoothed) cross-entropy  nazar/nn/softmax_xent.h
    GRUCell / LSTMCell   weight_ih, weight_hh, bias_ih, bias_hh torch.nn.GRUCell / LSTMCell
    GRU / LSTM           weight_ih_l{k}[_reverse], ...          torch.nn.GRU / LSTM, batch_first,
                         forward(x, lengths): packed, so a padded sentence behaves as if alone
    Attention            query.weight (A, H), key.weight (A, C) or (H, C) for general,
                         v.weight (1, A), scale (1), position.weight (P, H),
                         position_v.weight (1, P)              (nazar/attention/attention.h)

Attention follows nazar/attention/attention.h and local.h to the letter (SPEC.md §3-5):
scores over the real positions of each sentence (padding gets weight exactly 0); local-m
centres on min(t, S_b - 1); local-p predicts p_t = S_b * sigmoid(v_p . tanh(W_p q)), centres
on min(floor(p_t + 0.5), S_b - 1), and multiplies the window softmax by
exp(-(i - p_t)^2 / (2 sigma^2)), sigma = D / 2, without renormalising.

Safetensors I/O (load_safetensors / save_safetensors) needs only struct, json and numpy, so
this file works without the `safetensors` package.

Sections: safetensors I/O | layers | attention | (models: encoder, decoders, seq2seq — to come).
Run with Debian's torch: /usr/bin/python3.
"""

import json
import math
import os
import struct
import tempfile

import numpy as np

try:  # the safetensors I/O below works without torch (tools use it to compare files)
    import torch
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
except ImportError:  # pragma: no cover
    torch = None
    nn = None

# ---------------------------------------------------------------------------------------------
# safetensors I/O (https://github.com/huggingface/safetensors): u64 LE header length, JSON header
# {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the data buffer.
# Written exactly as nazar writes it (sorted names, compact JSON with sorted keys, header padded
# with spaces to 8 bytes), so an all-F32 file has the same bytes from either side.

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}
MAX_HEADER = 100 << 20


def _as_numpy(t):
    if torch is not None and isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    a = np.ascontiguousarray(t)
    if a.dtype not in _NAMES:
        raise TypeError(f"unsupported dtype {a.dtype}; use float32, float64, int64 or int32")
    return a.astype(a.dtype.newbyteorder("<"), copy=False)


def serialize_safetensors(tensors, metadata=None):
    """bytes of a safetensors file. tensors: {name: numpy array or torch tensor}."""
    header, chunks, pos = {}, [], 0
    for name in sorted(tensors):
        if not name or name == "__metadata__":
            raise ValueError(f"invalid tensor name {name!r}")
        a = _as_numpy(tensors[name])
        raw = a.tobytes()
        header[name] = {"dtype": _NAMES[a.dtype.newbyteorder("=")], "shape": list(a.shape),
                        "data_offsets": [pos, pos + len(raw)]}
        chunks.append(raw)
        pos += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(chunks)


def save_safetensors(path, tensors, metadata=None):
    """Atomic write: temp file in the same directory, fsync, rename (like nazar's fileio.h)."""
    data = serialize_safetensors(tensors, metadata)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=os.path.basename(path) + ".tmp.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_safetensors(data, source="<memory>"):
    """(tensors {name: numpy array in the file's dtype}, metadata {str: str})."""
    if len(data) < 8:
        raise ValueError(f"{source}: {len(data)} bytes, not a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER or n > len(data) - 8:
        raise ValueError(f"{source}: header length {n} exceeds the file size {len(data)} or the limit")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{source}: duplicate key in header")
        return dict(pairs)

    header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", {}) or {}
    buf = memoryview(data)[8 + n:]
    tensors, pos = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        dt = np.dtype(_DTYPES[e["dtype"]]).newbyteorder("<")
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        if b != pos or end - b != count * dt.itemsize or end > len(buf):
            raise ValueError(f"{source}: bad data_offsets for {name!r}")
        tensors[name] = np.frombuffer(buf[b:end], dtype=dt).reshape(e["shape"]).astype(dt.newbyteorder("="))
        pos = end
    if pos != len(buf):
        raise ValueError(f"{source}: data buffer has {len(buf)} bytes, tensors cover {pos}")
    return tensors, metadata


def load_safetensors(path):
    with open(path, "rb") as f:
        return parse_safetensors(f.read(), path)


def load_state_dict(module, path, prefix="", strict=True):
    """Copies the tensors of a nazar file (names prefix + state_dict names) into module."""
    tensors, _ = load_safetensors(path)
    sd = {k[len(prefix):]: torch.from_numpy(v) for k, v in tensors.items() if k.startswith(prefix)}
    module.load_state_dict(sd, strict=strict)


if torch is not None:
    # -----------------------------------------------------------------------------------------
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

    # -----------------------------------------------------------------------------------------
    # Attention (nazar/attention/attention.h, local.h). One decoder step at a time, keys once
    # per batch, exactly like nazar; the reference scores all S positions and masks, which is
    # correct (nazar computes only the window, for speed).

    SCORES = ("additive", "dot", "general", "concat")
    SCALES = ("none", "sqrt", "learned")
    LOCALS = ("global", "local-m", "local-p")

    class Attention(nn.Module):
        """Attention(score, query_size H, context_size C, attention_size A, scale, local, window D,
        position_size P).  forward(query (B, H), keys, enc_out (B, S, C), lengths (B), t)
        -> (context (B, C), weights (B, S) dense, zero outside the window / padding)."""

        def __init__(self, score="additive", query_size=0, context_size=0, attention_size=0, scale="none",
                     local="global", window=10, position_size=0):
            super().__init__()
            assert score in SCORES and scale in SCALES and local in LOCALS, (score, scale, local)
            H, C, A = query_size, context_size, attention_size
            self.score, self.scale_mode, self.local, self.window = score, scale, local, window
            self.query_size, self.context_size = H, C
            if score in ("additive", "concat"):
                assert A > 0, "additive/concat attention needs attention_size"
                assert scale == "none", "scale applies to dot/general only"
                self.query = nn.Linear(H, A, bias=False)   # W_q (A, H)
                self.key = nn.Linear(C, A, bias=False)     # W_k (A, C)
                self.v = nn.Linear(A, 1, bias=False)       # v_a (1, A)
            elif score == "general":
                self.key = nn.Linear(C, H, bias=False)     # Luong's W_a (H, C)
            elif score == "dot":
                assert H == C, f"dot attention needs query_size == context_size, got {H} and {C}; use general"
            if scale == "learned":
                self.scale = nn.Parameter(torch.full((1,), 1.0 / math.sqrt(C)))
            if local == "local-p":
                P = position_size or H
                self.position = nn.Linear(H, P, bias=False)    # W_p (P, H)
                self.position_v = nn.Linear(P, 1, bias=False)  # v_p (1, P)

        def precompute(self, enc_out):
            """keys (B, S, K): W_k h (additive/concat, general); enc_out itself for dot."""
            return enc_out if self.score == "dot" else self.key(enc_out)

        def _scores(self, query, keys):  # (B, S)
            if self.score in ("additive", "concat"):
                return self.v(torch.tanh(self.query(query)[:, None, :] + keys)).squeeze(-1)
            r = torch.bmm(keys, query[:, :, None]).squeeze(-1)
            if self.scale_mode == "sqrt":
                return r / math.sqrt(self.context_size)
            if self.scale_mode == "learned":
                return r * self.scale
            return r

        def positions(self, query, lengths, t):
            """p_t (B): local-m min(t, S_b - 1) (0 when S_b = 0); local-p S_b sigmoid(v_p tanh(W_p q))."""
            Sb = lengths.to(query.dtype)
            if self.local == "local-m":
                return torch.clamp(torch.minimum(torch.full_like(Sb, float(t)), Sb - 1), min=0)
            return Sb * torch.sigmoid(self.position_v(torch.tanh(self.position(query))).squeeze(-1))

        def windows(self, p, lengths):
            """[(lo, hi)] inclusive per sentence, from p_t (no gradient: the rounding is piecewise constant)."""
            D, out = self.window, []
            for pb, Sb in zip(p.detach().tolist(), lengths.tolist()):
                if Sb == 0:
                    out.append((0, -1))
                    continue
                c = min(int(pb), Sb - 1) if self.local == "local-m" else min(math.floor(pb + 0.5), Sb - 1)
                out.append((max(0, c - D), min(Sb - 1, c + D)))
            return out

        def forward(self, query, keys, enc_out, lengths, t=0):
            B, S, _ = enc_out.shape
            lengths = torch.as_tensor(lengths, dtype=torch.int64)
            e = self._scores(query, keys)
            pos = torch.arange(S)
            if self.local == "global":
                lo, hi, p = torch.zeros(B, dtype=torch.int64), lengths - 1, None
            else:
                p = self.positions(query, lengths, t)
                w = self.windows(p, lengths)
                lo = torch.tensor([a for a, _ in w], dtype=torch.int64)
                hi = torch.tensor([b for _, b in w], dtype=torch.int64)
            inside = (pos[None, :] >= lo[:, None]) & (pos[None, :] <= hi[:, None])  # (B, S)
            # -inf outside the window; a row with no position at all (S_b = 0) gets 0 everywhere,
            # so its softmax stays finite and its weights become exactly 0 below.
            e = e.masked_fill(~inside & inside.any(-1, keepdim=True), float("-inf"))
            alpha = torch.softmax(e, dim=-1).masked_fill(~inside, 0.0)
            if self.local == "local-p":
                sigma = self.window / 2.0
                g = torch.exp(-((pos[None, :].to(p.dtype) - p[:, None]) ** 2) / (2 * sigma * sigma))
                alpha = alpha * g
            context = torch.bmm(alpha[:, None, :], enc_out).squeeze(1)
            return context, alpha

    # -----------------------------------------------------------------------------------------
    # Models (encoder, Bahdanau and Luong decoders, seq2seq) go here, built from the modules
    # above with DESIGN.md §5 names: encoder.embedding, encoder.rnn, bridge, decoder.embedding,
    # decoder.rnn, attention, decoder.combine, generator.
