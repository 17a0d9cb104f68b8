"""nazar.eval equals `nazar eval --json` on the same lines."""

import json

import pytest

import nazar
from conftest import run_cli

HYPS = [
    "The cat sat on the mat .",
    "a quick brown fox jumps over the dog",
    "Résumé: naïve café, déjà vu",
    "",
    "hello world hello",
]
REFS = [
    "The cat is sitting on the mat .",
    "the quick brown fox jumped over the lazy dog",
    "Résumé : naive café, déjà vu !",
    "nothing",
    "hello world",
]
REFS2 = [
    "A cat sat on a mat .",
    "a fast brown fox jumps over a dog",
    "resume: naive cafe, deja vu",
    "",
    "hello hello world",
]


def cli(tmp_path, metric, refs, *extra):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    args = ["eval", "--metric", metric, "--hyp", str(hyp), "--json", *extra]
    for k, r in enumerate(refs):
        f = tmp_path / f"ref{k}.txt"
        f.write_text("\n".join(r) + "\n", encoding="utf-8")
        args += ["--ref", str(f)]
    return json.loads(run_cli(*args).stdout)


CASES = [
    ("bleu", lambda r: nazar.eval.bleu(HYPS, r), ()),
    ("bleu", lambda r: nazar.eval.bleu(HYPS, r, tokenize="char", smooth_method="floor",
                                       lowercase=True),
     ("--tokenize", "char", "--smooth-method", "floor", "--lowercase")),
    ("chrf", lambda r: nazar.eval.chrf(HYPS, r), ()),
    ("chrf", lambda r: nazar.eval.chrf(HYPS, r, word_order=2), ("--chrf-word-order", "2")),
    ("wer", lambda r: nazar.eval.wer(HYPS, r), ()),
    ("cer", lambda r: nazar.eval.cer(HYPS, r), ()),
    ("per", lambda r: nazar.eval.per(HYPS, r), ()),
    ("exact", lambda r: nazar.eval.exact(HYPS, r), ()),
]


@pytest.mark.parametrize("refs", [[REFS], [REFS, REFS2]], ids=["1ref", "2refs"])
@pytest.mark.parametrize("metric,fn,flags", CASES)
def test_equal_to_cli(tmp_path, metric, fn, flags, refs):
    expected = cli(tmp_path, metric, refs, *flags)
    got = fn(refs[0] if len(refs) == 1 else refs)
    assert got.score == expected["score"]  # the same double, not just close
    assert got.line == expected["verbose_score"]
    assert got.signature == expected.get("signature", "")
    for k, v in got.details.items():
        assert expected[k] == v, k
    assert float(got) == got.score and str(got) == got.line


def test_aer_equal_to_cli(tmp_path):
    hyps = ["0-0 1-1 2-2", "0-1 1-0", ""]
    gold = ["0-0 1?1 2-2", "0-0 1-1", "0-0"]
    (tmp_path / "h").write_text("\n".join(hyps) + "\n")
    (tmp_path / "g").write_text("\n".join(gold) + "\n")
    expected = json.loads(
        run_cli("eval", "--metric", "aer", "--hyp", str(tmp_path / "h"), "--ref",
                str(tmp_path / "g"), "--json").stdout
    )
    got = nazar.eval.aer(hyps, gold)
    assert got.score == expected["score"] and got.line == expected["verbose_score"]


def test_errors():
    with pytest.raises(ValueError):  # the CLI's usage error: unknown tokenizer
        nazar.eval.bleu(["a"], ["a"], tokenize="14b")
    with pytest.raises((ValueError, nazar.Error)) as e:
        nazar.eval.bleu(["a", "b"], ["a"])  # one reference for two hypotheses
    assert "\n" not in str(e.value)
    with pytest.raises(TypeError):
        nazar.eval.wer("a b", ["a b"])
