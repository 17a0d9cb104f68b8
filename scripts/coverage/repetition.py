#!/usr/bin/env python3
"""Share of lines in which one whitespace token occurs 4 or more times in a row.

  repetition.py FILE   ->   "3.17% (71 of 2236 lines)"
"""
import sys


def repeats(tokens, n=4):
    run = 1
    for a, b in zip(tokens, tokens[1:]):
        run = run + 1 if a == b else 1
        if run >= n:
            return True
    return False


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hit = sum(repeats(line.split()) for line in lines)
    print(f"{100.0 * hit / max(len(lines), 1):.2f}% ({hit} of {len(lines)} lines)")


if __name__ == "__main__":
    main()
