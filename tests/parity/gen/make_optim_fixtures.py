#!/usr/bin/python3
"""Writes tests/parity/fixtures/optim_*.safetensors: torch.optim SGD / Adam / AdamW and
torch.nn.utils.clip_grad_norm_ run for a few steps from seeded parameters and gradients.

Run with Debian's torch (1.13):  /usr/bin/python3 tests/parity/gen/make_optim_fixtures.py [--out DIR]

Each file holds (tensor names; the C++ test reads them by name, never by position):
  init.<param>            parameters before the first step
  grad.<t>.<param>        gradient given at step t (t = 1..STEPS), before clipping
  clipped.<t>.<param>     the gradient after clip_grad_norm_ (only when max_norm is set)
  norm.<t>                (1) the total norm clip_grad_norm_ returned
  param.<t>.<param>       parameters after step t
  optim.<buffer>.<param>  optimizer state after the last step (exp_avg, exp_avg_sq,
                          momentum_buffer: PyTorch's state keys = nazar's checkpoint names)
and metadata "config": JSON {"kind", "options", "lr": [per step], "max_norm" (0 = none), "steps"}.
The learning rate changes between steps (as a schedule would) to test that it is re-read.

safetensors is written by hand (struct + json + numpy): 8-byte little-endian header length,
JSON header padded with spaces to a multiple of 8, F32 data in name order.
"""
import argparse
import json
import os
import struct

import numpy as np
import torch

STEPS = 5
SHAPES = {"encoder.rnn.weight_ih_l0": (6, 4), "encoder.rnn.bias_ih_l0": (6,), "generator.weight": (9, 5)}
# Gradient scale per step: with max_norm set, some steps are clipped and some are not.
GRAD_SCALE = [0.1, 2.0, 0.05, 5.0, 1.0]
LR_FACTOR = [1.0, 1.0, 0.5, 0.5, 0.25]

CONFIGS = [
    ("optim_sgd", "sgd", dict(lr=0.1), 0.0),
    ("optim_sgd_momentum", "sgd", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3), 0.0),
    ("optim_sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2), 1.0),
    ("optim_adam", "adam", dict(lr=1e-2), 0.0),
    ("optim_adam_l2", "adam", dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-3, weight_decay=0.1), 0.5),
    ("optim_adamw", "adamw", dict(lr=1e-2, weight_decay=0.05), 1.0),
]


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make(kind, options, max_norm, seed):
    torch.manual_seed(seed)
    params = {n: torch.nn.Parameter(torch.randn(s)) for n, s in SHAPES.items()}
    out = {f"init.{n}": p.detach().numpy().copy() for n, p in params.items()}
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    opt = cls(list(params.values()), foreach=False, **options)  # the single-tensor reference path
    lrs = []
    for t in range(1, STEPS + 1):
        for n, p in params.items():
            p.grad = torch.randn(p.shape) * GRAD_SCALE[t - 1]
            out[f"grad.{t}.{n}"] = p.grad.numpy().copy()
        if max_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)
            out[f"norm.{t}"] = np.array([norm.item()], dtype=np.float32)
            for n, p in params.items():
                out[f"clipped.{t}.{n}"] = p.grad.numpy().copy()
        lr = options["lr"] * LR_FACTOR[t - 1]
        for g in opt.param_groups:
            g["lr"] = lr
        lrs.append(lr)
        opt.step()
        for n, p in params.items():
            out[f"param.{t}.{n}"] = p.detach().numpy().copy()
    for n, p in params.items():
        for key, value in opt.state[p].items():
            if key != "step" and value is not None:
                out[f"optim.{key}.{n}"] = value.numpy().copy()
    opts = dict(options)
    if "betas" in opts:
        opts["beta1"], opts["beta2"] = opts.pop("betas")
    config = {"kind": kind, "options": opts, "lr": lrs, "max_norm": max_norm, "steps": STEPS}
    return out, {"config": json.dumps(config), "torch": torch.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    ap.add_argument("--out", default=os.path.join(root, "tests", "parity", "fixtures"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, (name, kind, options, max_norm) in enumerate(CONFIGS):
        tensors, meta = make(kind, options, max_norm, seed=1000 + i)
        path = os.path.join(args.out, name + ".safetensors")
        write_safetensors(path, tensors, meta)
        print(f"{path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
