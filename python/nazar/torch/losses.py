"""Losses and scores of nazar.torch: the training loss, coverage loss, forced-decoding scores,
copy attention's extended-vocabulary loss and guided alignment (nazar/models/seq2seq.h, copy.h,
guided_alignment.h; docs/spec.md §7, §7a). Needs torch."""

import torch

from .layers import xent_loss
from .model import Batch, _ids, make_batch


# ---- loss and scores (nazar/models/seq2seq.h) ----


def loss(model, batch, label_smoothing=0.0, coverage_loss_weight=0.0, **forward_options):
    """(Σ over non-pad target tokens of the (label-smoothed) cross-entropy, token count), as
    TrainPass::train_step / eval_loss. The training loss is their ratio: nazar's gradient is
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
    """log p(y | x) per sentence under forced decoding (target + </s>), as TrainPass::score.
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
    """(Σ over non-pad targets of −log(P(y) + ε), token count), as TrainPass::train_step /
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
