"""What the PyTorch fixture generators (tests/parity/gen/make_fixtures.py, make_model_fixtures.py,
make_copy_fixtures.py, make_guided_fixtures.py) share: the import of the float64 reference
(python/nazar_torch.py), their files in a directory that several generators write into, the
case-writing main of the model generators, and the tensor comparison of regenerated fixtures
with the committed ones (also used by tests/parity/regenerate_and_compare.py). Each fixture names
its generator in its safetensors metadata ("generator"), so a script replaces and compares only its own files.
"""

import glob
import json
import os
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))  # the repository
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


def cases_main(prog, generator, prefix, cases, build_case, nt, why_missing):
    """`prog --out DIR`: write_cases into DIR."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    return write_cases(prog, a.out, generator, prefix, cases, build_case, nt, why_missing)


def case_model(nt, base, case, seed, adjust=None):
    """(cfg, model, ref) of a model-fixture case: the configuration `base` updated with `case`
    (neither is changed), the float32 model initialised from `seed` (then adjust(model, cfg)
    where given), and its float64 copy in eval mode, the reference the expected values are
    computed with."""
    import torch
    cfg = json.loads(json.dumps(base))
    cfg.update(json.loads(json.dumps(case)))
    cfg = nt.model_config(cfg)
    torch.manual_seed(seed)
    model = nt.Seq2Seq(cfg)
    if adjust:
        adjust(model, cfg)
    ref = nt.Seq2Seq(cfg).double()
    ref.load_state_dict({k: v.detach().double() for k, v in model.state_dict().items()})
    ref.eval()
    return cfg, model, ref


def tensor_differences(f, ta, tb, exact, np, why=""):
    """What differs between the tensors ta and tb (name -> array) of fixture file f, one line
    each: the names; each tensor's dtype and shape; then the values, bit for bit where
    exact(name, array) holds (`why` says why, after "differs"), else within 1e-6 norm-wise
    relative: a float64 reference from another BLAS build may round to a neighbouring value."""
    if sorted(ta) != sorted(tb):
        return [f"{f}: tensor names differ: {sorted(set(ta) ^ set(tb))}"]
    bad = []
    for k in sorted(ta):
        x, y = ta[k], tb[k]
        if x.dtype != y.dtype or x.shape != y.shape:
            bad.append(f"{f}: {k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
        elif exact(k, x):
            if not np.array_equal(x, y):
                bad.append(f"{f}: {k} differs{why}")
        else:
            scale = max(float(np.abs(y).max(initial=0.0)), 1e-30)
            err = float(np.abs(x.astype(np.float64) - y).max(initial=0.0)) / scale
            if not err <= 1e-6:
                bad.append(f"{f}: {k}: relative difference {err:.3g} > 1e-6")
    return bad
