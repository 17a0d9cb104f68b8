"""nazar: attention-based RNN sequence-to-sequence models (Bahdanau and Luong attention).

A thin Python layer over nazar's C++ library (the extension ``nazar._nazar``): the same
translator, trainer, metrics and model files as the ``nazar`` command line, with Python habits.

    >>> import nazar
    >>> tr = nazar.Translator("model.safetensors")
    >>> out = tr.translate(["3 May 1979"], beam=5, attention=True)
    >>> out[0].text, out[0].score, out[0].attention.shape      # doctest: +SKIP

Errors: ``ValueError`` for a bad argument or configuration, :class:`nazar.Error` (a
``RuntimeError``) for a bad or missing file or invalid input; both carry the one-line message
the command line prints. See docs/python.md.
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

from ._nazar import Error, num_threads, set_num_threads
from ._model import Model, load, save
from ._train import config_keys, resolve_config, train
from ._translate import (
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
    "Alignment",
    "AttentionMap",
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
