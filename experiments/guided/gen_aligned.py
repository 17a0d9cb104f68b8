#!/usr/bin/env python3
"""A synthetic word-level "translation" corpus whose word alignments are known by construction,
for measuring guided alignment (docs/models.md "Guided alignment").

Source words: nouns n0.., adjectives a0.., verbs v0.., function words f0... Translation rules:
  * every word has one fixed translation (noun n7 -> N7, ...),
  * verbs v0..v9 become TWO target words (vK -> VKa VKb: 1-to-2),
  * the function-word pairs "f2k f2k+1" become ONE target word Fk (2-to-1); other function
    words fK -> GK,
  * an adjective directly before a noun moves after it (a3 n5 -> N5 A3: a local reordering).
The gold alignment links each target word to the source word(s) it came from: Pharaoh "i-j",
source index first, 0-based word indices (the units of the word tokenizer).

Writes OUT/{train,dev,test}.tsv (source<TAB>target) and OUT/{train,dev,test}.align, one line per
pair. Seeded: the same seed gives the same files.

  python3 experiments/guided/gen_aligned.py OUT [--train 4000 --dev 300 --test 500 --seed 1]
"""
import argparse
import os
import random

NOUNS, ADJS, VERBS, FUNCS = 60, 30, 40, 20
SPLIT_VERBS = 10  # v0..v9: 1-to-2


def chunk(rng):
    """One phrase of source words: [f f] | f, then [a] n, then v."""
    words = []
    r = rng.random()
    if r < 0.35:
        k = rng.randrange(FUNCS // 2)
        words += [f"f{2 * k}", f"f{2 * k + 1}"]
    elif r < 0.7:
        words.append(f"f{rng.randrange(FUNCS)}")
    if rng.random() < 0.5:
        words.append(f"a{rng.randrange(ADJS)}")
    words.append(f"n{rng.randrange(NOUNS)}")
    if rng.random() < 0.7:
        words.append(f"v{rng.randrange(VERBS)}")
    return words


def translate(src):
    """Target words and gold links (i, j) of a source sentence."""
    units = []  # (target words, source indices) in source order
    i = 0
    while i < len(src):
        w = src[i]
        kind, num = w[0], int(w[1:])
        if kind == "f" and num % 2 == 0 and i + 1 < len(src) and src[i + 1] == f"f{num + 1}":
            units.append(([f"F{num // 2}"], [i, i + 1]))
            i += 2
            continue
        if kind == "v" and num < SPLIT_VERBS:
            units.append(([f"V{num}a", f"V{num}b"], [i]))
        else:
            units.append(([{"n": "N", "a": "A", "v": "V", "f": "G"}[kind] + str(num)], [i]))
        i += 1
    # adjective + noun -> noun + adjective
    k = 0
    while k + 1 < len(units):
        a, n = units[k], units[k + 1]
        if src[a[1][0]][0] == "a" and src[n[1][0]][0] == "n":
            units[k], units[k + 1] = n, a
            k += 2
        else:
            k += 1
    tgt, links = [], []
    for words, srcs in units:
        for w in words:
            for s in srcs:
                links.append((s, len(tgt)))
            tgt.append(w)
    return tgt, links


def sentence(rng):
    src = []
    for _ in range(rng.randint(1, 3)):
        src += chunk(rng)
    return src


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--dev", type=int, default=300)
    ap.add_argument("--test", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    seen = set()
    for name, n in (("train", a.train), ("dev", a.dev), ("test", a.test)):
        with open(os.path.join(a.out, name + ".tsv"), "w") as tsv, \
                open(os.path.join(a.out, name + ".align"), "w") as aln:
            k = 0
            while k < n:
                src = sentence(rng)
                key = " ".join(src)
                if key in seen:  # dev and test sentences never occur in train
                    continue
                seen.add(key)
                tgt, links = translate(src)
                tsv.write(f"{key}\t{' '.join(tgt)}\n")
                aln.write(" ".join(f"{i}-{j}" for i, j in links) + "\n")
                k += 1


if __name__ == "__main__":
    main()
