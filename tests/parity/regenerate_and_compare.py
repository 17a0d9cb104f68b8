#!/usr/bin/python3
"""Regenerates fixtures with a generator script and checks the committed ones are its output.

  regenerate_and_compare.py --script tests/parity/gen/make_optim_fixtures.py --glob 'optim_*.safetensors' \\
                            --committed tests/parity/fixtures --work BUILD/parity-optim-fixtures

For generators without their own --compare (tests/parity/gen/make_optim_fixtures.py; make_fixtures.py and
make_model_fixtures.py have one). Runs `script --out WORK`, then for every file matching GLOB in
either directory: same file set, same tensor names, dtypes, shapes and metadata (except the
"torch" version string); integer tensors bit-identical; float tensors within 1e-6 (norm-wise
relative: another BLAS build may round a float64 step differently). Exit 77 (skipped) when
torch or numpy is missing, 1 on a difference.
"""

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity", "gen"))
try:
    import numpy as np
    import torch  # noqa: F401  the generators need it
    import nazar_torch as nt
    from fixture_files import tensor_differences  # standard library only
except ImportError as e:
    print(f"regenerate_and_compare: {e}; skipped")
    sys.exit(77)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--glob", required=True)
    ap.add_argument("--committed", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for old in glob.glob(os.path.join(args.work, args.glob)):
        os.unlink(old)
    r = subprocess.run([sys.executable, args.script, "--out", args.work], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
        print(f"regenerate_and_compare: {args.script} failed with {r.returncode}")
        return 1
    names = lambda d: sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, args.glob)))  # noqa: E731
    new, committed = names(args.work), names(args.committed)
    bad = []
    if not new:
        bad.append(f"{args.script} wrote no {args.glob} into {args.work}")
    if new != committed:
        bad.append(f"file sets differ: {sorted(set(new) ^ set(committed))}")
    for f in sorted(set(new) & set(committed)):
        ta, ma = nt.load_safetensors(os.path.join(args.work, f))
        tb, mb = nt.load_safetensors(os.path.join(args.committed, f))
        ma.pop("torch", None)
        mb.pop("torch", None)
        if ma != mb:
            bad.append(f"{f}: metadata differs")
        bad += tensor_differences(f, ta, tb, lambda k, x: x.dtype.kind in "iu", np)
    for line in bad:
        print("regenerate_and_compare:", line)
    print(f"regenerate_and_compare: {len(new)} regenerated vs {len(committed)} committed {args.glob}: "
          f"{'OK' if not bad else str(len(bad)) + ' differences'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
