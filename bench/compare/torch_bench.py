#!/usr/bin/python3
"""The PyTorch side of `make bench-compare` (docs/performance.md): python/nazar_torch.py's
Seq2Seq, loaded from the initial model file `nazar bench` wrote, trained on the batches it
dumped (same weights, same batches, Adam lr 1e-3, loss = mean token cross-entropy), or decoding
its sources. Prints one JSON object.

    torch_bench.py train  --model M --batches B.json --steps N --warmup K --threads T [--autocast bf16]
    torch_bench.py decode --model M --sources S.json --beam K --batch N --max-length L --threads T
    torch_bench.py gemm   --threads T   (the standard config's training products, for run.py's choice of core)

Threads: torch.set_num_threads(T); OpenBLAS's own pool is sized by OPENBLAS_NUM_THREADS, which
the caller sets (the best setting on a 2-core machine is T = 1 with 2 OpenBLAS threads).
--autocast bf16: the forward pass and the loss run under torch.autocast("cpu", dtype=torch.bfloat16)
(PyTorch's mixed precision: matrix products with bf16 inputs, fp32 master weights and optimizer),
the backward pass outside it, as PyTorch's documentation shows.
PyTorch "at its best": batches are tensors before timing, the loop does nothing but
zero_grad / forward / backward / step, and local-p windows are computed with tensor ops
instead of the reference's per-sentence Python loop.
"""
import argparse
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import nazar_torch as nt  # noqa: E402


def fast_local_forward(self, query, keys, enc_out, lengths, t=0, mask=None, cov=None, *monotonic,
                       with_alignment=False):
    """nazar_torch.Attention.forward with the window bounds computed by tensor ops (same math).
    Global attention, an attention dropout mask, coverage and monotonic attention (its prev,
    noise and hard arguments) go to the original unchanged. with_alignment: also the carried
    weights, None here (only monotonic attention carries any), as the original returns them."""
    if self.local == "global" or mask is not None or cov is not None or self.monotonic:
        return _orig_forward(self, query, keys, enc_out, lengths, t, mask, cov, *monotonic,
                             with_alignment=with_alignment)
    B, S, _ = enc_out.shape
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    e = self._scores(query, keys)
    pos = torch.arange(S)
    p = self.positions(query, lengths, t)
    D = self.window
    if self.local == "local-m":
        c = torch.minimum(p.detach().long(), lengths - 1)
    else:
        c = torch.minimum(torch.floor(p.detach() + 0.5).long(), lengths - 1)
    lo = torch.clamp(c - D, min=0)
    hi = torch.minimum(lengths - 1, c + D)
    empty = lengths == 0
    lo = lo.masked_fill(empty, 0)
    hi = hi.masked_fill(empty, -1)
    inside = (pos[None, :] >= lo[:, None]) & (pos[None, :] <= hi[:, None])
    e = e.masked_fill(~inside & inside.any(-1, keepdim=True), float("-inf"))
    alpha = torch.softmax(e, dim=-1).masked_fill(~inside, 0.0)
    if self.local == "local-p":
        sigma = self.window / 2.0
        g = torch.exp(-((pos[None, :].to(p.dtype) - p[:, None]) ** 2) / (2 * sigma * sigma))
        alpha = alpha * g
    context = torch.bmm(alpha[:, None, :], enc_out).squeeze(1)
    return (context, alpha, None) if with_alignment else (context, alpha)


_orig_forward = nt.Attention.forward
nt.Attention.forward = fast_local_forward


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def train(a):
    model, _ = nt.load_model(a.model)
    model.train()
    sp = model.config["special_ids"]
    with open(a.batches) as f:
        raw = json.load(f)
    batches = [nt.make_batch(b["src"], b["tgt"], sp) for b in raw]
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rss_ready = peak_rss_mb()
    tokens, first_loss, t0, c0 = 0, None, None, None
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            t0, c0 = time.perf_counter(), time.process_time()
        batch = batches[s % len(batches)]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            total, n = nt.loss(model, batch)
            loss = total.float() / max(n, 1)
        loss.backward()
        opt.step()
        if s == 0:
            first_loss = float(loss)
        if s >= a.warmup:
            tokens += n
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"what": "train", "autocast": a.autocast, "steps": a.steps, "target_tokens": tokens, "wall_s": wall, "cpu_s": cpu,
            "tokens_per_s": tokens / wall, "first_loss": first_loss, "peak_rss_mb": peak_rss_mb(),
            "rss_before_training_mb": rss_ready}


def beam_batch(model, src, K, max_length, alpha=0.6):
    """Batched beam search (K live hypotheses per sentence, one step() for all rows), the plain
    way: finished hypotheses are recorded and their continuations masked; runs to the longest
    sentence's maximum length. Returns the best token list per sentence."""
    sp = model.config["special_ids"]
    batch = nt.make_batch(src, None, sp)
    B = len(src)
    limit = max(nt.max_decode_length(n, 2.0, 5, max_length) for n in batch.src_lengths.tolist())
    enc = model.encode(batch.src, batch.src_lengths)
    state = model.init_state(enc)
    encK = enc.select(torch.arange(B).repeat_interleave(K))
    k = 1
    scores = torch.zeros(B, 1)
    prev = torch.full((B,), sp["bos"], dtype=torch.int64)
    tokens = torch.zeros(B, 1, 0, dtype=torch.int64)
    best = [(-float("inf"), None)] * B
    for t in range(limit):
        log_probs, _, state = model.step(prev, enc if k == 1 else encK, state)
        V = log_probs.shape[1]
        total = (scores[:, :, None] + log_probs.view(B, k, V)).view(B, k * V)
        top_v, top_i = total.topk(K, dim=1)
        beam, tok = top_i // V, top_i % V
        tokens = torch.cat([tokens.gather(1, beam[:, :, None].expand(B, K, tokens.shape[2])), tok[:, :, None]], 2)
        eos = tok == sp["eos"]
        if bool(eos.any()):
            for b, j in eos.nonzero().tolist():
                sc = float(top_v[b, j]) / nt.length_penalty(t + 1, alpha)
                if sc > best[b][0]:
                    best[b] = (sc, tokens[b, j].tolist())
            top_v = top_v.masked_fill(eos, -float("inf"))
        state = state.select((torch.arange(B)[:, None] * k + beam).view(-1))
        scores, prev, k = top_v, tok.view(-1), K
    out = []
    for b in range(B):
        if best[b][1] is None:
            best[b] = (float(scores[b, 0]), tokens[b, 0].tolist())
        out.append(best[b][1])
    return out


def decode(a):
    model, _ = nt.load_model(a.model)
    model.eval()
    with open(a.sources) as f:
        src = json.load(f)

    def run(sents):
        n = 0
        with torch.no_grad():
            for i in range(0, len(sents), a.batch):
                part = sents[i:i + a.batch]
                if a.beam <= 1:
                    n += sum(len(r["tokens"]) for r in nt.greedy(model, part, max_length=a.max_length))
                else:
                    n += sum(len(r) for r in beam_batch(model, part, a.beam, a.max_length))
        return n

    run(src[:a.batch])  # warm-up: one batch
    t0, c0 = time.perf_counter(), time.process_time()
    n = run(src)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"what": "decode", "beam": a.beam, "batch": a.batch, "sentences": len(src), "output_tokens": n,
            "wall_s": wall, "cpu_s": cpu, "sentences_per_s": len(src) / wall, "peak_rss_mb": peak_rss_mb()}


# The standard config's training products (M, N, K), as in `nazar bench gemm`: the generator's
# forward and its two backward products, the decoder's per-step input and recurrent products, and
# the attention keys. run.py times them under each candidate OpenBLAS core and runs PyTorch on the
# fastest (its GFLOP/s over the set: total FLOPs / total best-of-reps time).
GEMM_SHAPES = [(256, 8000, 512), (256, 512, 8000), (8000, 512, 256), (64, 1536, 768), (64, 1536, 512),
               (2240, 512, 512)]


def gemm(a):
    total_flop, total_s = 0.0, 0.0
    shapes = []
    for m, n, k in GEMM_SHAPES:
        x, w = torch.randn(m, k), torch.randn(k, n)
        reps = max(3, min(50, int(2e9 / (2.0 * m * n * k))))
        torch.mm(x, w)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                torch.mm(x, w)
            best = min(best, (time.perf_counter() - t0) / reps)
        shapes.append({"M": m, "N": n, "K": k, "gflops": 2.0 * m * n * k / best / 1e9})
        total_flop += 2.0 * m * n * k
        total_s += best
    return {"what": "gemm", "shapes": shapes, "gflops": total_flop / total_s / 1e9}


def blas_core():
    """The BLAS PyTorch runs on and, for OpenBLAS, the core (kernels) it chose. Debian's torch
    reports BLAS_INFO=generic: libblas.so.3, which the alternatives system points to OpenBLAS."""
    info = next((w.split("=", 1)[1].rstrip(",") for w in torch.__config__.show().split()
                 if w.startswith("BLAS_INFO=")), "?")
    with open("/proc/self/maps") as f:
        loaded = "openblas" in f.read()
    if not loaded:
        return info
    try:  # the OpenBLAS already in this process: same soname, same instance
        import ctypes
        f = ctypes.CDLL("libopenblas.so.0").openblas_get_corename
        f.restype = ctypes.c_char_p
        return f"{info}: OpenBLAS {f().decode()}"
    except (OSError, AttributeError):
        return f"{info}: OpenBLAS (core unknown)"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["train", "decode", "gemm"])
    p.add_argument("--model")
    p.add_argument("--batches")
    p.add_argument("--sources")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none", help="train: bf16 autocast")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--max-length", type=int, default=40)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.what != "gemm" and not a.model:
        p.error(f"{a.what} needs --model")
    r = gemm(a) if a.what == "gemm" else train(a) if a.what == "train" else decode(a)
    r.update({"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
              "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
              "blas_core": blas_core(),
              "load_avg": os.getloadavg()[0]})
    print(json.dumps(r))


if __name__ == "__main__":
    main()
