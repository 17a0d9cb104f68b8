#!/usr/bin/env python3
"""Scores en->fr test translations for the copy attention and coverage comparison: BLEU and
chrF (by `nazar eval`), the exact reproduction of format specifiers and command-line options, and the
rate of outputs that repeat a token 4+ times in a row. Prints one tab-separated line:

  NAME BLEU chrF fmt_exact fmt_n opt_exact opt_n any_exact any_n rep4 rep4p2

Items (docs/models.md "Copy attention and coverage on en->fr"):
  format specifier  printf  %[n$][flags][width][.prec][length]conv  (%s %d %1$s %-5.2f %lu %%)
                    brace   {0} {name} {file_name}
  option            --long[-name][=VALUE] or --long[=VALUE] in brackets (--block-signal[=SIG]),
                    and a single-letter -x not inside a word (-G, -v)
For each test sentence whose SOURCE holds at least one item of a kind, the hypothesis reproduces
them exactly when every such source item occurs in it exactly as often as in the source
(a mangled `--block-off[=S]` for `--block-signal[=SIG]` is a miss, so is a duplicated `%s`).
`fmt_exact` / `opt_exact` are the shares (%) of the `fmt_n` / `opt_n` sentences; `any_*` counts
sentences with an item of either kind, all of them reproduced.

Repetition: tokens are runs of word characters or single other non-space characters; an output
counts in `rep4` when one token holding a letter or digit appears 4+ times in a row
(`le le le le`), in `rep4p2` also when it recurs 4+ times at period 2 (`space-space-space-space`).
Both are percentages of all outputs.

usage: score_copy.py NAME SRC REF HYP [--nazar PATH]     (line-aligned files)
       score_copy.py --items-only SRC REF HYP           (items and repetition, no nazar)
       score_copy.py --self-test                        (the regexes on fixed strings)
"""
import argparse
import re
import subprocess
import sys
from collections import Counter

FORMAT = re.compile(
    r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn%]"
    r"|\{[A-Za-z0-9_]*\}")
OPTION = re.compile(r"(?<![\w-])(?:--[A-Za-z0-9][\w-]*(?:\[=[\w.:-]+\]|=[\w.:-]+)?|-[A-Za-z](?![\w-]))")
TOKEN = re.compile(r"\w+|[^\w\s]")


def items(regex, text):
    return Counter(regex.findall(text))


def reproduced(want, hyp):
    got = items_cache(hyp)
    return all(got[k] == v for k, v in want.items())


def items_cache(text):
    return items(FORMAT, text) + items(OPTION, text)


def repeats(text, period):
    toks = TOKEN.findall(text)
    for i in range(len(toks) - 3 * period):
        t = toks[i]
        if any(c.isalnum() for c in t) and all(toks[i + k * period] == t for k in range(1, 4)):
            return True
    return False


def item_stats(src, hyp):
    n = {"fmt": 0, "opt": 0, "any": 0}
    ok = {"fmt": 0, "opt": 0, "any": 0}
    for s, h in zip(src, hyp):
        kinds = {"fmt": items(FORMAT, s), "opt": items(OPTION, s)}
        good = True
        for k, want in kinds.items():
            if not want:
                continue
            n[k] += 1
            hit = reproduced(want, h)
            ok[k] += hit
            good &= hit
        if kinds["fmt"] or kinds["opt"]:
            n["any"] += 1
            ok["any"] += good
    pct = {k: 100.0 * ok[k] / max(n[k], 1) for k in n}
    rep = [100.0 * sum(any(repeats(h, p) for p in range(1, q + 1)) for h in hyp) / max(len(hyp), 1)
           for q in (1, 2)]
    return n, ok, pct, rep


def self_test():
    """The item regexes and the repetition test on fixed strings (ctest scripts.score_copy)."""
    src = ["Usage: %s [-v] --block-signal[=SIG] FILE", "Copied {0} of {name} (%1$s, %-5.2f%%)",
           "no items here", "e-mail and re-run are words, not options"]
    want = [(["%s"], ["-v", "--block-signal[=SIG]"]),
            (["{0}", "{name}", "%1$s", "%-5.2f", "%%"], []), ([], []), ([], [])]
    for s, (f, o) in zip(src, want):
        assert FORMAT.findall(s) == f, (s, FORMAT.findall(s))
        assert OPTION.findall(s) == o, (s, OPTION.findall(s))
    hyp = ["Usage : %s [-v] --block-off[=S] FICHIER", "Copié {0} de {name} (%1$s, %-5.2f%% %%)",
           "rien rien rien rien", "space-space-space-space"]
    n, ok, pct, rep = item_stats(src, hyp)
    assert n == {"fmt": 2, "opt": 1, "any": 2}, n
    assert ok == {"fmt": 1, "opt": 0, "any": 0}, ok  # the mangled option; the extra %% is a miss
    assert rep == [25.0, 50.0], rep
    print("score_copy.py: self-test passed")


def nazar_metric(nazar, metric, ref, hyp):
    out = subprocess.run([nazar, "eval", "--metric", metric, "-b", "--ref", ref, "--hyp", hyp],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().rstrip("\n").split("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("args", nargs="+")
    ap.add_argument("--nazar", default="nazar")
    ap.add_argument("--items-only", action="store_true")
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    a = ap.parse_args()
    if a.items_only:
        if len(a.args) != 3:
            sys.exit("usage: score_copy.py --items-only SRC REF HYP")
        name, (src, ref, hyp) = "-", a.args
    else:
        if len(a.args) != 4:
            sys.exit("usage: score_copy.py NAME SRC REF HYP [--nazar PATH]")
        name, src, ref, hyp = a.args
    S, H = read(src), read(hyp)
    if len(S) != len(H):
        sys.exit(f"score_copy.py: {src} has {len(S)} lines, {hyp} {len(H)}")
    n, ok, pct, rep = item_stats(S, H)
    bleu = chrf = "-"
    if not a.items_only:
        bleu = nazar_metric(a.nazar, "bleu", ref, hyp)
        chrf = nazar_metric(a.nazar, "chrf", ref, hyp)
    print("\t".join([name, bleu, chrf, f"{pct['fmt']:.1f}", str(n["fmt"]), f"{pct['opt']:.1f}",
                     str(n["opt"]), f"{pct['any']:.1f}", str(n["any"]), f"{rep[0]:.2f}",
                     f"{rep[1]:.2f}"]))


if __name__ == "__main__":
    main()
