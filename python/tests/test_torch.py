"""nazar.torch (the PyTorch reference, python/nazar/torch/) and nazar's package agree: a model
file loads in PyTorch with the same scores, and a state_dict saved with nazar.save is the same
file again. Skipped where PyTorch is not installed (Debian python3-torch)."""

import os
import sys

import numpy as np
import pytest

import nazar
from conftest import REPO, SENTENCES

torch = pytest.importorskip("torch")


def test_state_dict_round_trip_through_nazar_save(model_path, tmp_path):
    import nazar.torch as nt

    model, meta = nt.load_model(model_path)
    m = nazar.load(model_path)
    out = tmp_path / "from_torch.safetensors"
    nazar.save(out, config=m.config, params=model.state_dict(), metadata=m.metadata)
    with open(model_path, "rb") as f:
        assert out.read_bytes() == f.read()


def test_torch_scores_equal_nazar(model_path):
    import nazar.torch as nt

    model, meta = nt.load_model(model_path, dtype=torch.float64)
    m = nazar.load(model_path)
    vocab = {p: i for i, p in enumerate(m.src_vocab)}
    tvocab = {p: i for i, p in enumerate(m.tgt_vocab)}
    targets = [" ".join(reversed(s.split())) for s in SENTENCES]
    src = [[vocab[w] for w in s.split()] for s in SENTENCES]
    tgt = [[tvocab[w] for w in t.split()] for t in targets]
    ref = [float(x) for x in nt.score(model, src, tgt)]
    np.testing.assert_allclose(nazar.score(model_path, SENTENCES, targets), ref, rtol=1e-4, atol=1e-4)


def test_compatibility_shim_still_imports(tmp_path):
    sys.path.insert(0, os.path.join(REPO, "python"))
    try:
        import nazar_torch
    finally:
        sys.path.pop(0)
    assert os.path.samefile(nazar_torch.__file__, os.path.join(REPO, "python", "nazar", "torch", "__init__.py"))
    assert hasattr(nazar_torch, "load_model") and hasattr(nazar_torch, "Seq2Seq")
