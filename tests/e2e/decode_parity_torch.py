#!/usr/bin/env python3
"""nazar's decoders against the PyTorch reference's (python/nazar_torch.py greedy / beam_search).

A random model (PyTorch initialisation, fixed seed; </s> and <unk> made likelier so that beams
finish at different lengths) is saved as a nazar model file with word vocabularies "s4 s5 ..." /
"t4 t5 ...". 100 random source sentences (lengths 0-12) are translated by `nazar translate`
(--beam 1, and --beam 5 with n-best lists, length and coverage penalties) and by the reference in
float64. Outputs must agree token for token; a differing hypothesis is accepted only when it is a
near-tie: its score differs from the reference's by < 1e-4 (float32 vs float64 rounding can
swap candidates whose totals tie to ~1e-6), and at most 3 of them per run.

Usage: decode_parity_torch.py --nazar path/to/nazar [--work DIR]. Exit 77 (skipped) without torch.
Run with Debian's torch: /usr/bin/python3.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
try:
    import torch
    import nazar_torch as nt
except ImportError:
    print("skipped: torch is not available")
    sys.exit(77)
if nt.torch is None:
    print("skipped: torch is not available")
    sys.exit(77)

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
# name: (config, added to the </s> logit bias: how often beams finish before the length limit)
CONFIGS = {
    "bahdanau_gru": ({"src_vocab_size": 24, "tgt_vocab_size": 20, "embedding_size": 16,
                     "encoder": {"hidden_size": 12}, "decoder": {"hidden_size": 20},
                     "attention": {"attention_size": 14}}, 1.0),
    "luong_general_feed": ({"src_vocab_size": 24, "tgt_vocab_size": 20, "embedding_size": 16,
                           "encoder": {"hidden_size": 12},
                           "decoder": {"kind": "luong", "hidden_size": 20, "input_feeding": True},
                           "attention": {"score": "general"}}, 0.3),
}


def make_model(cfg, eos_bias, path):
    torch.manual_seed(1234)
    model = nt.Seq2Seq(cfg)
    with torch.no_grad():
        model.generator.bias[3] += eos_bias  # </s>
        model.generator.bias[1] += 0.5  # <unk>
    vs, vt = cfg["src_vocab_size"], cfg["tgt_vocab_size"]
    meta = {
        "nazar.src_vocab": nt.json.dumps({"specials": SPECIALS, "pieces": [f"s{i}" for i in range(4, vs)]}),
        "nazar.tgt_vocab": nt.json.dumps({"specials": SPECIALS, "pieces": [f"t{i}" for i in range(4, vt)]}),
        "nazar.src_tokenizer": '{"kind":"word"}',
        "nazar.tgt_tokenizer": '{"kind":"word"}',
    }
    nt.save_model(path, model, meta)
    ref, _ = nt.load_model(path, dtype=torch.float64)  # the float32 weights nazar reads, in float64
    ref.eval()
    return ref


def text_of(tokens, sp):
    """What nazar prints: tokens before </s>, without <pad>/<s>; <unk> as "<unk>"."""
    out = []
    for y in tokens:
        if y == sp["eos"]:
            break
        if y in (sp["pad"], sp["bos"]):
            continue
        out.append("<unk>" if y == sp["unk"] else f"t{y}")
    return " ".join(out)


def run_nazar(nazar, model, inputs, flags):
    res = subprocess.run([nazar, "--threads", "1", "translate", "--model", model, "--scores", *flags],
                         input="".join(line + "\n" for line in inputs), capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"nazar translate {' '.join(flags)} failed: {res.stderr}")
    out = {}
    for line in res.stdout.splitlines():
        i, text, score = line.split(" ||| ")
        out.setdefault(int(i), []).append((text, float(score)))
    return out


def compare(label, ours, ref, sp, n_inputs):
    exact, near, bad = 0, [], []
    for i in range(n_inputs):
        got = ours.get(i, [])
        if len(got) != len(ref[i]):
            bad.append(f"{label} sentence {i}: {len(got)} hypotheses, reference {len(ref[i])}")
            continue
        for k, (h, (text, score)) in enumerate(zip(ref[i], got)):
            want = text_of(h["tokens"], sp)
            if text == want and abs(score - h["score"]) < 1e-4 * (1 + abs(h["score"])):
                exact += 1
            elif abs(score - h["score"]) < 1e-4 * (1 + abs(h["score"])):
                near.append(f"{label} sentence {i} rank {k}: '{text}' vs '{want}' (score {score:.6f})")
            else:
                bad.append(f"{label} sentence {i} rank {k}: nazar '{text}' {score:.6f}, "
                           f"reference '{want}' {h['score']:.6f}")
    return exact, near, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nazar", required=True)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="nazar_decode_parity_")
    os.makedirs(work, exist_ok=True)
    failed = False
    for name, (cfg, eos_bias) in CONFIGS.items():
        path = os.path.join(work, f"{name}.safetensors")
        ref_model = make_model(cfg, eos_bias, path)
        sp = ref_model.config["special_ids"]
        rng = random.Random(99)
        srcs = [[rng.randrange(4, cfg["src_vocab_size"]) for _ in range(rng.randint(0, 12))] for _ in range(100)]
        inputs = [" ".join(f"s{y}" for y in s) for s in srcs]

        greedy = nt.greedy(ref_model, srcs)
        ref_g = [[{"tokens": r["tokens"], "score": r["score"]}] for r in greedy]
        ours_g = run_nazar(args.nazar, path, inputs, ["--beam", "1", "--length-penalty", "0"])

        ref_b = nt.beam_search(ref_model, srcs, beam_size=5, n_best=3, alpha=0.6, beta=0.2)
        ours_b = run_nazar(args.nazar, path, inputs,
                           ["--beam", "5", "--n-best", "3", "--length-penalty", "0.6", "--coverage-penalty", "0.2",
                            "--batch", "16"])
        for label, ours, ref in (("greedy", ours_g, ref_g), ("beam5", ours_b, ref_b)):
            exact, near, bad = compare(f"{name} {label}", ours, ref, sp, len(srcs))
            finished = sum(h["tokens"][-1:] == [sp["eos"]] for r in ref for h in r)
            total = sum(len(r) for r in ref)
            status = "ok  " if not bad and len(near) <= 3 else "FAIL"
            print(f"{status} {name} {label}: {exact}/{total} hypotheses identical, {len(near)} near-ties, "
                  f"{len(bad)} mismatches ({finished} of the reference's hypotheses finished)")
            for line in (bad + near)[:10]:
                print("     " + line)
            failed |= status == "FAIL"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
