"""score / align of a copy-attention model against `nazar score` / `nazar align`: the two front
ends must agree on the numbers of tokens that exist only in a pair's extended vocabulary.

A tiny copy model of the reversal task with a target vocabulary of 5 of the 8 symbols: the other
3 reach the target only by copying (their extended ids, data/extended_vocab.h), so the Python
bindings must build each pair's extended vocabulary as the CLI does to give the same numbers.
"""

import pytest

import nazar
from conftest import SENTENCES, TARGETS, run_cli, train_with_cli, write_pairs


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory):
    return train_with_cli(str(tmp_path_factory.mktemp("copy")), "--copy-attention", "true",
                          "--vocab-size", "9", "--max-steps", "120")


def test_copy_score_equals_cli(copy_model, tmp_path):
    src, tgt = write_pairs(tmp_path)
    cli = run_cli("score", "--model", copy_model, "--src", src, "--tgt", tgt, "--digits", "17")
    got = nazar.score(copy_model, SENTENCES, TARGETS)
    assert [f"{s:.17f}" for s in got] == cli.stdout.splitlines()
    # a copy-only target word is scored as copied: far above −log ε ≈ 27.6 per token
    assert all(s > -27.0 for s in got)
    assert nazar.Translator(copy_model).score(SENTENCES, TARGETS, batch_size=1) == pytest.approx(
        got, rel=1e-6, abs=1e-6)


def test_copy_align_equals_cli(copy_model, tmp_path):
    src, tgt = write_pairs(tmp_path)
    cli = run_cli("align", "--model", copy_model, "--src", src, "--tgt", tgt, "--scores")
    got = nazar.align(copy_model, SENTENCES, TARGETS, batch_size=2)
    scores = nazar.score(copy_model, SENTENCES, TARGETS)
    for a, line, s, t in zip(got, cli.stdout.splitlines(), scores, TARGETS):
        log_p, links, p_gen = line.split(" ||| ")
        assert a.log_prob == pytest.approx(float(log_p), abs=1e-5)
        assert a.log_prob == pytest.approx(s, abs=1e-5)
        assert a.pharaoh() == links
        assert p_gen.split()[0] == "p_gen"
        assert a.p_gen is not None and len(a.p_gen) == len(t.split())
        assert [f"{g:.3f}" for g in a.p_gen] == p_gen.split()[1:]
