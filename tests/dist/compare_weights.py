#!/usr/bin/env python3
"""Compares the F32 tensors of two safetensors files (tests/dist/test_mpirun.sh).

compare_weights.py A B TOL: exit 0 when every weight satisfies |a - b| <= TOL * (1 + |a|) and
the tensor names and shapes agree, else 1; prints the largest relative difference.
compare_weights.py --differ A B TOL: the opposite check (the two files are NOT within TOL), so a
test can show that the comparison tells different training apart.
"""
import json
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def main(argv):
    differ = argv[:1] == ["--differ"]
    if differ:
        argv = argv[1:]
    a_path, b_path, tol = argv[0], argv[1], float(argv[2])
    a, b = load(a_path), load(b_path)
    if sorted(a) != sorted(b):
        print(f"tensor names differ: {sorted(set(a) ^ set(b))}")
        return 1
    worst, where = 0.0, ""
    for name in a:
        if a[name].shape != b[name].shape:
            print(f"{name}: shape {a[name].shape} vs {b[name].shape}")
            return 1
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        rel = float(np.max(np.abs(x - y) / (1 + np.abs(x)), initial=0.0))
        if rel > worst:
            worst, where = rel, name
    within = worst <= tol
    print(f"max |a-b|/(1+|a|) = {worst:.3g} (at {where}); tolerance {tol:g}: "
          f"{'within' if within else 'outside'}")
    return 0 if within != differ else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
