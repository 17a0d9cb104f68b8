#!/usr/bin/env python3
"""Python call overhead and Translator vs CLI throughput (docs/python.md "Speed").

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_translate.py \
        --nazar build/nazar [--sentences 2048] [--threads 2]

1. Overhead per call (one thread, process CPU time): Translator.translate of one short
   sentence (greedy) through the whole Python layer, through the raw binding, and the raw
   binding with an empty list (crossing into C++ and back, GIL release included, no decoding).
2. Throughput at batch 64, beam 5 and greedy: sentences/s of Translator.translate over the
   same input as `nazar translate --batch 64`, per wall second and per CPU second (the CPU
   figure is the comparable one on a loaded machine); the CLI's time has its start-up
   (process, model load: `nazar translate` of an empty input) subtracted, the Python time
   excludes loading. Best of --repeat runs.
The model: 1 training step of a mid-size word model (vocabulary ~2,000, embeddings 256,
bi-GRU 256, decoder 512, Bahdanau) on generated sentences: the weights are barely trained,
which does not change the work per sentence (outputs stop at the length limit or </s>).
"""

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import nazar


def make_model(work, threads):
    r = random.Random(0)
    words = [f"w{i}" for i in range(2000)]
    train = os.path.join(work, "train.tsv")
    with open(train, "w") as f:
        for _ in range(4000):
            s = [r.choice(words) for _ in range(r.randint(8, 25))]
            f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
    res = nazar.train(
        {"tokenizer": "word", "embedding_size": 256, "hidden_size": 256, "decoder_hidden_size": 512,
         "decoder": "bahdanau", "attention": "additive", "batch_size": 64},
        train=train, save_dir=os.path.join(work, "run"), max_steps=1, progress="none",
        threads=threads)
    r = random.Random(1)
    sents = [" ".join(r.choice(words) for _ in range(r.randint(8, 25))) for _ in range(4096)]
    return res.model_path, sents


def per_call(fns, n):
    """Median CPU time per call of each function, interleaved so that load hits all alike
    (process CPU time: robust to other work on a shared machine; run with one thread)."""
    times = [[] for _ in fns]
    for _ in range(7):
        for k, fn in enumerate(fns):
            t = time.process_time()
            for _ in range(n):
                fn()
            times[k].append((time.process_time() - t) / n)
    return [statistics.median(t) for t in times]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_time(nazar_bin, model, text, threads, beam):
    """(wall s, CPU s) of `nazar translate --batch 64` over `text`."""
    path = os.path.join(tempfile.gettempdir(), "nazar-bench-input.txt")
    with open(path, "w") as f:
        f.write(text)
    t, c = time.perf_counter(), children_cpu()
    subprocess.run([nazar_bin, "--threads", str(threads), "translate", "--model", model, "--batch", "64",
                    "--beam", str(beam), "--input", path], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, children_cpu() - c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nazar", default="build/nazar")
    ap.add_argument("--sentences", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        model, sents = make_model(work, a.threads)
        sents = sents[: a.sentences]
        tr = nazar.Translator(model, threads=1)
        one = ["w1 w2 w3"]
        raw = tr._tr
        args = (1, 1, False, False, False, 32, 0.6, 0.0, 2.0, 5, 512, "")
        (empty,) = per_call([lambda: raw.translate([], *args)], 2000)
        raw_one, full_one = per_call(
            [lambda: raw.translate(one, *args), lambda: tr.translate(one, beam=1)], 100)
        print(f"call overhead (empty list, raw binding): {empty * 1e6:.1f} us")
        print(f"one short sentence, greedy: raw binding {raw_one * 1e6:.1f} us, "
              f"Translator.translate {full_one * 1e6:.1f} us "
              f"(Python layer +{(full_one - raw_one) * 1e6:.1f} us)")
        nazar.set_num_threads(a.threads)
        text = "\n".join(sents) + "\n"
        n = len(sents)
        for beam in (1, 5):
            py, cli, start = [], [], []
            for _ in range(a.repeat):
                t, c = time.perf_counter(), time.process_time()
                tr.translate(sents, beam=beam, batch_size=64)
                py.append((time.perf_counter() - t, time.process_time() - c))
                cli.append(cli_time(a.nazar, model, text, a.threads, beam))
                start.append(cli_time(a.nazar, model, "", a.threads, beam))
            for k, what in ((0, "wall"), (1, "CPU")):
                py_s = n / min(x[k] for x in py)
                cli_s = n / (min(x[k] for x in cli) - min(x[k] for x in start))
                print(f"batch 64, beam {beam}, {what} time: Translator.translate {py_s:.1f} "
                      f"sentences/s, nazar translate {cli_s:.1f} sentences/s (start-up "
                      f"subtracted), Python/CLI = {py_s / cli_s:.3f}")


if __name__ == "__main__":
    sys.exit(main())
