#!/usr/bin/env python3
"""A generated grapheme-to-phoneme task for the character-level recipe (docs/training.md, Recipes).

Source: one to three pseudo-words in a made-up spelling (syllables drawn at random, some
capitalised, some with a number 0-999 glued on or standing alone). Target: their "pronunciation"
under fixed, context-dependent rules, numbers read out in English words:

  c -> s before e/i/y, else k       g -> j before e/i, else g     ch -> sh, ph -> f, th -> T
  qu -> kw, x -> ks, ck -> k        s between vowels -> z          a doubled consonant -> one
  y -> i (vowel)                    vowel + n/m before a consonant or at the end -> a nasal
                                    vowel (an/am -> ã, en/em -> ẽ, in/im -> ĩ, on/om -> õ, un -> ũ)
  a final e of a word longer than 3 letters is silent          ou -> u, ai -> ɛ, au/eau -> o
  digits -> words joined by '-' ("Tacelle42" -> "tasɛl-forty-two")

Every target is a function of its source, so exact match can reach 100%; the rules need
look-ahead of up to three letters, and numbers need the model to verbalise what it reads.
Usage: gen_g2p.py OUT_DIR [--train N] [--dev N] [--test N] [--seed S]
Writes train.tsv, dev.tsv, test.tsv (source TAB target); the three splits share no source.
"""
import argparse
import os
import random

ONSETS = ["", "b", "c", "d", "f", "g", "j", "l", "m", "n", "p", "r", "s", "t", "v", "x", "z",
          "ch", "ph", "th", "qu", "br", "cl", "gr", "tr", "st", "sc"]
NUCLEI = ["a", "e", "i", "o", "u", "y", "ou", "ai", "au", "eau"]
CODAS = ["", "", "", "n", "m", "s", "r", "l", "ck", "ll", "ss", "tt", "x", "nt"]
VOWELS = set("aeiouy")
NASAL = {"a": "ã", "e": "ẽ", "i": "ĩ", "o": "õ", "u": "ũ"}
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n):
    if n < 20:
        return [ONES[n]]
    if n < 100:
        return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])
    rest = number_words(n % 100) if n % 100 else []
    return [ONES[n // 100], "hundred"] + rest


def pronounce(word):
    w = word.lower()
    out, i = [], 0
    def at(k):
        return w[k] if 0 <= k < len(w) else ""
    while i < len(w):
        c, nxt = w[i], at(i + 1)
        two, three = w[i:i + 2], w[i:i + 3]
        if three == "eau":
            out.append("o"); i += 3; continue
        if two in ("ou", "ai", "au"):
            out.append({"ou": "u", "ai": "ɛ", "au": "o"}[two]); i += 2; continue
        if two in ("ch", "ph", "th", "qu", "ck"):
            out.append({"ch": "sh", "ph": "f", "th": "T", "qu": "kw", "ck": "k"}[two]); i += 2
            continue
        if c in NASAL and nxt in ("n", "m") and (at(i + 2) == "" or at(i + 2) not in VOWELS) \
                and at(i + 2) != nxt:
            out.append(NASAL[c]); i += 2; continue
        if c == "e" and i == len(w) - 1 and len(w) > 3:
            i += 1; continue
        if c not in VOWELS and nxt == c:  # a doubled consonant sounds once
            i += 1; continue
        if c == "c":
            out.append("s" if nxt in ("e", "i", "y") else "k")
        elif c == "g":
            out.append("j" if nxt in ("e", "i") else "g")
        elif c == "s":
            out.append("z" if at(i - 1) in VOWELS and nxt in VOWELS and i > 0 else "s")
        elif c == "x":
            out.append("ks")
        elif c == "y":
            out.append("i")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def make_word(r):
    word = "".join(r.choice(ONSETS) + r.choice(NUCLEI) for _ in range(r.randint(1, 3)))
    word += r.choice(CODAS) + (r.choice(["", "", "e"]))
    return word.capitalize() if r.random() < 0.3 else word


def make_pair(r):
    src, tgt = [], []
    for _ in range(r.randint(1, 3)):
        w = make_word(r)
        roll = r.random()
        if roll < 0.15:  # a number glued on
            n = r.randint(0, 999)
            src.append(f"{w}{n}"); tgt.append(pronounce(w) + "-" + "-".join(number_words(n)))
        elif roll < 0.25:  # a number alone
            n = r.randint(0, 999)
            src.append(str(n)); tgt.append("-".join(number_words(n)))
        else:
            src.append(w); tgt.append(pronounce(w))
    return " ".join(src), " ".join(tgt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=40000)
    ap.add_argument("--dev", type=int, default=500)
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=16)
    a = ap.parse_args()
    r = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    seen = set()
    for name, n in (("test", a.test), ("dev", a.dev), ("train", a.train)):
        with open(os.path.join(a.out, name + ".tsv"), "w", encoding="utf-8") as f:
            k = 0
            while k < n:
                s, t = make_pair(r)
                if s in seen:
                    continue
                seen.add(s)
                f.write(f"{s}\t{t}\n")
                k += 1


if __name__ == "__main__":
    main()
