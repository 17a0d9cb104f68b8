"""Metrics over lists of strings: the numbers ``nazar eval`` prints (docs/metrics.md).

``refs`` is one reference per hypothesis (a list of str) or several reference streams (a list
of such lists, each as long as ``hyps``). Lists of different lengths, an empty input and
integers out of range are ``ValueError``; text that is not UTF-8 (a lone surrogate) is
``UnicodeEncodeError`` naming the list and the line.

    >>> nazar.eval.bleu(["the cat sat"], ["the cat sat down"]).score   # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Union

from . import _nazar
from ._translate import _float

Refs = Union[Sequence[str], Sequence[Sequence[str]]]

__all__ = ["Score", "bleu", "chrf", "wer", "cer", "per", "exact", "aer"]


@dataclass(frozen=True)
class Score:
    """A corpus score: ``score`` (0-100), the metric's ``name``, the ``line`` ``nazar eval``
    prints (sacreBLEU's format for BLEU and chrF), the ``signature`` where the metric has one,
    and the breakdown of ``nazar eval --json`` in ``details``."""

    name: str
    score: float
    line: str
    signature: str = ""
    details: Dict[str, object] = field(default_factory=dict)

    def __float__(self) -> float:
        return self.score

    def __str__(self) -> str:
        return self.line


def _score(d: dict) -> Score:
    d = dict(d)
    return Score(d.pop("name"), d.pop("score"), d.pop("line"), d.pop("signature", ""), d)


def _lines(x: Iterable[str], what: str) -> List[str]:
    """A list of the lines; the extension checks each item (a str, encodable as UTF-8)."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{what} must be a list of strings, not one string")
    return x if isinstance(x, list) else list(x)


def _streams(refs: Refs) -> list:
    """refs as a list: of str (one reference per hypothesis) or of lists (several streams)."""
    if isinstance(refs, (str, bytes)):
        raise TypeError("refs must be a list of strings (or a list of such lists), not one string")
    return [r if isinstance(r, str) else _lines(r, f"refs[{k}]") for k, r in enumerate(refs)]


def bleu(
    hyps: Iterable[str],
    refs: Refs,
    tokenize: str = "13a",
    smooth_method: str = "exp",
    smooth_value: Optional[float] = None,
    lowercase: bool = False,
    max_ngram_order: int = 4,
) -> Score:
    """Corpus BLEU as sacreBLEU 2.x computes it (``nazar eval --metric bleu``)."""
    return _score(
        _nazar.bleu(
            _lines(hyps, "hyps"), _streams(refs), tokenize, smooth_method,
            None if smooth_value is None else _float("smooth_value", smooth_value),
            bool(lowercase), max_ngram_order,
        )
    )


def chrf(
    hyps: Iterable[str],
    refs: Refs,
    char_order: int = 6,
    word_order: int = 0,
    beta: int = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
) -> Score:
    """Corpus chrF (``word_order=2``: chrF++) as sacreBLEU 2.x (``nazar eval --metric chrf``)."""
    return _score(
        _nazar.chrf(
            _lines(hyps, "hyps"), _streams(refs), char_order, word_order, beta,
            bool(lowercase), bool(whitespace), bool(eps_smoothing),
        )
    )


def wer(hyps: Iterable[str], refs: Refs) -> Score:
    """Word error rate, percent (``nazar eval --metric wer``)."""
    return _score(_nazar.error_rate(_lines(hyps, "hyps"), _streams(refs), "wer"))


def cer(hyps: Iterable[str], refs: Refs) -> Score:
    """Character error rate, percent (``nazar eval --metric cer``)."""
    return _score(_nazar.error_rate(_lines(hyps, "hyps"), _streams(refs), "cer"))


def per(hyps: Iterable[str], refs: Refs) -> Score:
    """Position-independent error rate, percent (``nazar eval --metric per``)."""
    return _score(_nazar.error_rate(_lines(hyps, "hyps"), _streams(refs), "per"))


def exact(hyps: Iterable[str], refs: Refs) -> Score:
    """Exact match, percent of segments (``nazar eval --metric exact``)."""
    return _score(_nazar.exact(_lines(hyps, "hyps"), _streams(refs)))


def aer(hyps: Iterable[str], gold: Iterable[str], possible: Iterable[str] = ()) -> Score:
    """Alignment error rate of Pharaoh "i-j" lines against gold lines ("i-j" sure, "i?j"
    possible), percent (``nazar eval --metric aer``)."""
    return _score(
        _nazar.aer(_lines(hyps, "hyps"), _lines(gold, "gold"), _lines(possible, "possible"))
    )
