"""nazar.Translator against `nazar translate` on the same model and input (docs/python.md)."""

import json
import threading

import numpy as np
import pytest

import nazar
from conftest import SENTENCES, run_cli


def cli_lines(model_path, *args, sentences=SENTENCES):
    p = run_cli("translate", "--model", model_path, *args, input="\n".join(sentences) + "\n")
    return p.stdout.splitlines()


@pytest.fixture(scope="module")
def tr(model_path):
    return nazar.Translator(model_path, replicas=2)


@pytest.mark.parametrize("beam", [1, 5])
def test_text_equals_cli(tr, model_path, beam):
    out = tr.translate(SENTENCES, beam=beam)
    assert [t.text for t in out] == cli_lines(model_path, "--beam", str(beam))
    assert [t.source for t in out] == SENTENCES


def test_nbest_and_scores_equal_cli(tr, model_path):
    out = tr.translate(SENTENCES, beam=4, n_best=3)
    expected = [
        f"{i} ||| {h.text} ||| {h.score:.6f}" for i, t in enumerate(out) for h in t.hypotheses
    ]
    assert expected == cli_lines(model_path, "--beam", "4", "--n-best", "3")
    for t in out:
        assert 1 <= len(t.hypotheses) <= 3
        scores = [h.score for h in t.hypotheses]
        assert scores == sorted(scores, reverse=True)
        assert t.score == t.hypotheses[0].score


def test_hard_alignment_equals_cli(tr, model_path):
    out = tr.translate(SENTENCES, alignment="hard")
    assert [f"{t.text} ||| {t.best.pharaoh()}" for t in out] == cli_lines(
        model_path, "--alignment", "hard"
    )


def test_soft_alignment_equals_cli_and_attention_rows_sum_to_one(tr, model_path):
    out = tr.translate(SENTENCES, alignment="soft")
    lines = cli_lines(model_path, "--alignment", "soft")
    assert len(lines) == len(out)
    for t, line in zip(out, lines):
        text, matrix = line.split(" ||| ")
        assert text == t.text
        a = t.attention
        assert isinstance(a, np.ndarray) and a.dtype == np.float32
        # target x source: one row per output token, then the row of </s> (docs/spec.md §8)
        n = len(t.tokens) + (1 if t.best.finished else 0)
        assert a.shape == (n, len(t.source_tokens))
        np.testing.assert_allclose(a[: len(t.tokens)], np.array(json.loads(matrix)), atol=5e-6)
        # global attention: each row is a softmax over the real source positions
        np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-5)
        assert (a >= 0).all()


def test_attention_flag_and_map(tr):
    t = tr.translate(["a b c d"], beam=1, attention=True)[0]
    assert t.attention is not None and t.alignment is None
    m = t.attention_map()
    assert m.source == t.source_tokens == ["a", "b", "c", "d"]
    assert m.target[: len(t.tokens)] == t.tokens
    assert m.weights.shape == (len(m.target), len(m.source))
    assert tr.translate(["a"], beam=1)[0].attention is None


def test_two_threads_give_the_results_of_one(tr):
    inputs = SENTENCES * 20
    alone = [t.text for t in tr.translate(inputs, beam=3)]
    results = [None, None]

    def work(k):
        results[k] = [t.text for t in tr.translate(inputs, beam=3)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results[0] == alone and results[1] == alone


def test_batch_size_does_not_change_results(tr):
    a = tr.translate(SENTENCES, beam=5, batch_size=1)
    b = tr.translate(SENTENCES, beam=5, batch_size=64)
    # the texts are equal; scores differ by the rounding of differently shaped products
    assert [t.text for t in a] == [t.text for t in b]
    assert [t.score for t in a] == pytest.approx([t.score for t in b], rel=1e-5, abs=1e-5)


def test_results_pickle(tr):
    import pickle

    out = tr.translate(SENTENCES[:2], attention=True, alignment="hard")
    back = pickle.loads(pickle.dumps(out))
    assert [t.text for t in back] == [t.text for t in out]
    np.testing.assert_array_equal(back[0].attention, out[0].attention)
    tr2 = pickle.loads(pickle.dumps(tr))
    assert [t.text for t in tr2.translate(SENTENCES)] == [t.text for t in tr.translate(SENTENCES)]


def test_errors_are_python_exceptions_with_the_cli_message(tmp_path):
    missing = str(tmp_path / "missing.safetensors")
    with pytest.raises(nazar.Error) as e:
        nazar.Translator(missing)
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert "\n" not in msg and missing in msg
    cli = run_cli("translate", "--model", missing, input="a\n", check=False)
    assert cli.returncode != 0
    assert cli.stderr.strip() == f"nazar: error: {msg}"

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(nazar.Error) as e:
        nazar.Translator(str(bad))
    assert "\n" not in str(e.value)


def test_bad_arguments_are_value_errors(tr):
    with pytest.raises(ValueError, match="beam"):
        tr.translate(["a"], beam=0)
    with pytest.raises(ValueError, match="n_best 3 exceeds beam 2"):
        tr.translate(["a"], beam=2, n_best=3)
    with pytest.raises(ValueError, match="alignment"):
        tr.translate(["a"], alignment="fuzzy")
    with pytest.raises(TypeError):
        tr.translate("a b c")
    with pytest.raises(ValueError, match="replace_unk"):
        tr.translate(["a"], dictionary="dict.tsv")


def test_settings_stored_by_tune_are_the_defaults(model_path, data_paths, tmp_path):
    """`nazar tune -o` stores beam and penalties; arguments left as None take them, given ones win."""
    tuned = str(tmp_path / "tuned.safetensors")
    run_cli("--threads", "1", "tune", "--model", model_path, "--dev", data_paths[1],
            "--metric", "exact", "--beams", "1,3", "--length-penalties", "0,1.5",
            "--coverage-penalties", "0", "--max-length-ratio", "1.5", "-o", tuned)
    plain = nazar.Translator(model_path)
    assert plain.decode_defaults == {}
    t = nazar.Translator(tuned)
    d = t.decode_defaults
    assert d["max_length_ratio"] == 1.5 and d["beam"] in (1, 3)
    assert d["tuned"]["metric"] == "exact" and d["tuned"]["dev"] == data_paths[1]
    explicit = {"beam": d["beam"], "max_length_ratio": 1.5, "max_length_extra": d["max_length_extra"]}
    if "length_penalty" in d:
        explicit.update(length_penalty=d["length_penalty"], coverage_penalty=d["coverage_penalty"])
    assert [x.text for x in t.translate(SENTENCES)] == [
        x.text for x in plain.translate(SENTENCES, **explicit)
    ]
    assert [x.text for x in t.translate(SENTENCES)] == cli_lines(tuned)
    # a given argument wins over the stored one
    assert [x.text for x in t.translate(SENTENCES, beam=4, max_length_ratio=2.0)] == [
        x.text for x in plain.translate(SENTENCES, beam=4)
    ]
    # an n-best list longer than the stored beam widens it
    assert all(len(x.hypotheses) <= 6 for x in t.translate(SENTENCES, n_best=6))
    with pytest.raises(ValueError, match="n_best 6 exceeds beam 2"):
        t.translate(SENTENCES, beam=2, n_best=6)


def test_constraints_and_protect(tr, model_path, tmp_path):
    """Include / exclude phrases as `nazar translate --constraints`; protect as --protect."""
    plain = tr.translate(SENTENCES)
    words = sorted({w for t in plain for w in t.text.split()})
    assert words, "the test model should translate into some words"
    cons = [{"include": [words[0]]}, None, [words[-1]], {"exclude": plain[3].text.split()[:1]}, None, None]
    out = tr.translate(SENTENCES, constraints=cons)
    assert words[0] in out[0].text.split() and out[0].unmet == [] and out[0].best.constraints_met
    assert words[-1] in out[2].text.split()
    assert plain[3].text.split()[0] not in out[3].text.split()
    for i in (1, 4, 5):  # no constraints: as without the option
        assert out[i].text == plain[i].text
    lines = ["\n".join(["" if c is None else json.dumps(c) for c in cons]) + "\n"]
    (tmp_path / "c.jsonl").write_text(lines[0])
    assert [t.text for t in out] == cli_lines(model_path, "--constraints", str(tmp_path / "c.jsonl"))
    # protect: a span the target vocabulary cannot spell is reported, not an error
    res = tr.translate(["a b %s c"], protect=True)
    assert res[0].unmet == ["%s"] and not res[0].best.constraints_met
    res = tr.translate(["a b c"], protect=[r"\bb\b"])
    assert res[0].unmet in ([], ["b"])
    with pytest.raises(ValueError, match="constraints for 1 sentences, 2 sentences given"):
        tr.translate(["a", "b"], constraints=[["x"]])
    with pytest.raises(ValueError, match="unknown key 'require'"):
        tr.translate(["a"], constraints=[{"require": ["x"]}])
    with pytest.raises(TypeError, match="must be a list of strings"):
        tr.translate(["a"], constraints=["x"])
    with pytest.raises(ValueError, match="does not compile"):
        tr.translate(["a"], protect=["("])


def test_shortlist(tr, model_path, data_paths, tmp_path):
    """load_shortlist + translate(shortlist=) as `nazar shortlist` + `translate --shortlist`."""
    table = str(tmp_path / "sl.tsv")
    run_cli("shortlist", "--model", model_path, "--train", data_paths[0], "-o", table)
    sl = tr.load_shortlist(table, frequent=5, best=3)
    assert sl.entries > 0
    out = tr.translate(SENTENCES, shortlist=sl)
    assert [t.text for t in out] == cli_lines(
        model_path, "--shortlist", table, "--shortlist-frequent", "5", "--shortlist-best", "3")
    with pytest.raises(nazar.Error, match="missing.tsv"):
        tr.load_shortlist(tmp_path / "missing.tsv")


def test_stream_is_greedy_and_the_clis(tmp_path):
    """stream=True (nazar translate --stream) on a monotonic model that can stream: the greedy
    output (with beam: the beam's), and `read` (source tokens read at each row) never
    decreasing, within the source."""
    from conftest import model_file, train_with_cli

    model = train_with_cli(str(tmp_path), "--max-steps", "40", "--bidirectional", "false",
                           "--bridge", "zero", "--monotonic", "true")
    tr = nazar.Translator(model)
    streamed = tr.translate(SENTENCES, stream=True)
    assert [t.text for t in streamed] == [t.text for t in tr.translate(SENTENCES, beam=1)]
    assert [t.text for t in streamed] == cli_lines(model, "--stream")
    for t in streamed:
        read = t.best.read
        assert len(read) == len(t.tokens) + (1 if t.best.finished else 0)
        assert read == sorted(read) and all(1 <= r <= len(t.source_tokens) for r in read)
    beamed = tr.translate(SENTENCES, stream=True, beam=3)
    assert [t.text for t in beamed] == [t.text for t in tr.translate(SENTENCES, beam=3,
                                                                     batch_size=1)]
    assert [t.text for t in beamed] == cli_lines(model, "--stream", "--beam", "3")
    for t in beamed:
        read = t.best.read
        assert len(read) == len(t.tokens) + (1 if t.best.finished else 0)
        assert read == sorted(read) and all(1 <= r <= len(t.source_tokens) for r in read)
    with pytest.raises(ValueError, match="n-best 1"):
        tr.translate(SENTENCES, stream=True, beam=3, n_best=2)
    with pytest.raises(ValueError, match="monotonic attention"):
        nazar.Translator(model_file()).translate(SENTENCES, stream=True)
