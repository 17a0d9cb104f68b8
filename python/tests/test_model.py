"""nazar.load / nazar.save: numpy arrays by the weight-naming contract, round trips, and files
written from Python that the CLI loads and translates identically."""

import numpy as np
import pytest

import nazar
from conftest import SENTENCES, run_cli


def cli_translate(path, beam=5):
    return run_cli("translate", "--model", str(path), "--beam", str(beam),
                   input="\n".join(SENTENCES) + "\n").stdout.splitlines()


def test_load_gives_named_float32_arrays(model_path):
    m = nazar.load(model_path)
    assert m.config["decoder"]["kind"] == "bahdanau"
    names = set(m.params)
    for n in ("encoder.embedding.weight", "decoder.embedding.weight", "attention.query.weight",
              "attention.key.weight", "attention.v.weight", "generator.weight",
              "encoder.rnn.weight_ih_l0", "encoder.rnn.weight_ih_l0_reverse", "bridge.weight"):
        assert n in names, n
    for a in m.params.values():
        assert a.dtype == np.float32 and a.flags.c_contiguous
    assert m.params["attention.v.weight"].shape[0] == 1
    assert m.src_vocab[:4] == ["<pad>", "<unk>", "<s>", "</s>"] and "a" in m.src_vocab
    assert m.params["encoder.embedding.weight"].shape[0] == len(m.src_vocab)


def test_save_of_load_is_byte_identical(model_path, tmp_path):
    out = tmp_path / "copy.safetensors"
    nazar.save(out, nazar.load(model_path))
    with open(model_path, "rb") as f:
        assert out.read_bytes() == f.read()


def test_edited_model_translates_identically_in_cli_and_python(model_path, tmp_path):
    m = nazar.load(model_path)
    rng = np.random.default_rng(5)
    params = {k: (v + rng.normal(0, 0.05, v.shape)).astype(np.float32) for k, v in m.params.items()}
    out = tmp_path / "edited.safetensors"
    nazar.save(out, config=m.config, params=params, metadata=m.metadata)
    back = nazar.load(out)
    for k in params:
        np.testing.assert_array_equal(back.params[k], params[k])
    py = [t.text for t in nazar.Translator(out).translate(SENTENCES, beam=5)]
    assert py == cli_translate(out)


def test_model_from_fresh_arrays(model_path, tmp_path):
    m = nazar.load(model_path)
    rng = np.random.default_rng(1)
    params = {k: rng.uniform(-0.3, 0.3, v.shape) for k, v in m.params.items()}  # float64 in
    out = tmp_path / "fresh.safetensors"
    nazar.save(out, config=m.config, params=params, metadata=m.metadata)
    assert [t.text for t in nazar.translate(out, SENTENCES, beam=3)] == cli_translate(out, beam=3)


def test_save_errors(model_path, tmp_path):
    m = nazar.load(model_path)
    out = str(tmp_path / "x.safetensors")
    p = dict(m.params)
    del p["attention.v.weight"]
    with pytest.raises(ValueError, match="'attention.v.weight'.*missing"):
        nazar.save(out, config=m.config, params=p, metadata=m.metadata)
    p = dict(m.params, **{"attention.v.weight": np.zeros((2, 2), np.float32)})
    with pytest.raises(ValueError, match=r"'attention.v.weight' has shape \(2, 2\)"):
        nazar.save(out, config=m.config, params=p, metadata=m.metadata)
    p = dict(m.params, extra=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="unexpected parameter 'extra'"):
        nazar.save(out, config=m.config, params=p, metadata=m.metadata)
    with pytest.raises(ValueError):
        nazar.save(out, config=dict(m.config, decoder=dict(m.config["decoder"], kind="transformer")),
                   params=m.params)
    with pytest.raises(nazar.Error):
        nazar.load(str(tmp_path / "none.safetensors"))
