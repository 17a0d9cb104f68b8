#!/usr/bin/env python3
"""Share of sentences whose copyable items are reproduced exactly (copy attention).

Items are printf format specifiers (%s, %d, %1$s, %-10.3f, %%), brace placeholders ({0}, {name})
and command-line options (--block-signal[=SIG], --suffix=SUFF, -G). For each sentence the items
to reproduce are those found in both the source and the reference (as a multiset: an item the
reference drops or rewrites is not demanded). A sentence counts when the hypothesis holds each of
them at least as often as the source and reference do. Only sentences with at least one such item
are counted.

usage: copy_items.py SRC REF HYP     (one sentence per line, line-aligned)
"""
import re
import sys
from collections import Counter

ITEM = re.compile(
    r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn%]"
    r"|\{[A-Za-z0-9_]*\}"
    r"|(?<![\w-])--?[A-Za-z0-9][\w-]*(?:\[?=[\w.:-]+\]?)?")


def items(text):
    return Counter(ITEM.findall(text))


def main(src_path, ref_path, hyp_path):
    with open(src_path, encoding="utf-8") as f:
        src = f.read().split("\n")
    with open(ref_path, encoding="utf-8") as f:
        ref = f.read().split("\n")
    with open(hyp_path, encoding="utf-8") as f:
        hyp = f.read().split("\n")
    n = min(len(src), len(ref), len(hyp))
    counted = exact = demanded = reproduced = 0
    for s, r, h in zip(src[:n], ref[:n], hyp[:n]):
        want = items(s) & items(r)
        if not want:
            continue
        got = items(h)
        counted += 1
        exact += all(got[k] >= v for k, v in want.items())
        demanded += sum(want.values())
        reproduced += sum(min(got[k], v) for k, v in want.items())
    print(f"sentences with items: {counted}; reproduced exactly: {exact} "
          f"({100.0 * exact / max(counted, 1):.1f}%); items: {reproduced}/{demanded} "
          f"({100.0 * reproduced / max(demanded, 1):.1f}%)")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
