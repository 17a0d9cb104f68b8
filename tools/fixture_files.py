"""What the PyTorch fixture generators (tools/make_fixtures.py, make_model_fixtures.py,
make_copy_fixtures.py, make_guided_fixtures.py) share: the import of the float64 reference
(python/nazar_torch.py), their files in a directory that several generators write into, and the
case-writing main of the model generators. Each fixture names its generator
in its safetensors metadata ("generator"), so a script replaces and compares only its own files.
"""

import glob
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77  # CTest SKIP_RETURN_CODE: numpy or torch missing


def import_reference():
    """(numpy, nazar_torch, None), or (None, None, why) where numpy or torch is missing."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        import numpy as np
        import nazar_torch as nt
    except ImportError as e:
        return None, None, str(e)
    return np, nt, None


def written_by(path, generator):
    """Whether the safetensors file at path was written by `generator` (its metadata says so)."""
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            meta = json.loads(f.read(min(n, 1 << 20)).decode("utf-8")).get("__metadata__", {})
        return meta.get("generator") == generator
    except (OSError, ValueError, struct.error, AttributeError):
        return False


def files_of(d, generator):
    """The names of the .safetensors files in d that `generator` wrote, sorted."""
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.safetensors"))
                  if written_by(p, generator))


def remove_files_of(d, generator):
    """Creates d if needed and removes the files `generator` wrote there before (never leave a
    stale fixture behind: the C++ tests prefer the regenerated directory)."""
    os.makedirs(d, exist_ok=True)
    for name in files_of(d, generator):
        os.unlink(os.path.join(d, name))


def write_cases(prog, out, generator, prefix, cases, build_case, nt, why_missing):
    """The main of a model-fixture generator: removes `generator`'s old files in `out`, then
    writes model_<prefix>_<case>.safetensors and model_<prefix>_<case>_expect.safetensors for
    every case from build_case(name, seed) -> (model, model_meta, tensors, meta), each case seeded
    from its name. Returns the exit code (SKIP when numpy or torch is missing: why_missing)."""
    remove_files_of(out, generator)
    if nt is None:
        print(f"{prog}: {why_missing} (apt install python3-numpy python3-torch); skipped")
        return SKIP
    import torch
    import zlib
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for name in sorted(cases):
        model, model_meta, tensors, meta = build_case(name, zlib.crc32(name.encode()) % 1000003)
        base = os.path.join(out, f"model_{prefix}_{name}")
        nt.save_model(base + ".safetensors", model, model_meta)
        nt.save_safetensors(base + "_expect.safetensors", tensors, meta)
    print(f"{prog}: {2 * len(cases)} files in {out}")
    return 0
