#!/usr/bin/python3
"""Sequence-reversal data for experiments/reversal/learn-reversal.sh (never committed: written to
a temporary directory).

Sources are random strings of V word tokens (a..x for V = 24), lengths uniform in [min, max];
the target is the source reversed. Writes train.tsv (source<TAB>target) and dev/test as .tsv
plus .src/.tgt line files. Dev and test sources are distinct and never occur in train.
Deterministic in --seed.
"""
import argparse
import os
import random
import string

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--train", type=int, default=100000)
p.add_argument("--dev", type=int, default=500)
p.add_argument("--test", type=int, default=500)
p.add_argument("--vocab", type=int, default=24)
p.add_argument("--min-length", type=int, default=10)
p.add_argument("--max-length", type=int, default=50)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
assert 2 <= a.vocab <= 26 and 1 <= a.min_length <= a.max_length

rng = random.Random(a.seed)
symbols = list(string.ascii_lowercase[: a.vocab])


def sample():
    return tuple(rng.choice(symbols) for _ in range(rng.randint(a.min_length, a.max_length)))


held = set()
sets = {}
for name, n in (("dev", a.dev), ("test", a.test)):
    rows = []
    while len(rows) < n:
        s = sample()
        if s not in held:
            held.add(s)
            rows.append(s)
    sets[name] = rows
train = []
while len(train) < a.train:
    s = sample()
    if s not in held:
        train.append(s)
sets["train"] = train

os.makedirs(a.out, exist_ok=True)
for name, rows in sets.items():
    with open(os.path.join(a.out, name + ".tsv"), "w") as f:
        for s in rows:
            f.write(" ".join(s) + "\t" + " ".join(reversed(s)) + "\n")
    if name != "train":
        with open(os.path.join(a.out, name + ".src"), "w") as f:
            f.writelines(" ".join(s) + "\n" for s in rows)
        with open(os.path.join(a.out, name + ".tgt"), "w") as f:
            f.writelines(" ".join(reversed(s)) + "\n" for s in rows)
