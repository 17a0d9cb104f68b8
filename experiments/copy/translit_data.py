#!/usr/bin/env python3
"""A generated copy-heavy character task (copy attention): transliteration with
embedded numbers and names.

Each source sentence is 3-6 lowercase words from a fixed lexicon with one or two embedded items,
a number (2-7 digits) or a name (a capitalised random string of 4-9 letters, some with digits).
The target transliterates every lexicon word letter by letter into Cyrillic and copies every item
verbatim. A model must learn both the letter map and when to copy; names and numbers are random,
so they can only be reproduced by copying.

usage: translit_data.py OUT_DIR [--train N] [--test N] [--seed S]
writes OUT_DIR/train.tsv, dev.tsv (500 pairs) and test.tsv, source<TAB>target.
"""
import argparse
import os
import random

LATIN = "abcdefghijklmnopqrstuvwxyz"
CYRILLIC = "абцдефгхийклмнопярстуввхыз"  # one target letter per source letter
MAP = dict(zip(LATIN, CYRILLIC))

LEXICON = """open file save close print error value list table window user name line page view
search replace copy paste delete insert select format start stop send read write check load
update remove create option version server client report folder image color size text number
message""".split()


def item(rng):
    if rng.random() < 0.5:
        return str(rng.randint(10, 9999999))
    n = rng.randint(4, 9)
    s = rng.choice(LATIN).upper() + "".join(rng.choice(LATIN + "0123456789" if rng.random() < 0.3
                                                       else LATIN) for _ in range(n - 1))
    return s


def pair(rng):
    words = [rng.choice(LEXICON) for _ in range(rng.randint(3, 6))]
    src, tgt = list(words), ["".join(MAP[c] for c in w) for w in words]
    for _ in range(rng.randint(1, 2)):
        k = rng.randint(0, len(src))
        x = item(rng)
        src.insert(k, x)
        tgt.insert(k, x)
    return " ".join(src), " ".join(tgt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=20000)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for name, n in (("train", a.train), ("dev", 500), ("test", a.test)):
        with open(os.path.join(a.out, name + ".tsv"), "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write("\t".join(pair(rng)) + "\n")


if __name__ == "__main__":
    main()
