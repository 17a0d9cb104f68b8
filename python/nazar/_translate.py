"""Translation, scoring, forced alignment and attention heatmaps (docs/python.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _nazar

PathLike = Union[str, "os.PathLike[str]"]


# The command line's --max-line-bytes default (nazar/data/reader.h kDefaultMaxLineBytes): the
# longest sentence translate, score and align accept unless max_line_bytes says otherwise.
MAX_LINE_BYTES = 1 << 16


def _sentences(sentences: Union[str, Iterable[str]], what: str = "sentences") -> List[str]:
    """A list of the sentences; the extension checks each item (str, UTF-8, length)."""
    if isinstance(sentences, (str, bytes)):
        raise TypeError(f"{what} must be a list of strings, not one string (wrap it: [s])")
    return sentences if isinstance(sentences, list) else list(sentences)


def _float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)  # numpy floats and the like
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}") from None
    return float(value)


def _phrases(value, what: str) -> List[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be a list of strings, got {type(value).__name__}")
    for p in value:
        if not isinstance(p, str) or not p:
            raise ValueError(f"{what} must hold non-empty strings, got {p!r}")
    return list(value)


def _constraints(constraints, n: int):
    """translate()'s constraints as one (include, exclude) pair per sentence, or None."""
    if constraints is None:
        return None
    out = []
    for i, c in enumerate(constraints):
        if c is None:
            out.append(([], []))
        elif isinstance(c, dict):
            unknown = set(c) - {"include", "exclude"}
            if unknown:
                raise ValueError(f"constraints[{i}]: unknown key {sorted(unknown)[0]!r} (keys: include, exclude)")
            out.append((_phrases(c.get("include", []), f"constraints[{i}]['include']"),
                        _phrases(c.get("exclude", []), f"constraints[{i}]['exclude']")))
        else:
            out.append((_phrases(c, f"constraints[{i}]"), []))
    if len(out) != n:
        raise ValueError(f"constraints for {len(out)} sentences, {n} sentences given")
    return out


def _protect(protect) -> Tuple[bool, List[str]]:
    """translate()'s protect: (the built-in expressions?, more expressions)."""
    if isinstance(protect, bool):
        return protect, []
    return True, [_utf8("protect", str(r)) for r in protect]


def _optional_float(name: str, value) -> Optional[float]:
    return None if value is None else _float(name, value)


def _utf8(name: str, text: str) -> str:
    """``text`` when it can be encoded as UTF-8, else a UnicodeEncodeError naming ``name``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UnicodeEncodeError(
            e.encoding, e.object, e.start, e.end,
            f"{name} cannot be encoded as UTF-8 ({e.reason}; a lone surrogate is not text)",
        ) from None
    return text


def _path(name: str, path) -> bytes:
    """A path as the bytes the file system sees (os.fsencode: undecodable names round-trip)."""
    try:
        return os.fsencode(path)
    except TypeError:
        raise TypeError(f"{name} must be a str or os.PathLike, got {type(path).__name__}") from None
    except UnicodeEncodeError as e:
        raise UnicodeEncodeError(
            e.encoding, e.object, e.start, e.end, f"{name} cannot be encoded as a file name"
        ) from None


@dataclass(frozen=True)
class AttentionMap:
    """One heatmap: rows are output tokens (ending ``</s>`` when the hypothesis finished),
    columns source tokens, ``weights[t, i]`` the attention α of docs/spec.md §1.

    In a notebook it draws itself (``_repr_svg_`` / ``_repr_html_``) with the renderer of
    ``nazar attention --svg``; :meth:`to_matplotlib` draws it on matplotlib axes."""

    source: List[str]
    target: List[str]
    weights: np.ndarray = field(repr=False)  # (T, S) float32
    source_text: str = ""
    target_text: str = ""
    caption: str = ""

    def to_svg(self, standalone: bool = True) -> str:
        """The SVG of ``nazar attention --svg`` (standalone: with the ``<?xml?>`` prologue)."""
        return _nazar.render_svg(
            self.source,
            self.target,
            self.weights,
            self.source_text,
            self.target_text,
            self.caption,
            bool(standalone),
        )

    def to_terminal(self, color: bool = False) -> str:
        """The text heatmap ``nazar attention`` prints (ANSI colours when ``color``)."""
        return _nazar.render_terminal(self.source, self.target, self.weights, bool(color))

    def _repr_svg_(self) -> str:
        return self.to_svg(standalone=False)

    def _repr_html_(self) -> str:
        return self.to_svg(standalone=False)

    def to_matplotlib(self, ax=None, cmap: str = "Reds"):
        """Draws the heatmap on ``ax`` (a new figure's axes when None) and returns the axes.
        Needs matplotlib (Debian ``python3-matplotlib``)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover - optional dependency
            raise ImportError("to_matplotlib needs matplotlib (apt-get install python3-matplotlib)") from e
        if ax is None:
            _, ax = plt.subplots(figsize=(0.4 * len(self.source) + 2, 0.4 * len(self.target) + 1.5))
        ax.imshow(self.weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="equal")
        ax.set_xticks(range(len(self.source)))
        ax.set_xticklabels(self.source, rotation=90)
        ax.set_yticks(range(len(self.target)))
        ax.set_yticklabels(self.target)
        ax.xaxis.tick_top()
        if self.caption:
            ax.set_xlabel(self.caption)
        return ax


@dataclass(frozen=True)
class Hypothesis:
    """One output of beam search (docs/decoding.md)."""

    text: str  # detokenised output, without </s>
    tokens: List[str]  # output pieces (after unknown-word replacement), without </s>
    score: float  # log p / lp + cp, what the n-best list is sorted by
    log_prob: float  # log p(Y | X), Y including </s> when finished
    finished: bool  # False: cut at the maximum length
    alignment: Optional[List[Tuple[int, int]]] = None  # hard links (source, target), on request
    # (n, S) float32: one row per token, then the row of </s> when finished; on request.
    attention: Optional[np.ndarray] = field(default=None, repr=False)
    constraints_met: bool = True  # every include phrase (constraints, protect) is in `text`
    read: Optional[List[int]] = None  # stream=True: source tokens read when each row was emitted

    def pharaoh(self) -> str:
        """The hard alignment as ``nazar translate --alignment hard`` prints it ("0-0 2-1")."""
        if self.alignment is None:
            raise ValueError("no alignment: translate with alignment='hard'")
        return " ".join(f"{s}-{t}" for s, t in self.alignment)


@dataclass(frozen=True)
class Translation:
    """The result for one input sentence: its source tokens and up to ``n_best`` hypotheses,
    best first. ``text``, ``tokens``, ``score``, ``attention`` and ``alignment`` are the best
    hypothesis's."""

    source: str
    source_tokens: List[str]
    hypotheses: List[Hypothesis]
    unmet: List[str] = field(default_factory=list)  # include phrases the best one lacks

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    @property
    def text(self) -> str:
        return self.hypotheses[0].text

    @property
    def tokens(self) -> List[str]:
        return self.hypotheses[0].tokens

    @property
    def score(self) -> float:
        return self.hypotheses[0].score

    @property
    def attention(self) -> Optional[np.ndarray]:
        return self.hypotheses[0].attention

    @property
    def alignment(self) -> Optional[List[Tuple[int, int]]]:
        return self.hypotheses[0].alignment

    def attention_map(self, index: int = 0, caption: str = "") -> AttentionMap:
        """The heatmap of hypothesis ``index`` (translate with ``attention=True``), as
        ``nazar attention`` draws it."""
        h = self.hypotheses[index]
        if h.attention is None:
            raise ValueError("no attention: translate with attention=True")
        target = list(h.tokens)
        if h.attention.shape[0] > len(target):
            target.append("</s>")
        w = np.zeros((len(target), len(self.source_tokens)), dtype=np.float32)
        rows = min(len(target), h.attention.shape[0])
        cols = min(len(self.source_tokens), h.attention.shape[1])
        w[:rows, :cols] = h.attention[:rows, :cols]
        return AttentionMap(list(self.source_tokens), target, w, self.source, h.text, caption)


@dataclass(frozen=True)
class Alignment:
    """Forced decoding of one (source, target) pair, as ``nazar align``."""

    source_tokens: List[str]
    target_tokens: List[str]
    log_prob: float  # log p(target </s> | source), = score()
    attention: np.ndarray = field(repr=False)  # (T + 1, S): target tokens, then </s>
    links: List[Tuple[int, int]] = field(default_factory=list)  # hard links (source, target)
    p_gen: Optional[List[float]] = None  # copy attention: p_gen per target token, else None

    def pharaoh(self) -> str:
        """``nazar align`` 's line: "i-j" pairs, source index first."""
        return " ".join(f"{s}-{t}" for s, t in self.links)

    def attention_map(self, caption: str = "") -> AttentionMap:
        return AttentionMap(
            list(self.source_tokens),
            list(self.target_tokens) + ["</s>"],
            np.ascontiguousarray(self.attention),
            caption=caption,
        )


def _hypotheses(raw, n_src: int) -> List[Hypothesis]:
    """The binding's hypothesis tuples as Hypothesis objects, attention cut to the source."""
    return [
        Hypothesis(text, tokens, score, log_prob, finished, links,
                   None if att is None else att[:, :n_src], met, read)
        for (text, tokens, score, log_prob, finished, links, att, met, read) in raw
    ]


class Translator:
    """A model file loaded once, translating lists of strings (``nazar::Translator``).

    Thread-safe: any number of Python threads may call :meth:`translate` at once; the GIL is
    released while nazar decodes. ``replicas`` decoding sessions serve that many calls at the
    same time (more wait); they share one copy of the weights and add only their buffers. ``threads`` sets the process-wide thread count of nazar's BLAS and loops
    (None leaves it as it is; 0 = all cores)."""

    def __init__(self, path: PathLike, threads: Optional[int] = None, replicas: int = 1):
        self._path = os.fspath(path)
        self._threads = threads
        self._replicas = replicas
        if threads is not None:
            _nazar.set_num_threads(threads)
        self._tr = _nazar.Translator(_path("path", self._path), replicas)
        self._text_model = None  # score / align: loaded on first use

    @property
    def path(self) -> str:
        return self._path

    def load_shortlist(self, path: PathLike, frequent: int = 100, best: int = 50):
        """A vocabulary shortlist table (``nazar shortlist``) for this model, to pass to
        :meth:`translate` as ``shortlist=`` (docs/decoding.md "Shortlists")."""
        return self._tr.load_shortlist(_path("path", path), frequent, best)

    @property
    def decode_defaults(self) -> dict:
        """The decoding settings stored in the model file by ``nazar tune`` (keys among beam,
        length_penalty, coverage_penalty, max_length_ratio, max_length_extra, max_length, and
        "tuned": what they were chosen by); {} when it stores none."""
        return self._tr.decode_defaults

    def __repr__(self) -> str:
        return f"nazar.Translator({self._path!r}, replicas={self._replicas})"

    def __reduce__(self):
        return (Translator, (self._path, self._threads, self._replicas))

    def translate(
        self,
        sentences: Iterable[str],
        beam: Optional[int] = None,
        n_best: int = 1,
        alignment: Optional[str] = None,
        attention: bool = False,
        replace_unk: bool = False,
        batch_size: int = 32,
        length_penalty: Optional[float] = None,
        coverage_penalty: Optional[float] = None,
        max_length_ratio: Optional[float] = None,
        max_length_extra: Optional[int] = None,
        max_length: Optional[int] = None,
        dictionary: Optional[PathLike] = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        cancel: Optional[_nazar.CancelToken] = None,
        constraints: Optional[Sequence[Union[dict, Sequence[str], None]]] = None,
        protect: Union[bool, Sequence[str]] = False,
        shortlist: Optional["_nazar.Shortlist"] = None,
        stream: bool = False,
    ) -> List[Translation]:
        """Translates ``sentences`` (a list of str) with beam search (``beam=1``: greedy), as
        ``nazar translate`` does, and returns one :class:`Translation` per sentence, in order.

        ``beam``, the penalties and the length limits left as None take the settings stored in
        the model file by ``nazar tune`` (:attr:`decode_defaults`), else ``nazar translate`` 's
        defaults: beam 5, length_penalty 0.6, coverage_penalty 0, max_length_ratio 2,
        max_length_extra 5, max_length 512. An ``n_best`` above a stored beam widens the beam.

        ``alignment``: None, ``"hard"`` (fills ``Hypothesis.alignment``) or ``"soft"`` (fills
        ``Hypothesis.attention``, like ``attention=True``). ``attention=True`` keeps each
        hypothesis's attention matrix as a float32 array (target × source). ``replace_unk``
        replaces ``<unk>`` by the most-attended source token (or its entry in ``dictionary``, a
        ``source<TAB>target`` file).

        A sentence longer than ``max_line_bytes`` bytes of UTF-8 (64 KiB, the command line's
        ``--max-line-bytes`` default) is a ``ValueError`` naming it, before any work. Ctrl-C
        (in the main thread) raises ``KeyboardInterrupt`` within a decoder step; ``cancel``, a
        :class:`nazar.CancelToken`, lets another thread stop the call: ``token.cancel()`` makes
        it raise :class:`nazar.Cancelled` within a decoder step.

        ``constraints``: one entry per sentence — ``{"include": [...], "exclude": [...]}``, a
        list of include phrases, or None — as ``nazar translate --constraints``: every include
        phrase appears in the output, no exclude phrase does (docs/decoding.md "Constraints and
        protected spans"). ``protect=True`` copies placeholders, options, URLs and tags of each
        source verbatim (``--protect``); a list of regular expressions protects their matches
        as well (``--protect --protect-regex``). ``Translation.unmet`` lists the include phrases
        the best hypothesis lacks; ``Hypothesis.constraints_met`` says whether it has them all.
        ``shortlist``: a :meth:`load_shortlist` table (``nazar translate --shortlist``).
        ``stream=True``: as if each source arrived token by token (``--stream``; a monotonic
        model that can stream): greedy unless ``beam`` is given, then a token comes once every
        hypothesis begins with it; ``Hypothesis.read`` says when each token came."""
        src = _sentences(sentences)
        cons = _constraints(constraints, len(src))
        use_builtin, regexes = _protect(protect)
        if alignment not in (None, "none", "hard", "soft"):
            raise ValueError(f"alignment must be None, 'hard' or 'soft', got {alignment!r}")
        want_links = alignment == "hard"
        want_attention = bool(attention) or alignment == "soft"
        raw = self._tr.translate(
            src,
            beam,
            n_best,
            want_links,
            want_attention,
            bool(replace_unk),
            batch_size,
            _optional_float("length_penalty", length_penalty),
            _optional_float("coverage_penalty", coverage_penalty),
            _optional_float("max_length_ratio", max_length_ratio),
            max_length_extra,
            max_length,
            b"" if dictionary is None else _path("dictionary", dictionary),
            max_line_bytes,
            cancel,
            cons,
            use_builtin,
            regexes,
            shortlist,
            bool(stream),
        )
        return [Translation(s, toks, _hypotheses(hyps, len(toks)), unmet)
                for s, (toks, hyps, unmet) in zip(src, raw)]

    def _model(self):
        if self._text_model is None:
            self._text_model = _nazar.TextModel(_path("path", self._path))
        return self._text_model

    def score(
        self,
        sources: Iterable[str],
        targets: Iterable[str],
        batch_size: int = 32,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> List[float]:
        """log p(target | source) of each pair under forced decoding (``nazar score``). A
        source or target longer than ``max_line_bytes`` bytes of UTF-8 is a ``ValueError``."""
        return self._model().score(
            _sentences(sources, "sources"), _sentences(targets, "targets"), batch_size,
            max_line_bytes,
        )

    def align(
        self,
        sources: Iterable[str],
        targets: Iterable[str],
        batch_size: int = 32,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> List[Alignment]:
        """Forced-decoding attention and hard alignment of each pair (``nazar align``). A
        source or target longer than ``max_line_bytes`` bytes of UTF-8 is a ``ValueError``."""
        raw = self._model().align(
            _sentences(sources, "sources"), _sentences(targets, "targets"), batch_size,
            max_line_bytes,
        )
        return [Alignment(sp, tp, lp, att, links, pg) for (lp, sp, tp, att, links, pg) in raw]

    def attention(
        self, sentences: Iterable[str], beam: int = 1, batch_size: int = 32, **options
    ) -> List[AttentionMap]:
        """Heatmaps of the translations of ``sentences`` (``nazar attention``; greedy by
        default). ``options``: those of :meth:`translate` (``max_line_bytes``, ``cancel``...)."""
        caption = f"{self._path} · " + ("greedy" if beam == 1 else f"beam {beam}")
        return [
            t.attention_map(caption=caption)
            for t in self.translate(
                sentences, beam=beam, batch_size=batch_size, attention=True, **options
            )
        ]


def _translator(model: Union[PathLike, Translator]) -> Translator:
    return model if isinstance(model, Translator) else Translator(model)


def translate(model: Union[PathLike, Translator], sentences: Iterable[str], **options) -> List[Translation]:
    """``Translator(model).translate(sentences, **options)`` (loads the file each call)."""
    return _translator(model).translate(sentences, **options)


def score(
    model: Union[PathLike, Translator],
    sources: Iterable[str],
    targets: Iterable[str],
    batch_size: int = 32,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> List[float]:
    """log p(target | source) per pair (``nazar score``)."""
    return _translator(model).score(sources, targets, batch_size, max_line_bytes)


def align(
    model: Union[PathLike, Translator],
    sources: Iterable[str],
    targets: Iterable[str],
    batch_size: int = 32,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> List[Alignment]:
    """Forced alignment per pair (``nazar align``)."""
    return _translator(model).align(sources, targets, batch_size, max_line_bytes)


def attention(
    model: Union[PathLike, Translator],
    sentences: Iterable[str],
    beam: int = 1,
    batch_size: int = 32,
    **options,
) -> List[AttentionMap]:
    """Attention heatmaps of the translations (``nazar attention``)."""
    return _translator(model).attention(sentences, beam, batch_size, **options)


def render_html(maps: Sequence[AttentionMap], title: str = "nazar attention") -> str:
    """A self-contained HTML report of several heatmaps (``nazar attention --html``)."""
    return _nazar.render_html(
        [(m.source, m.target, m.weights, m.source_text, m.target_text, m.caption) for m in maps],
        title,
    )
