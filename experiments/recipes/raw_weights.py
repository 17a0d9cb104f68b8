#!/usr/bin/env python3
"""Write a model file holding a checkpoint's raw weights (its train.raw.<name> tensors) instead of
its model part, which is the moving average when the run had ema_decay: to measure EMA against
the raw weights of the same step. Standard library only.
Usage: raw_weights.py CHECKPOINT OUT"""
import json
import struct
import sys


def main(src, dst):
    data = open(src, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    if not any(k.startswith("train.raw.") for k in header):
        sys.exit(f"raw_weights.py: {src} holds no train.raw.* tensors (a run without ema_decay?)")
    out, blobs, off = {}, [], 0
    for name, info in sorted(header.items()):
        if name.startswith("train.") or name.startswith("optim."):
            continue
        raw = header.get("train.raw." + name)
        if raw is None and name == "generator.weight":  # tied: the raw target embedding
            raw = header.get("train.raw.decoder.embedding.weight")
        if raw is None:
            sys.exit(f"raw_weights.py: {src} has no train.raw.{name}")
        b, e = raw["data_offsets"]
        out[name] = {"dtype": info["dtype"], "shape": info["shape"],
                     "data_offsets": [off, off + e - b]}
        blobs.append(body[b:e])
        off += e - b
    drop = ("train.state", "train.threads", "train.best_loss")
    out["__metadata__"] = {k: v for k, v in meta.items()
                           if not k.startswith(("optim.", "schedule.")) and k not in drop}
    h = json.dumps(out).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[-1])
    main(sys.argv[1], sys.argv[2])
