"""nazar.train: the command line's trainer, configured the same way (docs/training.md)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from . import _nazar
from ._translate import _path, _utf8

PathLike = Union[str, "os.PathLike[str]"]
Config = Union[Mapping[str, Any], PathLike, None]


@dataclass(frozen=True)
class TrainResult:
    """What a run ended with. ``model_path`` is ``save_dir/model.safetensors`` (empty when the
    run was stopped early by the callback: then ``save_dir/last.safetensors`` is the
    checkpoint to resume from). ``averaged`` (with ``average_best``) describes
    ``save_dir/averaged.safetensors``: the steps it averaged and its whole-dev scores."""

    model_path: str
    save_dir: str
    step: int
    skipped: int
    target_tokens: int
    interrupted: bool
    early_stopped: bool
    last_train_loss: float
    last_valid: Optional[Dict[str, Any]]
    config: Dict[str, Any] = field(repr=False, default_factory=dict)
    # average_best: {"path": save_dir/averaged.safetensors, "steps": the validations averaged,
    # best first, "valid": its scores on the whole dev set}; None without average_best
    averaged: Optional[Dict[str, Any]] = None


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        # values, paths included, are stored in checkpoints as UTF-8
        return _utf8(key, str(value))
    if isinstance(value, os.PathLike):
        return _utf8(key, os.fspath(value))
    raise TypeError(f"{key}: expected a number, bool, str or path, got {type(value).__name__}")


def _check_config(value: Any, where: str) -> None:
    """Every str of a configuration dict encodable as UTF-8 (UnicodeEncodeError naming it)."""
    if isinstance(value, str):
        _utf8(where, value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_config(k, f"{where} key")
            _check_config(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_config(v, f"{where}[{i}]")


def _args(config: Config, overrides: Mapping[str, Any], resume: Optional[PathLike]):
    yaml_text, source, path = "", "", b""
    if isinstance(config, Mapping):
        _check_config(config, "config")
        # JSON is YAML: the dict goes through the same reader as a YAML file, so keys, sections,
        # types and errors are those of `nazar train --config` (errors say "config: ...").
        yaml_text, source = json.dumps(dict(config)), "config"
    elif config is not None:
        path = _path("config", config)
    items: List[Tuple[str, str]] = [
        (_utf8("keyword argument", k), _text(k, v)) for k, v in overrides.items()
    ]
    return yaml_text, source, path, items, b"" if resume is None else _path("resume", resume)


def train(
    config: Config = None,
    *,
    resume: Optional[PathLike] = None,
    overwrite: bool = False,
    callback: Optional[Callable[[Dict[str, Any]], Optional[bool]]] = None,
    **overrides: Any,
) -> TrainResult:
    """Trains a model exactly as ``nazar train`` does: same configuration keys (a YAML path or a
    dict, flat or grouped under ``data``/``model``/``training``; keyword overrides win, as
    flags do), same data handling, same files in ``save_dir``, same determinism (same seed and
    thread count: bit-identical model files).

    ``callback(record)`` receives each record of the metrics log: ``{"type": "train", "step",
    "epoch", "loss", "tokens_per_s", "lr", "grad_norm"}`` every ``log_interval`` updates and
    ``{"type": "valid", "step", "loss", "perplexity", "accuracy", "exact", "bleu", ...}`` after
    each validation; returning ``False`` stops the run as Ctrl-C does: the next update completes,
    ``save_dir/last.safetensors`` is written and ``result.interrupted`` is set. Ctrl-C
    (KeyboardInterrupt, in the main thread) finishes the update in flight, writes
    ``save_dir/last.safetensors`` and raises KeyboardInterrupt; ``train(resume=save_dir)``
    continues bit for bit. The GIL is released while training. Progress lines go to stderr
    as on the command line (``progress="none"`` hides them).

    As on the command line, a ``save_dir`` that holds another run is refused unless ``resume``
    continues it or ``overwrite=True`` replaces it (its model, best and last files are removed).

    Errors: ``ValueError`` with the command line's one-line message for a configuration
    mistake (unknown key, bad value, missing file), :class:`nazar.Error` for bad data."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    return TrainResult(
        **_nazar.train(*_args(config, overrides, resume), bool(overwrite), callback)
    )


def resolve_config(
    config: Config = None, *, resume: Optional[PathLike] = None, **overrides: Any
) -> Dict[str, Any]:
    """The complete configuration a :func:`train` call would use (every key), without reading
    any data."""
    return _nazar.resolve_config(*_args(config, overrides, resume))


def config_keys() -> List[Dict[str, Any]]:
    """Every configuration key: name, section, default (text), help, and whether it may change
    on resume."""
    return [
        {"key": k, "section": s, "default": d, "help": h, "resumable": r}
        for (k, s, d, h, r) in _nazar.config_keys()
    ]
