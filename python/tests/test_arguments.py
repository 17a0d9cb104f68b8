"""Arguments are checked before any work, with errors a person can read (docs/python.md
"Errors"): the command line's --max-line-bytes on every sentence, integers in the flags' ranges,
text that is not UTF-8, and the same exception type for the same mistake in every function;
never pybind11's "incompatible function arguments" with the internal signature."""

import time

import numpy as np
import pytest

import nazar
from conftest import SENTENCES, TARGETS, TRAIN_CONFIG

INTERNAL = "incompatible function arguments"


@pytest.fixture(scope="module")
def tr(model_path):
    return nazar.Translator(model_path)


def raises(exc, fn, *match):
    """fn() raises exc; its message holds every string of `match` and no internal signature."""
    with pytest.raises(exc) as e:
        fn()
    msg = str(e.value)
    for m in match:
        assert m in msg, (m, msg)
    assert INTERNAL not in msg and "\n" not in msg, msg
    return msg


def test_a_sentence_over_max_line_bytes_is_refused_before_any_work(tr, model_path):
    t = time.monotonic()
    # today: 39 s and 3.45 GB before an answer
    raises(ValueError, lambda: tr.translate(["a " * 500000]), "sentences[0]", "1000000",
           "max_line_bytes=65536")
    assert time.monotonic() - t < 5  # refused up front (generous: it takes microseconds)
    # bytes of UTF-8 count, not characters: 40,000 'é' are 80,000 bytes
    raises(ValueError, lambda: tr.translate(["a b", "é" * 40000]), "sentences[1]",
           "80000 bytes", "max_line_bytes=65536")
    raises(ValueError, lambda: tr.score(["a"] * 3, ["a", "a", "b " * 40000]), "targets[2]",
           "max_line_bytes")
    raises(ValueError, lambda: tr.align(["a " * 40000], ["a"]), "sources[0]", "max_line_bytes")
    raises(ValueError, lambda: nazar.score(model_path, ["a " * 40000], ["a"]), "sources[0]")
    raises(ValueError, lambda: tr.attention(["a " * 40000]), "sentences[0]")
    # max_line_bytes raises (or lowers) the limit: a positive int
    out = tr.translate(["a " * 40000], beam=1, max_length=3, max_line_bytes=100000)
    assert len(out) == 1 and len(out[0].source_tokens) == 40000
    assert tr.translate(["a b c"], max_line_bytes=5)[0].text == "c b a"
    raises(ValueError, lambda: tr.translate(["a b c d"], max_line_bytes=5), "sentences[0]",
           "7 characters", "max_line_bytes=5")
    assert len(tr.score(["a b"], ["b a"], max_line_bytes=3)) == 1
    raises(ValueError, lambda: tr.align(["a b"], ["b a c"], max_line_bytes=3), "targets[0]")
    raises(ValueError, lambda: tr.translate(["a"], max_line_bytes=0), "max_line_bytes",
           "[1, 1073741824]", "got 0")


@pytest.mark.parametrize(
    "options,message",
    [
        ({"beam": 2**40}, "beam must be in [1, 1024], got 1099511627776"),
        ({"beam": -1}, "beam must be in [1, 1024], got -1"),
        ({"n_best": 0}, "n_best must be in [1, 1024], got 0"),
        ({"batch_size": 2**63}, "batch_size must be in [1, 65536], got a number above 2**63"),
        ({"batch_size": -(2**70)}, "batch_size must be in [1, 65536], got a number below"),
        ({"max_length": 0}, "max_length must be in [1, 1048576], got 0"),
        ({"max_length_extra": 2**40}, "max_length_extra must be in [-2147483648, 2147483647]"),
        ({"max_line_bytes": 2**31}, "max_line_bytes must be in [1, 1073741824]"),
    ],
)
def test_integers_out_of_range_name_the_argument_and_its_range(tr, options, message):
    raises(ValueError, lambda: tr.translate(["a"], **options), message)


def test_every_function_checks_its_integers(tr, model_path):
    raises(ValueError, lambda: tr.score(["a"], ["a"], batch_size=0), "batch_size", "[1, 1048576]")
    raises(ValueError, lambda: tr.align(["a"], ["a"], batch_size=2**40), "batch_size",
           "[1, 65536]")
    raises(ValueError, lambda: nazar.Translator(model_path, replicas=0), "replicas",
           "[1, 1024]")
    raises(ValueError, lambda: nazar.Translator(model_path, threads=2**40), "threads",
           "[0, 1024]")
    raises(ValueError, lambda: nazar.set_num_threads(-1), "threads must be in [0, 1024]")
    raises(ValueError, lambda: nazar.eval.bleu(["a"], ["a"], max_ngram_order=2**40),
           "max_ngram_order must be in [1, 100]")
    raises(ValueError, lambda: nazar.eval.chrf(["a"], ["a"], char_order=0), "char_order")
    raises(ValueError, lambda: nazar.eval.chrf(["a"], ["a"], word_order=-1), "word_order")
    raises(ValueError, lambda: nazar.eval.chrf(["a"], ["a"], beta=-1), "beta must be in [0, ")
    raises(ValueError, lambda: nazar.resolve_config(TRAIN_CONFIG, hidden_size=2**40),
           "hidden_size: 1099511627776 is out of range [1, 65536]")
    # a value of the wrong type is a TypeError naming the argument; numpy's integers are ints
    raises(TypeError, lambda: tr.translate(["a"], beam=2.5), "beam must be an int, got float")
    raises(TypeError, lambda: tr.translate(["a"], beam=True), "beam must be an int, got bool")
    raises(TypeError, lambda: tr.translate(["a"], length_penalty="x"), "length_penalty")
    raises(TypeError, lambda: tr.translate(["a", 3]), "sentences[1] is int, not str")
    raises(TypeError, lambda: nazar.eval.bleu(["a"], ["a"], tokenize=3), "tokenize")
    raises(TypeError, lambda: nazar.train(TRAIN_CONFIG, callback=3), "callback must be callable")
    assert tr.translate(["a b"], beam=np.int64(2))[0].text == "b a"


def test_text_that_is_not_utf8_names_the_argument_and_the_sentence(tr, model_path, tmp_path):
    bad = "a \ud800 b"  # a lone surrogate: no UTF-8 encoding
    msg = raises(UnicodeEncodeError, lambda: tr.translate(["a", "b", bad]), "sentences[2]")
    assert "surrogates not allowed" in msg
    raises(UnicodeEncodeError, lambda: tr.score(["a", "b"], ["a", bad]), "targets[1]")
    raises(UnicodeEncodeError, lambda: tr.align([bad], ["a"]), "sources[0]")
    raises(UnicodeEncodeError, lambda: nazar.eval.bleu(["a", bad], ["a", "b"]), "hyps[1]")
    raises(UnicodeEncodeError, lambda: nazar.eval.wer(["a"], [bad]), "refs[0]")
    raises(UnicodeEncodeError, lambda: nazar.eval.chrf(["a"], [["a"], [bad]]), "refs[1][0]")
    raises(UnicodeEncodeError, lambda: nazar.eval.aer(["0-0"], [bad]), "gold[0]")
    m = nazar.AttentionMap(["a", bad], ["b"], np.zeros((1, 2), dtype=np.float32))
    raises(UnicodeEncodeError, m.to_svg, "source[1]")
    raises(UnicodeEncodeError, lambda: nazar.resolve_config(TRAIN_CONFIG, tokenizer=bad),
           "tokenizer")
    raises(UnicodeEncodeError, lambda: nazar.resolve_config({"model": {"cell": bad}}),
           "config['model']['cell']")
    model = nazar.load(model_path)
    raises(UnicodeEncodeError,
           lambda: nazar.save(str(tmp_path / "m.safetensors"), model, metadata={"k": bad}),
           "metadata['k']")
    # a file name that is not UTF-8 (os.fsencode's surrogate escapes) reaches the file system
    # as bytes; the message shows the byte escaped
    msg = raises(nazar.Error, lambda: nazar.Translator(str(tmp_path / "\udcff.safetensors")),
                 "\\xff.safetensors", "does not exist")


def test_a_length_mismatch_is_a_value_error_in_every_function(tr):
    two, one = ["a", "b"], ["a"]
    raises(ValueError, lambda: tr.score(two, one), "2 sources but 1 targets")
    raises(ValueError, lambda: tr.align(two, one), "2 sources but 1 targets")
    for metric in (nazar.eval.bleu, nazar.eval.chrf, nazar.eval.wer, nazar.eval.cer,
                   nazar.eval.per, nazar.eval.exact):
        # today: RuntimeError from the metrics, ValueError from score and align
        raises(ValueError, lambda: metric(one, two), "line-count mismatch", "1 hyps",
               "2 references")
        raises(ValueError, lambda: metric(two, [two, one]), "2 hyps", "1 references in refs[1]")
    raises(ValueError, lambda: nazar.eval.aer(["0-0"], ["0-0", "1-1"]), "1 hyps",
           "2 gold alignments")
    raises(ValueError, lambda: nazar.eval.aer(["0-0"], ["0-0"], ["0-0", "1-1"]),
           "2 lines of possible links")


def test_an_empty_input_says_so():
    for metric in (nazar.eval.bleu, nazar.eval.chrf, nazar.eval.wer, nazar.eval.cer,
                   nazar.eval.per, nazar.eval.exact):
        # today: "no reference stream given (0 hypotheses)"
        raises(ValueError, lambda: metric([], []), "the input is empty")
        raises(ValueError, lambda: metric([], [[]]), "the input is empty")
        raises(ValueError, lambda: metric(["a"], []), "refs is empty")
    raises(ValueError, lambda: nazar.eval.aer([], []), "the input is empty")
    # what is not empty still scores as `nazar eval` does
    assert nazar.eval.bleu(SENTENCES, TARGETS).score > 0
