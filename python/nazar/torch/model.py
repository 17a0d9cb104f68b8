"""The models of nazar.torch: encoder, decoder, batches and the whole Seq2Seq (nazar/models/), and
the model files that nazar reads and writes (nazar/models/model_file.h). Needs torch."""

import torch
import torch.nn as nn

from .attention import Attention
from .config import (DEFAULT_CONFIG, attention_config, config_json, effective_bridge, effective_timing,
                     encoder_output_size, generator_input_size, model_config)
from .layers import make_rnn
from .weights import dequantize, load_safetensors, save_safetensors


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
                            bidirectional=e["bidirectional"], dropout=e["dropout"],
                            layer_norm=e["layer_norm"], residual=e["residual"],
                            transition_depth=e["transition_depth"])

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
    Coverage reads cov_t and carries cov_{t+1} = cov_t + α_t; monotonic attention reads α_{t−1}
    (state.align) and carries α_t, both where the attention runs (before or after the RNN step);
    MoChA carries the monotonic α_t too, while its weights (context, reported row) are β_t.
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
        self.layer_norm = d["layer_norm"]
        if self.layer_norm:  # explicit ops (layers.py), the same names plus ln_weight_*
            self.rnn = make_rnn(d["cell"], E + F, H, layer_norm=True, num_layers=self.L, dropout=d["dropout"])
        else:
            rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[d["cell"]]
            self.rnn = rnn(E + F, H, num_layers=self.L, batch_first=True, dropout=d["dropout"])
        if d["kind"] == "luong":
            self.combine = nn.Linear(H + C, H, bias=False)  # W_c (H, H + C)
        self.deep_output = DeepOutput(H, E, C, generator_input_size(cfg)) if d["deep_output"] else None

    def step(self, t, prev, enc, state, attention, emb_mask=None, att_mask=None, noise=None, hard=False):
        """prev (N) ids y_{t-1}; enc: Encoded; state: State before the step; emb_mask (N, E) a
        dropout mask on e_t, att_mask (N, S) one on the attention weights, or None; monotonic
        attention: noise (N, S) its pre-sigmoid ε or None, hard: decoding's one-hot attention.
        -> (o_t (N, d_out), attention weights (N, S) (MoChA: β), State after the step)."""
        e = self.embedding(prev)
        if emb_mask is not None:
            e = e * emb_mask
        attend = lambda q: attention(q, enc.keys, enc.enc_out, enc.lengths, t, att_mask,  # noqa: E731
                                     state.cov, state.align, noise, hard, with_alignment=True)
        if self.before:
            ctx, alpha, carried = attend(state.h[-1])
        x = [e]
        if self.kind == "bahdanau":
            x.append(ctx)
        elif self.feeding:
            x.append(state.feed)
        x = torch.cat(x, -1)[:, None, :]  # (N, 1, E + F)
        if self.cell == "lstm" and self.layer_norm:
            _, (h, c) = self.rnn(x, None, (state.h, state.c))
        elif self.cell == "lstm":
            _, (h, c) = self.rnn(x, (state.h, state.c))
        elif self.layer_norm:
            _, h = self.rnn(x, None, state.h)
            c = None
        else:
            _, h = self.rnn(x, state.h)
            c = None
        s = h[-1]
        if not self.before:
            ctx, alpha, carried = attend(s)
        if self.kind == "luong":
            o = torch.tanh(self.combine(torch.cat([s, ctx], -1)))
        elif self.deep_output is not None:
            o = self.deep_output(s, e, ctx)
        else:
            o = s
        self.copy_inputs = (ctx, s, e)  # what a copy gate reads: [c_t ; s_t ; e_t]
        cov = None if state.cov is None else state.cov + alpha  # cov_{t+1} = cov_t + α_t
        align = None if state.align is None else carried  # monotonic: α_t, the next step's prev (MoChA: not β)
        return o, alpha, State(t + 1, h, c, o if self.feeding else None, cov, align)


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
    None, align (N, S) = α_{t−1} with monotonic attention else None (α_{−1} = one-hot at 0, all 0
    for an empty sentence; decoding: the one-hot choice, all 0 once a step ran off the end; MoChA:
    the monotonic α as well, never the chunkwise β)."""

    def __init__(self, t, h, c=None, feed=None, cov=None, align=None):
        self.t, self.h, self.c, self.feed, self.cov, self.align = t, h, c, feed, cov, align

    def select(self, rows):
        rows = _ids(rows)
        pick = lambda x: None if x is None else x[rows]  # noqa: E731
        return State(self.t, self.h[:, rows], None if self.c is None else self.c[:, rows],
                     pick(self.feed), pick(self.cov), pick(self.align))


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
        S = enc.enc_out.shape[1]
        cov = h.new_zeros(N, S) if self.attention.has_coverage else None
        align = None
        if self.attention.monotonic:  # α_{−1} = (1, 0, ..., 0), all 0 when S_b = 0
            align = h.new_zeros(N, S)
            if S > 0:
                align[:, 0] = (enc.lengths > 0).to(h.dtype)
        return State(0, h, c, feed, cov, align)

    def step(self, prev, enc, state, hard=True):
        """prev (N) ids -> (log_probs (N, V), attention (N, S), next State). hard: monotonic
        attention attends as decoding does (one position or none; docs/spec.md §5.6); False
        gives the expected alignment of teacher forcing."""
        o, alpha, state = self.decoder.step(state.t, _ids(prev), enc, state, self.attention, hard=hard)
        return torch.log_softmax(self.generator(o), -1), alpha, state

    # ---- teacher forcing ----

    def forward(self, src, src_lengths, tgt_in, sampling_prob=0.0, generator=None, margins=None, masks=None):
        """Teacher-forced logits (B, T, V) and attention weights (B, T, S) (MoChA: β). Dropout (between
        stacked RNN layers) and scheduled sampling act in train mode only: with probability
        sampling_prob, for t > 0, a row feeds the argmax of its own step t−1 prediction instead
        of tgt_in[:, t] (no gradient through the choice; draws from `generator`, a
        torch.Generator, one per row per step), as TrainPass::train_step. margins: a list that
        receives each sampled argmax's top-2 gap (fixture generators avoid near ties).
        masks (train mode only): explicit inverted-dropout masks (0 or 1/(1−p)) at nazar's
        dropout sites (seq2seq.h DropoutMasks; docs/models.md), each optional: src_emb (B, S, E)
        on the source embeddings, enc_out (B, S, C) on H (attention and bridge read H ⊙ m),
        tgt_emb (B, T, E) on e_t, dec_out (B, T, d_out) on o_t before the generator (the input
        feed s̃_{t-1} and scheduled sampling's argmax read o_t undropped), attention (B, T, S) on
        the weights α_t before the context sum (not renormalised; monotonic attention carries
        the undropped α_t; MoChA: on β_t), monotonic_noise (B, T, S) the pre-sigmoid ε of monotonic attention.
        Monotonic attention in train mode without that mask draws ε = σ · N(0, 1) from torch's
        default generator (σ = monotonic_noise of the config; none when σ = 0)."""
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
                                                None if a is None else a[:, t], self._noise(enc, masks, t))
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


    def _noise(self, enc, masks, t):
        """Step t's pre-sigmoid noise ε (B, S) of monotonic attention: train mode only."""
        att = self.attention
        if not (att.monotonic and self.training):
            return None
        if masks.get("monotonic_noise") is not None:
            return masks["monotonic_noise"][:, t]
        if att.monotonic_noise == 0:
            return None
        return att.monotonic_noise * torch.randn(enc.enc_out.shape[:2], dtype=enc.enc_out.dtype)


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
