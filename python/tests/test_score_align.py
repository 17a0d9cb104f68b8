"""score / align / attention against `nazar score`, `nazar align`, `nazar attention`."""

import json

import numpy as np
import pytest

import nazar
from conftest import SENTENCES, TARGETS, run_cli, write_pairs


def test_score_equals_cli(model_path, tmp_path):
    src, tgt = write_pairs(tmp_path)
    cli = run_cli("score", "--model", model_path, "--src", src, "--tgt", tgt, "--digits", "17")
    got = nazar.score(model_path, SENTENCES, TARGETS)
    assert [f"{s:.17f}" for s in got] == cli.stdout.splitlines()
    assert got[0] < got[2]  # the right reversal is likelier than a wrong one
    # one sentence per batch runs other product shapes (other summation orders): float32
    # rounding, up to ~10 ulps of a sentence's sum (1.0e-6 relative seen, main's binary too)
    assert nazar.Translator(model_path).score(SENTENCES, TARGETS, batch_size=1) == pytest.approx(
        got, rel=1e-5, abs=1e-5
    )


def test_score_and_align_from_threads_at_once(model_path):
    # one Translator, four threads scoring and aligning together (each call has its own
    # buffers over the one model): every result equals the same call made alone
    from concurrent.futures import ThreadPoolExecutor
    tr = nazar.Translator(model_path)
    want_score = tr.score(SENTENCES, TARGETS)
    want_align = [a.log_prob for a in tr.align(SENTENCES, TARGETS)]

    def work(i):
        if i % 2:
            return [a.log_prob for a in tr.align(SENTENCES, TARGETS)]
        return tr.score(SENTENCES, TARGETS)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(work, range(16)))
    for i, g in enumerate(got):
        assert g == (want_align if i % 2 else want_score)


def test_align_equals_cli(model_path, tmp_path):
    src, tgt = write_pairs(tmp_path)
    tr = nazar.Translator(model_path)
    res = tr.align(SENTENCES, TARGETS)
    hard = run_cli("align", "--model", model_path, "--src", src, "--tgt", tgt, "--scores")
    assert [f"{a.log_prob:.6f} ||| {a.pharaoh()}" for a in res] == hard.stdout.splitlines()
    soft = run_cli("align", "--model", model_path, "--src", src, "--tgt", tgt, "--alignment", "soft")
    for a, line in zip(res, soft.stdout.splitlines()):
        assert a.attention.dtype == np.float32
        assert a.attention.shape == (len(a.target_tokens) + 1, len(a.source_tokens))
        np.testing.assert_allclose(a.attention[:-1], np.array(json.loads(line)).reshape(
            len(a.target_tokens), len(a.source_tokens)), atol=5e-6)
        np.testing.assert_allclose(a.attention.sum(axis=1), 1.0, atol=1e-5)
    scores = tr.score(SENTENCES, TARGETS)
    assert [a.log_prob for a in res] == pytest.approx(scores, rel=1e-5, abs=1e-5)


def test_attention_maps_draw_like_the_cli(model_path, tmp_path):
    maps = nazar.attention(model_path, SENTENCES[:2])
    svg = tmp_path / "a.svg"
    run_cli("attention", "--model", model_path, "--svg", str(svg), "--no-terminal",
            input="\n".join(SENTENCES[:2]) + "\n")
    assert maps[0].to_svg() == svg.read_text(encoding="utf-8")
    m = maps[0]
    assert m.weights.shape == (len(m.target), len(m.source)) and m.target[-1] == "</s>"
    assert m._repr_svg_().startswith("<svg") and "<?xml" not in m._repr_svg_()
    assert "<rect" in m._repr_html_()
    html = tmp_path / "a.html"
    run_cli("attention", "--model", model_path, "--html", str(html), "--no-terminal",
            "--title", "t", input="\n".join(SENTENCES[:2]) + "\n")
    assert nazar.render_html(maps, title="t") == html.read_text(encoding="utf-8")
    term = run_cli("attention", "--model", model_path, "--color", "never",
                   input=SENTENCES[0] + "\n").stdout
    assert m.to_terminal(color=False) in term


def test_score_errors(model_path):
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        nazar.score(model_path, ["a", "b"], ["a"])
    with pytest.raises(TypeError):
        nazar.score(model_path, "a", "a")
