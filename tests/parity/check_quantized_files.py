#!/usr/bin/python3
"""Quantized model files (`nazar quantize`) across nazar and PyTorch (CTest: parity.quantized_files).

  check_quantized_files.py --nazar BUILD/nazar --work DIR

A small model trained by `nazar train` (word-reversal task, Bahdanau; wider than the sizes of
check_model_files.py so that the products have several 16-row panels), once with tied target
embeddings (generator.weight stored as the embedding's bytes and scales), then for int8 and bf16:
1. `nazar quantize` writes a file whose weight matrices and both embedding tables are I8 +
   per-row F32 ".scale" (BF16), whose metadata says nazar.precision, and whose biases stay F32.
2. python/nazar_torch.py loads it by dequantizing (w = w_q * s_row); its float64 scores equal
   `nazar score --precision fp32` of the same file (dequantized weights, fp32 products) within
   1e-4 relative per sentence: both read the same numbers.
3. `nazar score` of the file in its own precision (the default: packed int8 / bf16 products,
   activations quantized per row) is within 0.05 + 2% (int8) / 0.02 + 1% (bf16) of PyTorch's
   dequantized score: the bound of activation rounding on this model.
4. `nazar train --resume` from the quantized file is refused with a message naming it.
Exit 0 all good, 1 on a mismatch, 77 (skipped) without torch.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import numpy as np
    import torch
    import nazar_torch as nt
except ImportError as e:
    print(f"check_quantized_files: {e}; skipped")
    sys.exit(77)

TOL_SAME = 1e-4
TOL_OWN = {"int8": (0.05, 0.02), "bf16": (0.02, 0.01)}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def nazar_scores(nazar, model, tsv, precision=None):
    cmd = [nazar, "score", "--model", model, "--tsv", tsv, "--digits", "17"]
    if precision:
        cmd += ["--precision", precision]
    rc, out, err = run(cmd)
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({rc}): {err.strip()}")
    return [float(x) for x in out.split()]


def torch_scores(path, pairs):
    model, meta = nt.load_model(path, dtype=torch.float64)
    sv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.src_vocab"])["pieces"])}
    tv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.tgt_vocab"])["pieces"])}
    unk = model.config["special_ids"]["unk"]
    return nt.score(model, [[sv.get(w, unk) for w in a.split()] for a, _ in pairs],
                    [[tv.get(w, unk) for w in b.split()] for _, b in pairs]).tolist()


def check_contents(q, precision, tag, tied, bad):
    """1. The quantized file's contents: its precision, which tensors are int8 / bf16 (every
    matrix), int8's per-row scales, a tied generator's bytes. Appends to bad; -> (the quantized
    tensors' names, their dtype in the header)."""
    tensors, meta = nt.load_safetensors(q)
    if meta.get("nazar.precision") != precision:
        bad.append(f"{tag}{precision}: nazar.precision = {meta.get('nazar.precision')!r}")
    with open(q, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    want = "I8" if precision == "int8" else "BF16"
    quantized = [k for k, e in header.items() if k != "__metadata__" and e["dtype"] == want]
    if not {"decoder.rnn.weight_hh_l0", "generator.weight", "encoder.embedding.weight",
            "decoder.embedding.weight"} <= set(quantized):
        bad.append(f"{tag}{precision}: {want} tensors {quantized}")
    for k, e in header.items():
        if k != "__metadata__" and e["dtype"] not in (want, "F32"):
            bad.append(f"{tag}{precision}: {k} is {e['dtype']}")
        if k != "__metadata__" and e["dtype"] == "F32" and len(e["shape"]) == 2 \
                and e["shape"][0] > 1:
            bad.append(f"{tag}{precision}: matrix {k} {e['shape']} kept F32")
    for k in quantized:
        if precision == "int8":
            s = header.get(k + ".scale")
            if not s or s["dtype"] != "F32" or s["shape"] != header[k]["shape"][:1]:
                bad.append(f"{tag}int8: {k} has scales {s}")
            elif np.abs(tensors[k]).max() != 127:
                bad.append(f"{tag}int8: {k}: max |w_q| = {np.abs(tensors[k]).max()}, expected 127")
    if tied and (tensors["generator.weight"].tobytes() != tensors["decoder.embedding.weight"].tobytes()
                 or (precision == "int8" and tensors["generator.weight.scale"].tobytes()
                     != tensors["decoder.embedding.weight.scale"].tobytes())):
        bad.append(f"{tag}{precision}, tied: generator.weight is not the embedding's bytes and scales")
    return quantized, want


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nazar", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda f: os.path.join(args.work, f)  # noqa: E731
    rng = random.Random(5)
    pairs = []
    for _ in range(48):
        words = [rng.choice("abcdefghij") for _ in range(rng.randint(1, 7))]
        pairs.append((" ".join(words), " ".join(reversed(words))))
    with open(w("reverse.tsv"), "w") as f:
        f.writelines(f"{a}\t{b}\n" for a, b in pairs)
    bad = []
    for tied in (False, True):  # tied: generator.weight is decoder.embedding.weight (d_out = E)
        tag = "-tied" if tied else ""
        tie = ["--tie-embeddings", "true", "--deep-output-size", "24"] if tied else []
        rc, _, err = run([args.nazar, "train", "--train", w("reverse.tsv"), "--tokenizer", "word",
                          "--embedding-size", "24", "--hidden-size", "20", "--decoder-hidden-size", "40",
                          "--attention-size", "24", "--deep-output", "true", "--max-steps", "30",
                          "--threads", "1", "--save-dir", w(f"trained{tag}")] + tie)
        if rc != 0:
            print(f"check_quantized_files: nazar train{tag} failed ({rc}): {err.strip()[-500:]}")
            return 1
        fp32 = w(f"trained{tag}/model.safetensors")
        for precision in ("int8", "bf16"):
            q = w(f"model{tag}.{precision}.safetensors")
            rc, _, err = run([args.nazar, "quantize", "--model", fp32, "--precision", precision, "-o", q])
            if rc != 0:
                bad.append(f"{tag}nazar quantize --precision {precision} failed ({rc}): {err.strip()}")
                continue
            # 1. the file's contents
            quantized, want = check_contents(q, precision, tag, tied, bad)
            # 2. dequantized PyTorch == nazar fp32 products on the same file
            ref = torch_scores(q, pairs)
            same = nazar_scores(args.nazar, q, w("reverse.tsv"), "fp32")
            worst_same = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(same, ref))
            if len(same) != len(ref) or worst_same > TOL_SAME:
                bad.append(f"{tag}{precision}: nazar --precision fp32 vs PyTorch dequantized: worst relative "
                           f"difference {worst_same:.3g} (bound {TOL_SAME})")
            # 3. the file's own precision (the default)
            own = nazar_scores(args.nazar, q, w("reverse.tsv"))
            a, r = TOL_OWN[precision]
            diffs = [abs(x - y) for x, y in zip(own, ref)]
            over = [i for i, (x, y) in enumerate(zip(own, ref)) if abs(x - y) > a + r * abs(y)]
            if len(own) != len(ref) or over:
                bad.append(f"{tag}{precision}: nazar {precision} products vs PyTorch dequantized: sentences "
                           f"{over[:5]} beyond {a} + {r}|score|")
            if own == same:
                bad.append(f"{tag}{precision}: the file's own precision gave the fp32 scores (not packed?)")
            print(f"check_quantized_files:{tag} {precision}: {len(quantized)} {want} tensors; dequantized "
                  f"PyTorch vs nazar fp32 worst relative {worst_same:.2g}; vs nazar {precision} max "
                  f"|diff| {max(diffs):.3g}, mean {sum(diffs) / len(diffs):.3g}")
            # 4. training from it is refused
            rc, _, err = run([args.nazar, "train", "--resume", q, "--max-steps", "1", "--threads", "1"])
            if rc == 0 or "quantized" not in err:
                bad.append(f"{tag}{precision}: train --resume from the quantized file: rc {rc}, {err.strip()[-300:]}")
    for line in bad:
        print("check_quantized_files:", line)
    print(f"check_quantized_files: {'OK' if not bad else str(len(bad)) + ' problems'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
