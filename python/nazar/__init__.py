"""nazar: attention-based RNN sequence-to-sequence models (Bahdanau and Luong attention).

A thin Python layer over nazar's C++ library (the extension ``nazar._nazar``): the same
translator, trainer, metrics and model files as the ``nazar`` command line, with Python habits.

    >>> import nazar
    >>> tr = nazar.Translator("model.safetensors")
    >>> out = tr.translate(["3 May 1979"], beam=5, attention=True)
    >>> out[0].text, out[0].score, out[0].attention.shape      # doctest: +SKIP

Errors: ``ValueError`` for a bad argument or configuration (an integer out of its range, a
sentence over ``max_line_bytes``, lists of different lengths), ``TypeError`` for a value of the
wrong type, ``UnicodeEncodeError`` for text that is not UTF-8 (a lone surrogate),
:class:`nazar.Error` (a ``RuntimeError``) for a bad or missing file or invalid input, and
:class:`nazar.Cancelled` (a :class:`nazar.Error`) for a translation stopped by its
:class:`nazar.CancelToken`; each names the argument and carries the one-line message the
command line prints. Ctrl-C during ``translate`` or ``train`` raises ``KeyboardInterrupt``
within a step. See docs/python.md.
"""

try:
    from . import _nazar
except ImportError as e:  # pragma: no cover - depends on how the package was reached
    raise ImportError(
        "nazar's extension module _nazar is not built next to this package "
        f"({__path__[0]}): build the repository with CMake and put build/python on "
        "PYTHONPATH, or install with `cmake --install build` or "
        "`pip install --no-build-isolation .` (docs/python.md)"
    ) from e

from ._nazar import CancelToken, Cancelled, Error, num_threads, set_num_threads
from ._model import Model, load, save
from ._train import config_keys, resolve_config, train
from ._translate import (
    MAX_LINE_BYTES,
    Alignment,
    AttentionMap,
    Hypothesis,
    Translation,
    Translator,
    align,
    attention,
    render_html,
    score,
    translate,
)
from . import eval  # noqa: E402  (nazar.eval.bleu ...)

__version__ = "0.1.0"

__all__ = [
    "MAX_LINE_BYTES",
    "Alignment",
    "AttentionMap",
    "CancelToken",
    "Cancelled",
    "Error",
    "Hypothesis",
    "Model",
    "Translation",
    "Translator",
    "align",
    "attention",
    "config_keys",
    "eval",
    "load",
    "num_threads",
    "render_html",
    "resolve_config",
    "save",
    "score",
    "set_num_threads",
    "train",
    "translate",
]
