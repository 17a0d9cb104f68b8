"""Attention of nazar.torch: additive, dot, general and concat scores, global, local-m and
local-p, with coverage or monotonic attention, plain or chunkwise (MoChA) (nazar/attention/
attention.h, local.h, monotonic.h; docs/spec.md §3-5.6). Needs torch."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# Attention (nazar/attention/attention.h, local.h). One decoder step at a time, keys once
# per batch, exactly like nazar; the reference scores all S positions and masks, which is
# correct (nazar computes only the window, for speed).


SCORES = ("additive", "dot", "general", "concat")
SCALES = ("none", "sqrt", "learned")
LOCALS = ("global", "local-m", "local-p")


class Attention(nn.Module):
    """Attention(score, query_size H, context_size C, attention_size A, scale, local, window D,
    position_size P, coverage, monotonic, monotonic_bias_init, monotonic_noise).
    forward(query (B, H), keys, enc_out (B, S, C), lengths (B), t, mask, cov, prev, noise, hard)
    -> (context (B, C), weights (B, S) dense, zero outside the window / padding).
    coverage (additive/concat): cov (B, S) = Σ of the earlier steps' weights enters the score,
    e_i = v · tanh(W_q q + W_k h_i + w_c cov_i), w_c "coverage.weight" (1, A), 0 at init.
    monotonic (global, any score, no coverage; docs/spec.md §5.6): the weights are the expected
    alignment α = monotonic_alignment(p, prev) of p_j = σ(e_j + r + ε_j) instead of a softmax
    (not renormalised: Σ α <= 1), prev (B, S) = α_{t−1}, r "monotonic_bias" (1) =
    monotonic_bias_init at init, ε (B, S) the pre-sigmoid noise (training, given by the caller);
    hard (decoding): one-hot at the first j >= where prev is 1 with e_j + r >= 0, or all 0.
    mocha_chunk w >= 1 (MoChA, Chiu & Raffel 2018; monotonic, additive/concat): the weights are
    the chunkwise β = chunkwise_weights(α, u, w) over the window of w positions ending at the
    stop (hard: hard_chunk at the one-hot α's stop), u_j = v_c · tanh(W_q q + W_k h_j) the chunk
    energy (the score's hidden layer, its own v_c "chunk_v.weight" (1, A); no bias, no noise);
    the context sums β, the step reports β, the next step reads α (forward's with_alignment)."""

    def __init__(self, score="additive", query_size=0, context_size=0, attention_size=0, scale="none",
                 local="global", window=10, position_size=0, coverage=False, monotonic=False,
                 monotonic_bias_init=-1.0, monotonic_noise=1.0, mocha_chunk=0):
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
        self.monotonic, self.monotonic_noise = bool(monotonic), float(monotonic_noise)
        self.margins = None  # a list: receives each hard decision's min |e_j + r| (fixture guards)
        if monotonic:
            assert local == "global" and not coverage, "monotonic attention is global only, without coverage"
            self.monotonic_bias = nn.Parameter(torch.full((1,), float(monotonic_bias_init)))  # r (1)
        self.mocha_chunk = int(mocha_chunk)
        if self.mocha_chunk:
            assert self.mocha_chunk >= 1, f"MoChA: the chunk w must be >= 1, got {self.mocha_chunk}"
            assert monotonic, "mocha_chunk needs monotonic attention"
            assert score in ("additive", "concat"), "MoChA needs an additive or concat score"
            self.chunk_v = nn.Linear(A, 1, bias=False)  # v_c (1, A): u_j = v_c · tanh(W_q q + W_k h_j)

    def precompute(self, enc_out):
        """keys (B, S, K): W_k h (additive/concat, general); enc_out itself for dot."""
        return enc_out if self.score == "dot" else self.key(enc_out)

    def _hidden(self, query, keys, cov=None):  # (B, S, A): tanh(W_q q + W_k h_i [+ w_c cov_i])
        pre = self.query(query)[:, None, :] + keys
        if self.has_coverage:  # + w_c cov_i
            pre = pre + cov[:, :, None] * self.coverage.weight[0]
        return torch.tanh(pre)

    def _scores(self, query, keys, cov=None, hidden=None):  # (B, S)
        if self.score in ("additive", "concat"):
            return self.v(self._hidden(query, keys, cov) if hidden is None else hidden).squeeze(-1)
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

    def forward(self, query, keys, enc_out, lengths, t=0, mask=None, cov=None, prev=None, noise=None,
                hard=False, with_alignment=False):
        """-> (context (B, C), weights α (B, S)). mask (B, S): a dropout mask on α by source
        position (train mode): the context sums α ⊙ mask, not renormalised; α is returned.
        cov (B, S): cov_t (coverage attention; required then). Monotonic attention: prev (B, S)
        α_{t−1} (required), noise (B, S) ε or None, hard: decoding's one-hot choice. MoChA: the
        weights (what the context sums, the mask multiplies and the step reports) are β.
        with_alignment: -> (context, weights, carried), carried the monotonic α_t that the next
        step reads as prev (MoChA: α, not β; monotonic: the weights; otherwise None)."""
        B, S, _ = enc_out.shape
        lengths = torch.as_tensor(lengths, dtype=torch.int64)
        assert cov is not None or not self.has_coverage, "coverage attention needs cov"
        hidden = self._hidden(query, keys, cov) if self.score in ("additive", "concat") else None
        e = self._scores(query, keys, cov, hidden)
        pos = torch.arange(S)
        if self.monotonic:
            alpha = self._monotonic(e, lengths, prev, noise, hard)
            weights = alpha
            if self.mocha_chunk:
                u = self.chunk_v(hidden).squeeze(-1)  # the chunk energies: no bias, no noise
                weights = (hard_chunk(u, _stops(alpha, lengths), self.mocha_chunk) if hard
                           else chunkwise_weights(alpha, u, self.mocha_chunk, lengths))
            summed = weights if mask is None else weights * mask
            context = torch.bmm(summed[:, None, :], enc_out).squeeze(1)
            return (context, weights, alpha) if with_alignment else (context, weights)
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
        return (context, alpha, None) if with_alignment else (context, alpha)

    def _monotonic(self, e, lengths, prev, noise, hard):
        """α (B, S) of monotonic attention from the scores e (B, S): the expected alignment of
        p = σ(e + r + ε) (p = 0 at padding), or with `hard` the one-hot choice (no noise)."""
        assert prev is not None, "monotonic attention needs prev (α of the previous step)"
        energy = e + self.monotonic_bias
        if hard:
            return self._hard_monotonic(energy.detach(), lengths, prev)
        if noise is not None:
            energy = energy + noise
        real = torch.arange(e.shape[1])[None, :] < lengths[:, None]
        p = torch.where(real, torch.sigmoid(energy), torch.zeros_like(energy))
        return monotonic_alignment(p, prev)

    def _hard_monotonic(self, energy, lengths, prev):
        """Test-time monotonic attention: from = the position where prev is 1 (prev all 0: the
        previous step ran off the end, α = 0); α = one-hot(first j >= from, j < S_b, with
        e_j + r >= 0), or 0 when there is none. Records min |e_j + r| of the positions examined."""
        alpha = torch.zeros_like(energy)
        for b, S_b in enumerate(lengths.tolist()):
            on = (prev[b, :S_b] != 0).nonzero()
            if on.numel() == 0:
                continue
            examined = []
            for j in range(int(on[0, 0]), S_b):
                examined.append(abs(float(energy[b, j])))
                if float(energy[b, j]) >= 0:
                    alpha[b, j] = 1.0
                    break
            if self.margins is not None and examined:
                self.margins.append(min(examined))
        return alpha


# Monotonic attention's expected alignment (Raffel et al. 2017; nazar/attention/naive_monotonic.h,
# docs/spec.md §5.6): the probability α_t[j] that decoder step t stops at source position j,
# moving on from where step t − 1 stopped past each position k with probability 1 − p_k.
# Attention(monotonic=True) uses the recursive form; the parallel one is kept as its check.


def monotonic_alignment(p, prev):
    """Recursive form: p, prev (B, S) -> α (B, S).

    q_0 = prev_0,  q_j = (1 − p_{j−1}) q_{j−1} + prev_j,  α_j = p_j q_j  (O(S), sequential)."""
    qs, q = [], None
    for j in range(p.shape[-1]):
        q = prev[..., j] if q is None else (1 - p[..., j - 1]) * q + prev[..., j]
        qs.append(q)
    return p * torch.stack(qs, -1) if qs else p.clone()


def monotonic_alignment_parallel(p, prev):
    """Parallel form: α = p ⊙ (M prev), M[j, l] = Π_{l ≤ k < j} (1 − p_k) = exp(L_j − L_l) for
    l ≤ j (0 above), L_j = Σ_{k<j} log(1 − p_k), every entry in [0, 1]: no division by a
    vanishing product (the paper's cumprod form clamps it to 1e-10). p = 1 stands as
    log(tiny) ≈ −708 (float64) so that two L holding it cancel it. O(S²)."""
    below = p < 1  # log1p(-p) of a p that is not 1 (and of 0 where it is: finite gradients)
    log_keep = torch.where(below, torch.log1p(-torch.where(below, p, torch.zeros_like(p))),
                           torch.full_like(p, math.log(torch.finfo(p.dtype).tiny)))
    L = torch.cat([torch.zeros_like(p[..., :1]), torch.cumsum(log_keep, -1)[..., :-1]], -1)  # L_j
    S = p.shape[-1]
    lower = torch.tril(torch.ones(S, S, dtype=torch.bool, device=p.device))
    diff = (L[..., :, None] - L[..., None, :]).masked_fill(~lower, float("-inf"))
    return p * (torch.exp(diff) @ prev[..., :, None])[..., 0]


# MoChA's chunkwise weights (Chiu & Raffel 2018, "Monotonic Chunkwise Attention";
# nazar/attention/naive_mocha.h, docs/spec.md §5.6): given the step's expected monotonic
# alignment α (the probability of stopping at k) and the chunk energies u, the step attends
# softly to the window [max(0, k − w + 1), k] of w positions ending at the stop:
#
#   β_j = Σ_{k=j}^{min(j+w−1, S_b−1)} α_k · exp(u_j) / Σ_{l=max(0,k−w+1)}^{k} exp(u_l)
#
# Σ_j β_j = Σ_k α_k (each window's softmax sums to 1; the rest ran off the end), w = 1 gives
# β = α, padding positions get β = 0. Two forms, held equal by the tests: chunkwise_weights
# (vectorised, what Attention uses) and chunkwise_weights_reference (the sum above, looped).


def chunkwise_weights(alpha, u, w, lengths=None):
    """β (..., S) from α, u (..., S) and w >= 1; lengths (...) the real positions S_b (None: all
    S). Each window's softmax is computed on its own, with its own maximum subtracted:
    P[k, i] = softmax over window(k) of u at position k − w + 1 + i (−inf before position 0), so
    every entry is in [0, 1] and every denominator is >= 1. (The moving-sum form
    exp(u − m) ⊙ movsum(α / movsum(exp(u − m))) with one maximum m per row divides by an
    underflowed 0 when a whole window lies far below the row's maximum: about 745 below in
    float64, about 100 in float32; per-window maxima cannot.) Then β_j = Σ_{d<w} α_{j+d} P[j+d, w−1−d]: a
    sum over the w offsets, each vectorised over the batch and the positions. O(S·w)."""
    S = u.shape[-1]
    if S == 0:
        return torch.zeros_like(alpha + u)
    pos = torch.arange(S, device=u.device)
    real = torch.ones_like(u, dtype=torch.bool) if lengths is None else \
        pos < torch.as_tensor(lengths, device=u.device)[..., None]
    alpha = torch.where(real, alpha, torch.zeros_like(alpha))
    u = torch.where(real, u, torch.zeros_like(u))  # finite at padding: no window of a real stop reaches it
    P = torch.softmax(F.pad(u, (w - 1, 0), value=float("-inf")).unfold(-1, w, 1), -1)  # (..., S, w)
    part = alpha[..., :, None] * P  # α_k P_k(l), l = k − w + 1 + i
    beta = part[..., w - 1]  # d = 0: the window ending at j itself
    for d in range(1, min(w, S)):  # the window ending at k = j + d, which holds j at i = w − 1 − d
        beta = beta + F.pad(part[..., d:, w - 1 - d], (0, d))
    return torch.where(real, beta, torch.zeros_like(beta))


def chunkwise_weights_reference(alpha, u, w, lengths=None):
    """β as chunkwise_weights, by looping over the definition (rows, j, k and l one at a time;
    each window's softmax shifted by that window's maximum, which cancels). A check: O(S·w²)."""
    shape, S = u.shape, u.shape[-1]
    a, e = alpha.reshape(-1, S), u.reshape(-1, S)
    n = [S] * a.shape[0] if lengths is None else torch.as_tensor(lengths).reshape(-1).tolist()
    rows = []
    for b in range(a.shape[0]):
        row = []
        for j in range(S):
            total = a.new_zeros(())
            for k in range(j, min(j + w - 1, n[b] - 1) + 1):
                window = e[b, max(0, k - w + 1):k + 1]
                m = window.max().detach()
                total = total + a[b, k] * torch.exp(e[b, j] - m) / torch.exp(window - m).sum()
            row.append(total)
        rows.append(torch.stack(row) if row else a.new_zeros(0))
    return torch.stack(rows).reshape(shape) if rows else torch.zeros_like(alpha + u)


def hard_chunk(u, stops, w):
    """Decoding's β (B, S): the softmax of u[b] over [max(0, k − w + 1), k] for the hard stop
    k = stops[b] (−1: the reader ran off the end, or the sentence is empty: all 0)."""
    beta = torch.zeros_like(u)
    for b, k in enumerate(stops):
        if k >= 0:
            lo = max(0, k - w + 1)
            beta[b, lo:k + 1] = torch.softmax(u[b, lo:k + 1], -1)
    return beta


def _stops(alpha, lengths):
    """The hard stop of each row of a one-hot (or all-zero) α: its position, or −1."""
    out = []
    for b, S_b in enumerate(torch.as_tensor(lengths).tolist()):
        on = (alpha[b, :S_b] != 0).nonzero()
        out.append(int(on[-1, 0]) if on.numel() else -1)
    return out
