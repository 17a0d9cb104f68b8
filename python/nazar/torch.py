"""nazar in PyTorch (``nazar.torch``): the same layers, attention and models, with the same
parameter names. Pure Python over torch and numpy; it does not need nazar's extension, and
python/nazar_torch.py still imports it as ``nazar_torch`` from a source checkout (tests, tools).

The state_dict names follow nazar's weight-naming contract (docs/design.md §5), so a nazar
.safetensors model loads here and vice versa (docs/pytorch.md):

    model, meta = load_model("model.safetensors")    # a Seq2Seq built from meta["nazar.config"]
    score(model, src_ids, tgt_ids)                   # log p(y | x) per sentence (nazar score)
    greedy(model, src_ids); beam_search(model, src_ids, beam_size=5)
    save_model("out.safetensors", model, meta)       # a file nazar reads

    Embedding            weight (V, E)                         torch.nn.Embedding
    Linear               weight (out, in), bias (out)          torch.nn.Linear
    xent_loss            summed (label-smoothed) cross-entropy  nazar/nn/softmax_xent.h
    GRUCell / LSTMCell   weight_ih, weight_hh, bias_ih, bias_hh torch.nn.GRUCell / LSTMCell
    GRU / LSTM           weight_ih_l{k}[_reverse], ...          torch.nn.GRU / LSTM, batch_first,
                         forward(x, lengths): packed, so a padded sentence behaves as if alone
    Attention            query.weight (A, H), key.weight (A, C) or (H, C) for general,
                         v.weight (1, A), scale (1), position.weight (P, H),
                         position_v.weight (1, P)              (nazar/attention/attention.h)
    Seq2Seq              encoder.*, bridge.*, decoder.*, attention.*, generator.*
                         (nazar/models/seq2seq.h, decoder.h, encoder.h, config.h)

Attention follows nazar/attention/attention.h and local.h to the letter (docs/spec.md §3-5):
scores over the real positions of each sentence (padding gets weight exactly 0); local-m
centres on min(t, S_b - 1); local-p predicts p_t = S_b * sigmoid(v_p . tanh(W_p q)), centres
on min(floor(p_t + 0.5), S_b - 1), and multiplies the window softmax by
exp(-(i - p_t)^2 / (2 sigma^2)), sigma = D / 2, without renormalising.

Safetensors I/O (load_safetensors / save_safetensors) needs only struct, json and numpy, so
this file works without the `safetensors` package.

Sections: safetensors I/O | layers | attention | models (encoder, decoder, seq2seq) |
configuration | model files | loss and scores | decoding.
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

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "I8": np.int8}
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
        if e["dtype"] == "BF16":  # quantized model files: widened to float32 here (exact)
            b, end = e["data_offsets"]
            count = int(np.prod(e["shape"], dtype=np.int64))
            if b != pos or end - b != count * 2 or end > len(buf):
                raise ValueError(f"{source}: bad data_offsets for {name!r}")
            bits = np.frombuffer(buf[b:end], dtype="<u2").astype(np.uint32) << 16
            tensors[name] = bits.view(np.float32).reshape(e["shape"])
            pos = end
            continue
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


def dequantize(tensors, metadata, source="<memory>"):
    """The fp32 tensors of a quantized model file (nazar quantize; README "Formats"): int8
    matrices times their per-row "<name>.scale" (w = w_q * s_row, in float32 as nazar does), the
    ".scale" tensors dropped; bf16 ones are float32 already (parse_safetensors). Files without
    "nazar.precision" come back unchanged."""
    precision = metadata.get("nazar.precision")
    if precision is None:
        return tensors
    if precision not in ("int8", "bf16"):
        raise ValueError(f"{source}: nazar.precision must be int8 or bf16, got {precision!r}")
    out = {}
    for name, t in tensors.items():
        if name.endswith(".scale") and name[:-len(".scale")] in tensors \
                and tensors[name[:-len(".scale")]].dtype == np.int8:
            continue
        if t.dtype == np.int8:
            if precision != "int8" or name + ".scale" not in tensors:
                raise ValueError(f"{source}: int8 tensor {name!r} without {name + '.scale'!r}")
            scale = tensors[name + ".scale"].astype(np.float32)
            out[name] = t.astype(np.float32) * scale[:, None]
        else:
            out[name] = t
    return out


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
        position_size P, coverage).  forward(query (B, H), keys, enc_out (B, S, C), lengths (B), t,
        mask, cov) -> (context (B, C), weights (B, S) dense, zero outside the window / padding).
        coverage (additive/concat): cov (B, S) = Σ of the earlier steps' weights enters the score,
        e_i = v · tanh(W_q q + W_k h_i + w_c cov_i), w_c "coverage.weight" (1, A), 0 at init."""

        def __init__(self, score="additive", query_size=0, context_size=0, attention_size=0, scale="none",
                     local="global", window=10, position_size=0, coverage=False):
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
            self.has_coverage = bool(coverage)
            if coverage:
                assert score in ("additive", "concat"), "coverage needs an additive or concat score"
                self.coverage = nn.Module()
                self.coverage.weight = nn.Parameter(torch.zeros(1, A))  # w_c (1, A), as nazar: 0

        def precompute(self, enc_out):
            """keys (B, S, K): W_k h (additive/concat, general); enc_out itself for dot."""
            return enc_out if self.score == "dot" else self.key(enc_out)

        def _scores(self, query, keys, cov=None):  # (B, S)
            if self.score in ("additive", "concat"):
                pre = self.query(query)[:, None, :] + keys
                if self.has_coverage:  # + w_c cov_i
                    pre = pre + cov[:, :, None] * self.coverage.weight[0]
                return self.v(torch.tanh(pre)).squeeze(-1)
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

        def forward(self, query, keys, enc_out, lengths, t=0, mask=None, cov=None):
            """-> (context (B, C), weights α (B, S)). mask (B, S): a dropout mask on α by source
            position (train mode): the context sums α ⊙ mask, not renormalised; α is returned.
            cov (B, S): cov_t (coverage attention; required then)."""
            B, S, _ = enc_out.shape
            lengths = torch.as_tensor(lengths, dtype=torch.int64)
            assert cov is not None or not self.has_coverage, "coverage attention needs cov"
            e = self._scores(query, keys, cov)
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
            summed = alpha if mask is None else alpha * mask
            context = torch.bmm(summed[:, None, :], enc_out).squeeze(1)
            return context, alpha

    # -----------------------------------------------------------------------------------------
    # Models (nazar/models/: config.h, encoder.h, decoder.h, seq2seq.h, model_file.h), with the
    # docs/design.md §5 state_dict names: encoder.embedding, encoder.rnn, bridge, decoder.embedding,
    # decoder.rnn, decoder.combine, decoder.deep_output.{state,prev,context}, attention, generator.
    # Written to be read: one decoder step is one function, the same for training and decoding.

    def _ids(x):
        return torch.as_tensor(x, dtype=torch.int64)

    class Encoder(nn.Module):
        """x_i = Emb_src[src_i] -> GRU/LSTM (padding-aware). forward(src (B, S), lengths (B)) ->
        (enc_out (B, S, C), h_n (L·dirs, B, H_enc)): enc_out is 0 at padding; h_n as torch's (for
        LSTM the hidden part only: the bridge never reads c_n). An empty sentence (S_b = 0) gives
        zero outputs and a zero final state, as nazar's RNN does."""

        def __init__(self, cfg):
            super().__init__()
            e = cfg["encoder"]
            self.embedding = nn.Embedding(cfg["src_vocab_size"], cfg["embedding_size"])  # no padding_idx
            self.rnn = make_rnn(e["cell"], cfg["embedding_size"], e["hidden_size"], num_layers=e["num_layers"],
                                bidirectional=e["bidirectional"], dropout=e["dropout"])

        def forward(self, src, lengths, emb_mask=None):
            """emb_mask (B, S, E): a dropout mask (0 or 1/(1−p)) on the embeddings, or None."""
            lengths = _ids(lengths).cpu()
            if src.shape[1] == 0:  # no source positions at all: zero states
                e, w = self.rnn, self.embedding.weight
                dirs = 2 if e.bidirectional else 1
                return (w.new_zeros(src.shape[0], 0, dirs * e.hidden_size),
                        w.new_zeros(e.num_layers * dirs, src.shape[0], e.hidden_size))
            empty = lengths == 0
            x = self.embedding(src)
            if emb_mask is not None:
                x = x * emb_mask
            out, h_n = self.rnn(x, lengths.clamp(min=1))  # packing needs length >= 1
            if isinstance(h_n, tuple):
                h_n = h_n[0]
            if bool(empty.any()):
                out = out.masked_fill(empty[:, None, None], 0.0)
                h_n = h_n.masked_fill(empty[None, :, None], 0.0)
            return out, h_n

    class DeepOutput(nn.Module):
        """Bahdanau's deep output o_t = tanh(L_s s_t + L_y Emb(y_{t-1}) + L_c c_t), no biases."""

        def __init__(self, H, E, C, D):
            super().__init__()
            self.state = nn.Linear(H, D, bias=False)    # L_s (D, H)
            self.prev = nn.Linear(E, D, bias=False)     # L_y (D, E)
            self.context = nn.Linear(C, D, bias=False)  # L_c (D, C)

        def forward(self, s, e, c):
            return torch.tanh(self.state(s) + self.prev(e) + self.context(c))

    class Decoder(nn.Module):
        """The Bahdanau / Luong decoder of nazar/models/decoder.h, one step at a time:

          before (Bahdanau timing):  c_t = attn(query = s_{t-1}, top layer), then the RNN step
          RNN input x_t:             [e_t ; c_t] (bahdanau) | [e_t ; s̃_{t-1}] (luong + input feeding,
                                     s̃_{-1} = 0) | e_t (luong),   e_t = Emb_tgt(y_{t-1})
          after (Luong timing):      c_t = attn(query = s_t, top layer), after the RNN step
          output o_t:                luong: s̃_t = tanh(W_c [s_t ; c_t]);  bahdanau: s_t, or with deep
                                     output tanh(L_s s_t + L_y e_t + L_c c_t)
        Stacked layers are torch's nn.GRU/LSTM (num_layers = L; layer l > 0 reads layer l−1's
        output, dropout in between in train mode), so the names are rnn.weight_ih_l{k}, ...
        """

        def __init__(self, cfg):
            super().__init__()
            d = cfg["decoder"]
            E, H, C = cfg["embedding_size"], d["hidden_size"], encoder_output_size(cfg)
            self.kind, self.cell, self.E, self.H, self.C, self.L = d["kind"], d["cell"], E, H, C, d["num_layers"]
            self.before = effective_timing(cfg) == "before"
            self.feeding = d["kind"] == "luong" and d["input_feeding"]
            F = C if d["kind"] == "bahdanau" else (H if self.feeding else 0)
            self.embedding = nn.Embedding(cfg["tgt_vocab_size"], E)
            rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[d["cell"]]
            self.rnn = rnn(E + F, H, num_layers=self.L, batch_first=True, dropout=d["dropout"])
            if d["kind"] == "luong":
                self.combine = nn.Linear(H + C, H, bias=False)  # W_c (H, H + C)
            self.deep_output = DeepOutput(H, E, C, generator_input_size(cfg)) if d["deep_output"] else None

        def step(self, t, prev, enc, state, attention, emb_mask=None, att_mask=None):
            """prev (N) ids y_{t-1}; enc: Encoded; state: State before the step; emb_mask (N, E) a
            dropout mask on e_t, att_mask (N, S) one on the attention weights, or None.
            -> (o_t (N, d_out), attention weights (N, S), State after the step)."""
            e = self.embedding(prev)
            if emb_mask is not None:
                e = e * emb_mask
            if self.before:
                ctx, alpha = attention(state.h[-1], enc.keys, enc.enc_out, enc.lengths, t, att_mask, state.cov)
            x = [e]
            if self.kind == "bahdanau":
                x.append(ctx)
            elif self.feeding:
                x.append(state.feed)
            x = torch.cat(x, -1)[:, None, :]  # (N, 1, E + F)
            if self.cell == "lstm":
                _, (h, c) = self.rnn(x, (state.h, state.c))
            else:
                _, h = self.rnn(x, state.h)
                c = None
            s = h[-1]
            if not self.before:
                ctx, alpha = attention(s, enc.keys, enc.enc_out, enc.lengths, t, att_mask, state.cov)
            if self.kind == "luong":
                o = torch.tanh(self.combine(torch.cat([s, ctx], -1)))
            elif self.deep_output is not None:
                o = self.deep_output(s, e, ctx)
            else:
                o = s
            self.copy_inputs = (ctx, s, e)  # what a copy gate reads: [c_t ; s_t ; e_t]
            cov = None if state.cov is None else state.cov + alpha  # cov_{t+1} = cov_t + α_t
            return o, alpha, State(t + 1, h, c, o if self.feeding else None, cov)

    class Encoded:
        """What the decoder reads, once per batch: enc_out (N, S, C), keys (attention.precompute),
        lengths (N), h0 (L, N, H) the bridge's initial state."""

        def __init__(self, enc_out, keys, lengths, h0):
            self.enc_out, self.keys, self.lengths, self.h0 = enc_out, keys, lengths, h0

        def select(self, rows):
            """Rows `rows` (repeats allowed): expands sentences to beams."""
            rows = _ids(rows)
            return Encoded(self.enc_out[rows], self.keys[rows], self.lengths[rows], self.h0[:, rows])

    class State:
        """Decoder state between steps: t (steps taken), h (L, N, H), c (L, N, H) for LSTM else None,
        feed (N, H) = s̃_{t-1} with input feeding else None, cov (N, S) = cov_t with coverage else
        None."""

        def __init__(self, t, h, c=None, feed=None, cov=None):
            self.t, self.h, self.c, self.feed, self.cov = t, h, c, feed, cov

        def select(self, rows):
            rows = _ids(rows)
            return State(self.t, self.h[:, rows], None if self.c is None else self.c[:, rows],
                         None if self.feed is None else self.feed[rows],
                         None if self.cov is None else self.cov[rows])

    class Batch:
        """A right-padded batch as nazar's Batch (nazar/data/batcher.h, batch_from_ids): src (B, S),
        src_lengths (B), tgt_in = [<s>, y...] (B, T), tgt_out = [y..., </s>] (B, T), T = max |y| + 1."""

        def __init__(self, src, src_lengths, tgt_in=None, tgt_out=None):
            self.src, self.src_lengths = _ids(src), _ids(src_lengths)
            self.tgt_in = None if tgt_in is None else _ids(tgt_in)
            self.tgt_out = None if tgt_out is None else _ids(tgt_out)

    def make_batch(src, tgt=None, special_ids=None):
        """src, tgt: lists of id lists (no <s> / </s>). Padding uses special_ids["pad"]."""
        sp = dict(DEFAULT_CONFIG["special_ids"], **(special_ids or {}))
        B, S = len(src), max([len(s) for s in src] + [0])
        xs = torch.full((B, S), sp["pad"], dtype=torch.int64)
        for b, s in enumerate(src):
            xs[b, :len(s)] = _ids(s)
        if tgt is None:
            return Batch(xs, [len(s) for s in src])
        assert len(tgt) == B, f"{B} sources but {len(tgt)} targets"
        T = max(len(y) for y in tgt) + 1
        y_in = torch.full((B, T), sp["pad"], dtype=torch.int64)
        y_out = torch.full((B, T), sp["pad"], dtype=torch.int64)
        for b, y in enumerate(tgt):
            y_in[b, 0] = sp["bos"]
            y_in[b, 1:len(y) + 1] = _ids(y)
            y_out[b, :len(y)] = _ids(y)
            y_out[b, len(y)] = sp["eos"]
        return Batch(xs, [len(s) for s in src], y_in, y_out)

    class Seq2Seq(nn.Module):
        """The whole model of nazar/models/seq2seq.h, built from a nazar config (dict or JSON string,
        the "nazar.config" metadata of a model file; missing keys take config.h's defaults).

            enc_out, h_n = encoder(src)                s_0 = bridge(enc_out, h_n)
            o_t, α_t     = decoder.step(y_{t-1}, ...)  p(y_t | y_<t, x) = softmax(generator(o_t))
        With tie_target_embeddings, generator.weight IS decoder.embedding.weight (state_dict holds
        both names, as nazar's model file does)."""

        def __init__(self, config):
            super().__init__()
            cfg = model_config(config)
            self.config = cfg
            self.encoder = Encoder(cfg)
            self.bridge_kind = effective_bridge(cfg)
            if self.bridge_kind != "zero":
                e = cfg["encoder"]
                n_in = e["hidden_size"] * (1 if self.bridge_kind == "backward-first" else
                                           (2 if e["bidirectional"] else 1))
                L, H = cfg["decoder"]["num_layers"], cfg["decoder"]["hidden_size"]
                self.bridge = nn.Linear(n_in, L * H)  # W_init (L·H, in), b_init
            else:
                self.bridge = None
            self.decoder = Decoder(cfg)
            a = attention_config(cfg)
            self.attention = Attention(**a)
            self.generator = nn.Linear(generator_input_size(cfg), cfg["tgt_vocab_size"])
            if cfg["tie_target_embeddings"]:
                self.generator.weight = self.decoder.embedding.weight
            if cfg["copy_attention"]:  # copy.gate.weight (1, C + H + E), copy.gate.bias (1)
                self.copy = nn.Module()
                d = cfg["decoder"]
                self.copy.gate = nn.Linear(encoder_output_size(cfg) + d["hidden_size"] + cfg["embedding_size"], 1)

        # ---- the pieces, as nazar's step API (encode / init_state / step) ----

        def encode(self, src, lengths, masks=None):
            """src (N, S) ids, lengths (N) -> Encoded (encoder, keys once, bridge's s_0). masks:
            see forward (src_emb, enc_out)."""
            src, lengths = _ids(src), _ids(lengths)
            masks = masks or {}
            enc_out, h_n = self.encoder(src, lengths, masks.get("src_emb"))
            if masks.get("enc_out") is not None:  # H̃ = H ⊙ m: attention and the bridge read it
                enc_out = enc_out * masks["enc_out"]
            return Encoded(enc_out, self.attention.precompute(enc_out), lengths, self._bridge(enc_out, h_n, lengths))

        def _bridge(self, enc_out, h_n, lengths):
            """s_0 (L, N, H) = tanh(W_init u + b_init) split by layer; u per config.h's bridge."""
            N = enc_out.shape[0]
            L, H = self.decoder.L, self.decoder.H
            if self.bridge is None:
                return enc_out.new_zeros(L, N, H)
            dirs = 2 if self.config["encoder"]["bidirectional"] else 1
            top = (self.config["encoder"]["num_layers"] - 1) * dirs  # h_n index of the top forward direction
            if self.bridge_kind == "backward-first":
                u = h_n[top + 1]                          # backward state at position 0
            elif self.bridge_kind == "last":
                u = torch.cat([h_n[top + d] for d in range(dirs)], -1)
            else:  # mean over the real positions (enc_out is 0 at padding; S_b = 0 gives 0)
                u = enc_out.sum(1) / lengths.clamp(min=1).to(enc_out.dtype)[:, None]
            return torch.tanh(self.bridge(u)).view(N, L, H).transpose(0, 1).contiguous()

        def init_state(self, enc):
            h = enc.h0
            N, H = h.shape[1], self.decoder.H
            c = torch.zeros_like(h) if self.decoder.cell == "lstm" else None
            feed = h.new_zeros(N, H) if self.decoder.feeding else None
            cov = h.new_zeros(N, enc.enc_out.shape[1]) if self.attention.has_coverage else None
            return State(0, h, c, feed, cov)

        def step(self, prev, enc, state):
            """prev (N) ids -> (log_probs (N, V), attention (N, S), next State)."""
            o, alpha, state = self.decoder.step(state.t, _ids(prev), enc, state, self.attention)
            return torch.log_softmax(self.generator(o), -1), alpha, state

        # ---- teacher forcing ----

        def forward(self, src, src_lengths, tgt_in, sampling_prob=0.0, generator=None, margins=None, masks=None):
            """Teacher-forced logits (B, T, V) and attention weights (B, T, S). Dropout (between
            stacked RNN layers) and scheduled sampling act in train mode only: with probability
            sampling_prob, for t > 0, a row feeds the argmax of its own step t−1 prediction instead
            of tgt_in[:, t] (no gradient through the choice; draws from `generator`, a
            torch.Generator, one per row per step), as Seq2Seq::train_step. margins: a list that
            receives each sampled argmax's top-2 gap (fixture generators avoid near ties).
            masks (train mode only): explicit inverted-dropout masks (0 or 1/(1−p)) at nazar's
            dropout sites (seq2seq.h DropoutMasks; docs/models.md), each optional: src_emb (B, S, E)
            on the source embeddings, enc_out (B, S, C) on H (attention and bridge read H ⊙ m),
            tgt_emb (B, T, E) on e_t, dec_out (B, T, d_out) on o_t before the generator (the input
            feed s̃_{t-1} and scheduled sampling's argmax read o_t undropped), attention (B, T, S) on
            the weights α_t before the context sum (not renormalised)."""
            masks = (masks or {}) if self.training else {}
            enc = self.encode(src, src_lengths, masks)
            state = self.init_state(enc)
            outs, alphas, gates = [], [], []
            tgt_in = _ids(tgt_in)
            for t in range(tgt_in.shape[1]):
                y = tgt_in[:, t]
                if self.training and sampling_prob > 0 and t > 0:
                    with torch.no_grad():
                        logits = self.generator(outs[-1])
                        draw = torch.rand(y.shape[0], generator=generator, dtype=torch.float64) < sampling_prob
                        y = torch.where(draw, logits.argmax(-1), y)  # argmax: first maximum
                        if margins is not None:
                            top = logits.topk(2, -1).values
                            margins += (top[:, 0] - top[:, 1])[draw].tolist()
                m, a = masks.get("tgt_emb"), masks.get("attention")
                o, alpha, state = self.decoder.step(t, y, enc, state, self.attention,
                                                    None if m is None else m[:, t],
                                                    None if a is None else a[:, t])
                outs.append(o)
                alphas.append(alpha)
                if self.config["copy_attention"]:
                    gates.append(self.copy.gate(torch.cat(self.decoder.copy_inputs, -1))[:, 0])
            if gates:
                self.copy_gates = torch.stack(gates, 1)  # (B, T) g_t of copy attention
            o = torch.stack(outs, 1)
            if masks.get("dec_out") is not None:
                o = o * masks["dec_out"]
            return self.generator(o), torch.stack(alphas, 1)

    # ---- configuration (nazar/models/config.h) ----

    DEFAULT_CONFIG = {
        "src_vocab_size": 0, "tgt_vocab_size": 0, "embedding_size": 256,
        "encoder": {"cell": "gru", "hidden_size": 256, "num_layers": 1, "bidirectional": True, "dropout": 0.0},
        "decoder": {"kind": "bahdanau", "cell": "gru", "hidden_size": 256, "num_layers": 1, "dropout": 0.0,
                    "bridge": "auto", "attention_timing": "auto", "input_feeding": False, "deep_output": False,
                    "deep_output_size": 0},
        "attention": {"score": "additive", "scale": "none", "local": "global", "window": 10, "attention_size": 0,
                      "position_size": 0, "coverage": False},
        "tie_target_embeddings": False,
        "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3},
        "copy_attention": False,
    }

    def model_config(config):
        """A complete nazar config dict from a dict or JSON string: defaults filled, unknown keys
        rejected (as config.h's from_json), the main validation rules of config.h checked."""
        given = json.loads(config) if isinstance(config, (str, bytes)) else config
        cfg = json.loads(json.dumps(DEFAULT_CONFIG))
        for k, v in given.items():
            if k not in cfg:
                raise ValueError(f"model config: unknown key '{k}'")
            if isinstance(cfg[k], dict):
                for kk, vv in v.items():
                    if kk not in cfg[k]:
                        raise ValueError(f"model config: unknown key '{k}.{kk}'")
                    cfg[k][kk] = vv
            else:
                cfg[k] = v
        if cfg["attention"]["score"] == "bahdanau":
            cfg["attention"]["score"] = "additive"
        d, a = cfg["decoder"], cfg["attention"]
        H, C = d["hidden_size"], encoder_output_size(cfg)
        if min(cfg["src_vocab_size"], cfg["tgt_vocab_size"]) < 5:
            raise ValueError(f"vocabulary sizes must be >= 5, got {cfg['src_vocab_size']} and {cfg['tgt_vocab_size']}")
        if a["score"] == "dot" and H != C:
            raise ValueError(f"dot attention needs decoder hidden_size == encoder output size, got {H} vs {C}; "
                             "use 'general'")
        if d["deep_output"] and d["kind"] == "luong":
            raise ValueError("deep_output is for the bahdanau decoder")
        if d["input_feeding"] and d["kind"] == "bahdanau":
            raise ValueError("input_feeding is for the luong decoder")
        if effective_bridge(cfg) == "backward-first" and not cfg["encoder"]["bidirectional"]:
            raise ValueError("bridge backward-first needs a bidirectional encoder")
        if d["kind"] == "bahdanau" and effective_timing(cfg) == "after":
            raise ValueError("attention_timing 'after' is not supported by the bahdanau decoder")
        if a["coverage"] and a["score"] not in ("additive", "concat"):
            raise ValueError(f"coverage needs an additive or concat attention score, got '{a['score']}'")
        if cfg["tie_target_embeddings"] and generator_input_size(cfg) != cfg["embedding_size"]:
            raise ValueError(f"tie_target_embeddings needs generator input size {generator_input_size(cfg)} "
                             f"== embedding_size {cfg['embedding_size']}")
        return cfg

    def config_json(cfg):
        """The "nazar.config" string: compact, sorted keys (what nlohmann::json::dump writes);
        "coverage" only when true, as nazar writes it; copy_attention only when true (as config.h's
        to_json)."""
        cfg = model_config(cfg)
        if not cfg["attention"]["coverage"]:
            del cfg["attention"]["coverage"]
        if not cfg["copy_attention"]:
            del cfg["copy_attention"]
        return json.dumps(cfg, sort_keys=True, separators=(",", ":"))

    def encoder_output_size(cfg):  # C
        return cfg["encoder"]["hidden_size"] * (2 if cfg["encoder"]["bidirectional"] else 1)

    def generator_input_size(cfg):  # d_out
        d = cfg["decoder"]
        return (d["deep_output_size"] or d["hidden_size"]) if d["deep_output"] else d["hidden_size"]

    def effective_bridge(cfg):
        b = cfg["decoder"]["bridge"]
        if b != "auto":
            return b
        return "backward-first" if cfg["decoder"]["kind"] == "bahdanau" and cfg["encoder"]["bidirectional"] else "mean"

    def effective_timing(cfg):
        t = cfg["decoder"]["attention_timing"]
        if t != "auto":
            return t
        return "before" if cfg["decoder"]["kind"] == "bahdanau" else "after"

    def attention_config(cfg):
        """Attention(**attention_config(cfg)): sizes derived as config.h's attention_config()."""
        a, H = cfg["attention"], cfg["decoder"]["hidden_size"]
        return {"score": a["score"], "query_size": H, "context_size": encoder_output_size(cfg),
                "attention_size": a["attention_size"] or H, "scale": a["scale"], "local": a["local"],
                "window": a["window"], "position_size": a["position_size"] or H, "coverage": a["coverage"]}

    # ---- model files (nazar/models/model_file.h) ----

    MODEL_FORMAT = "1"

    def load_model(path, dtype=None):
        """(model, metadata) from a nazar model file or checkpoint (optim.* / train.* tensors are
        ignored). dtype: e.g. torch.float64 for a reference computation; default float32."""
        tensors, meta = load_safetensors(path)
        tensors = dequantize(tensors, meta, path)  # quantized files (nazar quantize)
        if meta.get("nazar.format") != MODEL_FORMAT:
            raise ValueError(f"{path}: not a nazar model file of format {MODEL_FORMAT} "
                             f"(nazar.format = {meta.get('nazar.format')!r})")
        model = Seq2Seq(meta["nazar.config"])
        sd = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()
              if not (k.startswith("optim.") or k.startswith("train."))}
        if model.config["tie_target_embeddings"]:
            emb = sd["decoder.embedding.weight"]
            if "generator.weight" in sd and not torch.equal(sd["generator.weight"], emb):
                raise ValueError(f"{path}: tied model but generator.weight differs from decoder.embedding.weight")
            sd["generator.weight"] = emb
        model.load_state_dict(sd, strict=True)
        if dtype is not None:
            model = model.to(dtype)
        return model.eval(), meta

    def save_model(path, model, metadata=None):
        """A nazar model file: every state_dict tensor as float32 (tied: generator.weight too),
        metadata nazar.format, nazar.config and the caller's strings (e.g. the nazar.src_vocab /
        nazar.tgt_vocab / nazar.src_tokenizer / nazar.tgt_tokenizer of a loaded model)."""
        meta = dict(metadata or {})
        meta["nazar.format"] = MODEL_FORMAT
        meta["nazar.config"] = config_json(model.config)
        tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in model.state_dict().items()}
        save_safetensors(path, tensors, meta)

    # ---- loss and scores (nazar/models/seq2seq.h) ----

    def loss(model, batch, label_smoothing=0.0, coverage_loss_weight=0.0, **forward_options):
        """(Σ over non-pad target tokens of the (label-smoothed) cross-entropy, token count), as
        Seq2Seq::train_step / eval_loss. The training loss is their ratio: nazar's gradient is
        that of loss / tokens (grad_scale 0). forward_options: sampling_prob, generator (Seq2Seq.forward).
        coverage_loss_weight λ > 0 adds λ · coverage_loss (train_step's objective with
        TrainOptions::coverage_loss_weight; nazar reports it as LossStats::coverage_loss)."""
        logits, alphas = model(batch.src, batch.src_lengths, batch.tgt_in, **forward_options)
        pad = model.config["special_ids"]["pad"]
        total = xent_loss(logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1), pad, label_smoothing)
        if coverage_loss_weight:
            total = total + coverage_loss_weight * coverage_loss(alphas, batch.tgt_out, pad)
        return total, int((batch.tgt_out != pad).sum())

    def coverage_loss(alphas, tgt_out, pad):
        """Σ_b Σ_{t: tgt_out[b, t] != pad} Σ_i min(α_ti, cov_ti), cov_t = Σ_{t'<t} α_t' (the coverage
        loss of nazar/models/attention_terms.h, unweighted). alphas (B, T, S) from Seq2Seq.forward."""
        cov = torch.cumsum(alphas, 1) - alphas
        real = (tgt_out != pad).to(alphas.dtype)[:, :, None]
        return (torch.minimum(alphas, cov) * real).sum()

    def train_loss(model, batch, label_smoothing=0.0, **forward_options):
        total, tokens = loss(model, batch, label_smoothing, **forward_options)
        return total / max(tokens, 1)

    def score(model, src, tgt=None):
        """log p(y | x) per sentence under forced decoding (target + </s>), as Seq2Seq::score.
        src: a Batch, or lists of id lists with tgt. -> (B) tensor in the model's dtype."""
        batch = src if isinstance(src, Batch) else make_batch(src, tgt, model.config["special_ids"])
        with torch.no_grad():
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
            lp = torch.log_softmax(logits, -1).gather(-1, batch.tgt_out[..., None]).squeeze(-1)
            return lp.masked_fill(batch.tgt_out == model.config["special_ids"]["pad"], 0.0).sum(1)

    # ---- copy attention (nazar/models/copy.h, docs/spec.md §7a) ----

    COPY_EPSILON = 1e-12

    def copy_log_probs(logits, alphas, gates, src_copy, ext_vocab):
        """log(P(w) + ε) over the extended vocabulary, (B, T, ext_vocab), with
        P(w) = p_gen softmax(z)[w] + (1 − p_gen) Σ_{i: x̂_i = w} α_i and p_gen = σ(g).
        logits (B, T, V), alphas (B, T, S), gates (B, T) (model.copy_gates after forward),
        src_copy (B, S) extended source ids (padding: any id, its α is 0)."""
        p = torch.sigmoid(gates)[..., None]
        B, T, V = logits.shape
        gen = p * torch.softmax(logits, -1)
        P = torch.cat([gen, gen.new_zeros(B, T, ext_vocab - V)], -1)
        idx = _ids(src_copy)[:, None, :].expand(-1, T, -1)
        P = P.scatter_add(-1, idx, (1 - p) * alphas)
        return torch.log(P + COPY_EPSILON)

    def copy_loss(model, batch, src_copy, tgt_copy, ext_vocab=None, label_smoothing=0.0):
        """(Σ over non-pad targets of −log(P(y) + ε), token count), as Seq2Seq::train_step /
        eval_loss of a copy model; tgt_copy (B, T) the extended targets (tgt_out's layout).
        label_smoothing ls: (1 − ls)(−log(P(y) + ε)) + ls · mean_{v<V} −log(P(v) + ε), the
        uniform share over the fixed target vocabulary only (docs/spec.md §7a)."""
        logits, alphas = model(batch.src, batch.src_lengths, batch.tgt_in)
        tgt_copy, src_copy = _ids(tgt_copy), _ids(src_copy)
        V = logits.shape[-1]
        ext = ext_vocab or max(V, int(src_copy.max()) + 1, int(tgt_copy.max()) + 1)
        lp = copy_log_probs(logits, alphas, model.copy_gates, src_copy, ext)
        pad = model.config["special_ids"]["pad"]
        nll = -lp.gather(-1, tgt_copy[..., None]).squeeze(-1)
        if label_smoothing:
            nll = (1 - label_smoothing) * nll - label_smoothing * lp[..., :V].mean(-1)
        nll = nll.masked_fill(tgt_copy == pad, 0.0)
        return nll.sum(), int((tgt_copy != pad).sum())

    # ---- guided alignment (nazar/models/guided_alignment.h, docs/spec.md §7 "Guided alignment") ----

    GUIDED_ALIGNMENT_EPSILON = 1e-6

    def guided_alignment_loss(alphas, links, epsilon=GUIDED_ALIGNMENT_EPSILON):
        """(−Σ_b Σ_t Σ_i A_bti log(α_bti + ε), aligned positions), unweighted, as nazar's
        guided_alignment_loss: alphas (B, T, S) from Seq2Seq.forward; links[b] = the (i, j) pairs
        of sentence b (source i, target j, 0-based model tokens). A_bt = the position's links
        normalised to 1 (duplicates once); a link whose α is 0 (outside a local window) is
        skipped. Multiply by the weight λ; nazar's gradient is that of (CE + λ · this) / tokens."""
        A = torch.zeros(alphas.shape, dtype=alphas.dtype)
        for b, pairs in enumerate(links):
            for i, j in set((int(i), int(j)) for i, j in pairs):
                A[b, j, i] = 1.0
        n = A.sum(-1, keepdim=True)
        A = A / n.clamp(min=1.0)
        use = (A > 0) & (alphas != 0)
        terms = torch.where(use, A * torch.log(alphas + epsilon), torch.zeros_like(alphas))
        return -terms.sum(), int((n > 0).sum())

    # ---- decoding (nazar/decode/greedy.h; beam search as docs/spec.md §8) ----

    def max_decode_length(S_b, max_length_ratio=2.0, max_length_extra=5, max_length=512):
        """min(max_length, max(1, floor(ratio · S_b) + extra)), ratio · S_b in float32 like nazar."""
        return min(max_length, max(1, math.floor(float(np.float32(max_length_ratio) * np.float32(S_b)))
                                   + max_length_extra))

    def greedy(model, src, max_length_ratio=2.0, max_length_extra=5, max_length=512):
        """Batched greedy decoding as nazar's greedy_decode: y_0 = <s>, y_t = argmax (lowest id on
        ties) over the tokens other than <pad> and <s> (masked to −inf: never emitted; the score
        is the model's own Σ log p of the emitted tokens, = score()); a sentence stops after </s>
        or at max_decode_length(S_b). src: lists of id lists.
        -> [{"tokens": [...], "finished": bool, "score": Σ log p, "attention": (n, S_b)}]."""
        sp = model.config["special_ids"]
        batch = make_batch(src, None, sp)
        lengths = batch.src_lengths.tolist()
        limit = [max_decode_length(n, max_length_ratio, max_length_extra, max_length) for n in lengths]
        res = [{"tokens": [], "finished": False, "score": 0.0, "attention": []} for _ in src]
        with torch.no_grad():
            enc = model.encode(batch.src, batch.src_lengths)
            state = model.init_state(enc)
            prev = torch.full((len(src),), sp["bos"], dtype=torch.int64)
            for _ in range(max(limit)):
                log_probs, alpha, state = model.step(prev, enc, state)
                y = _mask_specials(log_probs, sp).argmax(-1)  # first maximum
                active = 0
                for b, r in enumerate(res):
                    if r["finished"] or len(r["tokens"]) >= limit[b]:
                        continue
                    r["tokens"].append(int(y[b]))
                    r["score"] += float(log_probs[b, y[b]])
                    r["attention"].append(alpha[b, :lengths[b]])
                    r["finished"] = int(y[b]) == sp["eos"]
                    active += not (r["finished"] or len(r["tokens"]) >= limit[b])
                prev = y
                if active == 0:
                    break
        for b, r in enumerate(res):
            r["attention"] = (torch.stack(r["attention"]) if r["attention"]
                              else torch.zeros(0, lengths[b], dtype=enc.enc_out.dtype))
        return res

    def _mask_specials(log_probs, sp):
        """log_probs (N, V) with <pad> and <s> set to −inf: the searches never emit them."""
        masked = log_probs.clone()
        masked[:, [sp["pad"], sp["bos"]]] = -math.inf
        return masked

    def length_penalty(n, alpha):
        """GNMT (Wu et al. 2016): lp(Y) = ((5 + |Y|) / 6)^α; α = 0 disables it."""
        return ((5.0 + n) / 6.0) ** alpha

    def coverage_penalty(attention, beta):
        """GNMT: β Σ_i log(min(Σ_t α_ti, 1)) over the real source positions (attention (n, S_b));
        a position never attended contributes log(1e-10)."""
        if beta == 0.0 or attention.shape[-1] == 0:
            return 0.0
        cov = attention.sum(0).clamp(min=1e-10, max=1.0)
        return beta * float(torch.log(cov).sum())

    def beam_search(model, src, beam_size=5, n_best=1, alpha=0.6, beta=0.0, max_length_ratio=2.0,
                    max_length_extra=5, max_length=512, margins=None):
        """Beam search, one sentence at a time, written plainly (docs/spec.md §8).

        Each step expands every live hypothesis by every token except <pad> and <s> (masked to
        −inf: never emitted; log_prob stays the model's own Σ log p, = score()) and keeps the best `width`
        candidates by total log-probability (ties: lower hypothesis index, then lower token id),
        width = beam_size − (hypotheses finished so far). A kept candidate ending in </s> is
        finished; the others stay live. The search stops when beam_size hypotheses are finished,
        none is live, or at max_decode_length(S_b) (live hypotheses are then kept as unfinished).
        Ranking: log p(Y|X) / lp(|Y|) + cp(X; Y) with lp = length_penalty(|Y|, alpha) (|Y| counts
        </s>) and cp = coverage_penalty(attention, beta). beam_size 1 is greedy decoding exactly.
        -> per sentence, the n_best best: [{"tokens", "finished", "log_prob", "score", "attention" (n, S_b)}].
        margins: a list to receive every decision's gap (last kept − first dropped candidate per
        step; neighbours in the ranking), so fixture generators can avoid near ties.
        """
        assert beam_size >= 1 and 1 <= n_best <= beam_size, (beam_size, n_best)
        sp = model.config["special_ids"]
        out = []
        with torch.no_grad():
            for ids in src:
                S_b = len(ids)
                limit = max_decode_length(S_b, max_length_ratio, max_length_extra, max_length)
                enc1 = model.encode(torch.tensor([list(ids)], dtype=torch.int64).reshape(1, S_b), [S_b])
                state = model.init_state(enc1)
                live = [([], 0.0, [])]  # (tokens, log_prob, attention rows)
                finished = []
                for _ in range(limit):
                    N = len(live)
                    enc = enc1.select([0] * N)
                    prev = torch.tensor([h[0][-1] if h[0] else sp["bos"] for h in live], dtype=torch.int64)
                    log_probs, att, state = model.step(prev, enc, state)
                    total = (torch.tensor([h[1] for h in live], dtype=log_probs.dtype)[:, None]
                             + _mask_specials(log_probs, sp))
                    order = torch.sort(-total.reshape(-1), stable=True).indices
                    width = beam_size - len(finished)
                    if margins is not None and order.numel() > width:
                        flat = total.reshape(-1)
                        margins.append(float(flat[order[width - 1]] - flat[order[width]]))
                    keep, rows = [], []
                    V = log_probs.shape[1]
                    for k in order[:width].tolist():
                        n, y = divmod(k, V)
                        toks, _, atts = live[n]
                        hyp = (toks + [y], float(total[n, y]), atts + [att[n, :S_b]])
                        if y == sp["eos"]:
                            finished.append(hyp + (True,))
                        else:
                            keep.append(hyp)
                            rows.append(n)
                    if not keep or len(finished) >= beam_size:
                        live = []
                        break
                    live, state = keep, state.select(rows)
                finished += [h + (False,) for h in live]

                def ranked(h):
                    toks, lp, atts, done = h
                    a = torch.stack(atts)
                    return {"tokens": toks, "finished": done, "log_prob": lp, "attention": a,
                            "score": lp / length_penalty(len(toks), alpha) + coverage_penalty(a, beta)}
                hyps = sorted((ranked(h) for h in finished), key=lambda r: -r["score"])  # stable
                if margins is not None:
                    margins += [a["score"] - b["score"] for a, b in zip(hyps[:n_best], hyps[1:n_best + 1])]
                out.append(hyps[:n_best])
        return out
