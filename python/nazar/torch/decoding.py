"""Decoding with nazar.torch: greedy decoding and beam search, written plainly, which nazar's
decoders match token for token (nazar/decode/greedy.h; docs/spec.md §8). Both step with
Seq2Seq.step, so monotonic attention decodes hard (docs/spec.md §5.6): each step attends to one
source position or to none, its "attention" row is that one-hot choice (or zeros), and beam
search reorders the carried choice with the beams. Needs torch."""

import math

import numpy as np
import torch

from .model import make_batch


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
