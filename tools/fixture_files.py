"""What the PyTorch fixture generators (tools/make_fixtures.py, make_model_fixtures.py,
make_copy_fixtures.py) share: the import of the float64 reference (python/nazar_torch.py) and
their files in a directory that several generators write into. Each fixture names its generator
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
