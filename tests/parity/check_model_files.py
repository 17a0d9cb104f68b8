#!/usr/bin/python3
"""Model files across nazar and PyTorch, through the `nazar score` CLI (CTest: parity.model_files_cli).

  check_model_files.py --nazar BUILD/nazar --exporter BUILD/tests/nazar_parity_tests --work DIR

1. Runs `exporter --gtest_filter=ParityModelFiles.Export` with NAZAR_PARITY_EXPORT=DIR: for
   every case of tests/parity/gen/make_model_fixtures.py it writes a model initialised and saved by nazar
   (nazar_<case>.safetensors), the case's sentences as text, nazar's in-process scores, the
   PyTorch-written fixture model (torch_<case>) and nazar's re-save of it (resaved_<case>).
2. nazar-initialised model: `nazar score` == TrainPass::score in-process (to the printed 17
   digits, relative 1e-12) and == python/nazar_torch.py's float64 score of the same file
   (relative <= 1e-4 per sentence); nazar_torch loads it and save_model writes the same bytes.
3. PyTorch-written model: `nazar score` == nazar_torch's float64 score (<= 1e-4); nazar's
   re-save loads in PyTorch with bit-identical tensors and the same metadata.
4. `nazar translate` on the PyTorch-written model (beam search with the fixtures' options, and
   greedy = beam 1) prints the n-best texts of nazar_torch.beam_search, scores within 1e-4
   (the fixture generator guards these decisions against near ties).
5. `nazar align --alignment soft` prints nazar_torch's forced-decoding attention weights
   (within 2e-6: the CLI prints 6 significant digits).
6. A model trained by `nazar train` (a few steps on a word-reversal task): model.safetensors and
   the last.safetensors checkpoint load in PyTorch and score as `nazar score` does (<= 1e-4).
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
sys.path.insert(0, os.path.join(ROOT, "tests", "parity", "gen"))
try:
    import numpy as np
    import torch
    import nazar_torch as nt
    from make_model_fixtures import BEAM, CASES
except ImportError as e:
    print(f"check_model_files: {e}; skipped")
    sys.exit(77)

TOL = 1e-4


def nazar_score(nazar, model, src, tgt):
    out = subprocess.run([nazar, "score", "--model", model, "--src", src, "--tgt", tgt, "--digits", "17"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"nazar score --model {model} failed ({out.returncode}): {out.stderr.strip()}")
    return [float(x) for x in out.stdout.split()]


def float64_model_and_ids(path, src, tgt):
    """The model file at path in float64, and the id sequences of the src and tgt files' lines
    (every word in the model's vocabularies)."""
    model, meta = nt.load_model(path, dtype=torch.float64)
    sv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.src_vocab"])["pieces"])}
    tv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.tgt_vocab"])["pieces"])}
    with open(src) as f:
        xs = [[sv[w] for w in line.split()] for line in f]
    with open(tgt) as f:
        ys = [[tv[w] for w in line.split()] for line in f]
    return model, xs, ys


def torch_score(path, src, tgt):
    model, xs, ys = float64_model_and_ids(path, src, tgt)
    return nt.score(model, xs, ys).tolist()


def nazar_translate(nazar, model, src, options):
    """`nazar translate` in the n-best format -> [(line, text, score)]."""
    cmd = [nazar, "translate", "--model", model, "--input", src, "--scores", "--beam", str(options["beam_size"]),
           "--n-best", str(options["n_best"]), "--length-penalty", str(options["alpha"]),
           "--coverage-penalty", str(options["beta"])]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    rows = []
    for line in out.stdout.splitlines():
        i, text, score = line.split(" ||| ")
        rows.append((int(i), text, float(score)))
    return rows


def torch_translate(path, src, options):
    """nazar_torch.beam_search on the same file and sentences, as `nazar translate` prints it:
    Vocab::decode (stop at </s>, skip <pad> and <s>) and the word tokenizer (join with spaces)."""
    model, meta = nt.load_model(path, dtype=torch.float64)
    sv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.src_vocab"])["pieces"])}
    names = json.loads(meta["nazar.tgt_vocab"])
    names = names["specials"] + names["pieces"]
    sp = model.config["special_ids"]
    with open(src) as f:
        xs = [[sv[w] for w in line.split()] for line in f]
    rows = []
    for i, hyps in enumerate(nt.beam_search(model, xs, **options)):
        for h in hyps:
            words = []
            for y in h["tokens"]:
                if y == sp["eos"]:
                    break
                if y not in (sp["pad"], sp["bos"]):
                    words.append(names[y])
            rows.append((i, " ".join(words), h["score"]))
    return rows


def torch_attention(path, src, tgt):
    """Forced-decoding attention weights per pair, (|y|, S_b) (the </s> row left out, as nazar align)."""
    model, xs, ys = float64_model_and_ids(path, src, tgt)
    batch = nt.make_batch(xs, ys, model.config["special_ids"])
    with torch.no_grad():
        _, att = model(batch.src, batch.src_lengths, batch.tgt_in)
    return [att[b, :len(y), :len(x)].numpy() for b, (x, y) in enumerate(zip(xs, ys))]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def check_nazar_written(nazar, w, case):
    """2. A model initialised and saved by nazar: `nazar score`, TrainPass::score and PyTorch agree,
    and PyTorch re-saves the same bytes. -> (problems, worst relative difference, whether the
    case can go on)."""
    bad, worst = [], 0.0
    src, tgt = w(case + ".src"), w(case + ".tgt")
    mine = w(f"nazar_{case}.safetensors")
    cli = nazar_score(nazar, mine, src, tgt)
    with open(w(f"nazar_{case}.scores")) as f:
        inproc = [float(x) for x in f.read().split()]
    ref = torch_score(mine, src, tgt)
    if len(cli) != len(ref) or len(inproc) != len(ref):
        bad.append(f"{case}: {len(cli)} CLI scores, {len(inproc)} in-process, {len(ref)} PyTorch")
        return bad, worst, False
    for i, (c, p, t) in enumerate(zip(cli, inproc, ref)):
        worst = max(worst, rel(c, t))
        if rel(c, p) > 1e-12:
            bad.append(f"{case}: sentence {i}: nazar score CLI {c!r} vs TrainPass::score {p!r}")
        if rel(c, t) > TOL:
            bad.append(f"{case}: sentence {i}: nazar-initialised model: nazar {c!r} vs PyTorch {t!r}")
    model, meta = nt.load_model(mine)
    again = w(f"python_{case}.safetensors")
    nt.save_model(again, model, {k: v for k, v in meta.items() if not k.startswith("nazar.format")})
    with open(mine, "rb") as a, open(again, "rb") as b:
        if a.read() != b.read():
            bad.append(f"{case}: nazar_torch.save_model of nazar's file changes its bytes")
    return bad, worst, True


def check_torch_written(nazar, w, case):
    """3.-5. A model written by PyTorch: scored, decoded, aligned and re-saved by nazar as PyTorch
    does. -> (problems, worst relative score difference)."""
    bad, worst = [], 0.0
    src, tgt = w(case + ".src"), w(case + ".tgt")
    # 3. written by PyTorch, scored and re-saved by nazar
    theirs = w(f"torch_{case}.safetensors")
    cli = nazar_score(nazar, theirs, src, tgt)
    ref = torch_score(theirs, src, tgt)
    for i, (c, t) in enumerate(zip(cli, ref)):
        worst = max(worst, rel(c, t))
        if rel(c, t) > TOL:
            bad.append(f"{case}: sentence {i}: PyTorch-written model: nazar {c!r} vs PyTorch {t!r}")
    # 4. decoding through the CLI: beam search (the fixtures' options) and greedy (beam 1, raw log p)
    for options in (BEAM, {"beam_size": 1, "n_best": 1, "alpha": 0.0, "beta": 0.0}):
        got, want = nazar_translate(nazar, theirs, src, options), torch_translate(theirs, src, options)
        if [(i, t) for i, t, _ in got] != [(i, t) for i, t, _ in want]:
            bad.append(f"{case}: nazar translate --beam {options['beam_size']}: {got} vs PyTorch {want}")
        elif any(abs(a - b) > TOL * abs(b) + 1e-6 for (_, _, a), (_, _, b) in zip(got, want)):
            bad.append(f"{case}: nazar translate --beam {options['beam_size']} scores: {got} vs PyTorch {want}")
    # 5. attention under forced decoding: `nazar align --alignment soft` (6 significant digits)
    out = subprocess.run([nazar, "align", "--model", theirs, "--src", src, "--tgt", tgt, "--alignment",
                          "soft"], capture_output=True, text=True)
    if out.returncode != 0:
        bad.append(f"{case}: nazar align failed ({out.returncode}): {out.stderr.strip()}")
    else:
        got = [json.loads(line) for line in out.stdout.splitlines()]
        want = torch_attention(theirs, src, tgt)
        for i, (g, a) in enumerate(zip(got, want)):
            g = np.array(g, dtype=np.float64)
            if g.size == 0 and a.size == 0:
                continue
            if g.shape != a.shape or np.abs(g - a).max(initial=0.0) > 2e-6:
                bad.append(f"{case}: sentence {i}: nazar align soft attention {g.tolist()} vs PyTorch {a.tolist()}")
        if len(got) != len(want):
            bad.append(f"{case}: nazar align printed {len(got)} matrices for {len(want)} pairs")
    ta, ma = nt.load_safetensors(theirs)
    tb, mb = nt.load_safetensors(w(f"resaved_{case}.safetensors"))
    if sorted(ta) != sorted(tb) or any(not np.array_equal(ta[k], tb[k]) for k in ta) or ma != mb:
        bad.append(f"{case}: nazar's re-save of the PyTorch model has different tensors or metadata")
    m1, _ = nt.load_model(theirs)
    m2, _ = nt.load_model(w(f"resaved_{case}.safetensors"))
    if any(not torch.equal(v, m2.state_dict()[k]) for k, v in m1.state_dict().items()):
        bad.append(f"{case}: PyTorch loads different tensors from nazar's re-save")
    return bad, worst


def check_trained(nazar, work):
    """6. Trained by `nazar train` (word tokens, Luong general + input feeding): the model file and
    the checkpoint load in PyTorch and score as `nazar score` does. -> (problems, worst)."""
    bad, worst = [], 0.0
    trained = os.path.join(work, "trained")
    shutil.rmtree(trained, ignore_errors=True)  # a fresh run: nazar train refuses a used save_dir
    train_tsv = os.path.join(work, "reverse.tsv")
    rng = random.Random(3)
    with open(train_tsv, "w") as f:
        for _ in range(64):
            words = [rng.choice("abcdefg") for _ in range(rng.randint(1, 6))]
            f.write(" ".join(words) + "\t" + " ".join(reversed(words)) + "\n")
    cmd = [nazar, "train", "--train", train_tsv, "--tokenizer", "word", "--embedding-size", "6",
           "--hidden-size", "4", "--decoder", "luong", "--attention", "general", "--input-feeding", "true",
           "--max-steps", "20", "--threads", "1", "--save-dir", trained]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        bad.append(f"nazar train failed ({r.returncode}): {r.stderr.strip()[-500:]}")
        return bad, worst
    for fname in ("model.safetensors", "last.safetensors"):
        path = os.path.join(trained, fname)
        out = subprocess.run([nazar, "score", "--model", path, "--tsv", train_tsv, "--digits", "17"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            bad.append(f"nazar score --model {path} failed: {out.stderr.strip()}")
            continue
        cli = [float(x) for x in out.stdout.split()]
        model, meta = nt.load_model(path, dtype=torch.float64)
        sv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.src_vocab"])["pieces"])}
        tv = {p: i + 4 for i, p in enumerate(json.loads(meta["nazar.tgt_vocab"])["pieces"])}
        unk = model.config["special_ids"]["unk"]
        with open(train_tsv) as f:
            pairs = [line.rstrip("\n").split("\t") for line in f]
        ref = nt.score(model, [[sv.get(w, unk) for w in a.split()] for a, _ in pairs],
                       [[tv.get(w, unk) for w in b.split()] for _, b in pairs]).tolist()
        errs = [rel(c, t) for c, t in zip(cli, ref)]
        worst = max([worst] + errs)
        if len(cli) != len(ref) or max(errs, default=0.0) > TOL:
            bad.append(f"trained {fname}: {len(cli)} nazar scores vs {len(ref)} PyTorch, worst relative "
                       f"difference {max(errs, default=0.0):.3g}")
    return bad, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nazar", required=True)
    ap.add_argument("--exporter", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, NAZAR_PARITY_EXPORT=args.work)
    r = subprocess.run([args.exporter, "--gtest_filter=ParityModelFiles.Export"], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0 or "[  PASSED  ] 1 test" not in r.stdout:
        print(r.stdout[-3000:], r.stderr[-3000:])
        print("check_model_files: the exporter failed")
        return 1
    bad, worst = [], 0.0
    w = lambda f: os.path.join(args.work, f)  # noqa: E731
    for case in sorted(CASES):
        b, x, go_on = check_nazar_written(args.nazar, w, case)
        bad, worst = bad + b, max(worst, x)
        if go_on:
            b, x = check_torch_written(args.nazar, w, case)
            bad, worst = bad + b, max(worst, x)
    b, x = check_trained(args.nazar, args.work)
    bad, worst = bad + b, max(worst, x)
    for line in bad:
        print("check_model_files:", line)
    print(f"check_model_files: {len(CASES)} cases, worst relative score difference nazar CLI vs PyTorch "
          f"{worst:.3g}: {'OK' if not bad else str(len(bad)) + ' problems'}")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
