"""Model files as numpy arrays (docs/python.md "Model files")."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

import numpy as np

from . import _nazar
from ._translate import _path, _utf8

PathLike = Union[str, "os.PathLike[str]"]

SRC_VOCAB = "nazar.src_vocab"
TGT_VOCAB = "nazar.tgt_vocab"
SRC_TOKENIZER = "nazar.src_tokenizer"
TGT_TOKENIZER = "nazar.tgt_tokenizer"


@dataclass
class Model:
    """A model file's content: the configuration (``nazar.config``, every hyper-parameter), the
    parameters by weight-naming-contract name (README "Weight names": PyTorch ``state_dict``
    names, ``nn.Linear`` weights ``(out, in)``) as float32 arrays, and the file's other metadata
    strings (vocabularies, tokenizers, training configuration)."""

    config: Dict[str, object]
    params: Dict[str, np.ndarray]
    metadata: Dict[str, str] = field(default_factory=dict)

    def _vocab(self, key: str) -> List[str]:
        if key not in self.metadata:
            raise KeyError(f"the model has no metadata '{key}'")
        v = json.loads(self.metadata[key])
        return list(v.get("specials", ["<pad>", "<unk>", "<s>", "</s>"])) + list(v["pieces"])

    @property
    def src_vocab(self) -> List[str]:
        """Source pieces by id (ids 0-3 are <pad>, <unk>, <s>, </s>)."""
        return self._vocab(SRC_VOCAB)

    @property
    def tgt_vocab(self) -> List[str]:
        """Target pieces by id (ids 0-3 are <pad>, <unk>, <s>, </s>)."""
        return self._vocab(TGT_VOCAB)

    def num_params(self) -> int:
        return int(sum(a.size for a in self.params.values()))

    def __repr__(self) -> str:
        return (
            f"nazar.Model({len(self.params)} tensors, {self.num_params()} parameters, "
            f"decoder={self.config.get('decoder', {}).get('kind')!r}, "
            f"attention={self.config.get('attention', {}).get('score')!r})"
        )


def load(path: PathLike) -> Model:
    """Reads a model file (or a checkpoint's model part) with every check ``nazar translate``
    makes. Raises :class:`nazar.Error` for a missing or invalid file."""
    config_json, params, metadata = _nazar.load_model(_path("path", path))
    meta = {k: v for k, v in metadata.items() if k not in ("nazar.config", "nazar.format")}
    return Model(json.loads(config_json), dict(params), meta)


def save(
    path: PathLike,
    model: Optional[Model] = None,
    *,
    config: Optional[Dict[str, object]] = None,
    params: Optional[Dict[str, np.ndarray]] = None,
    metadata: Optional[Dict[str, str]] = None,
) -> None:
    """Writes a nazar model file: ``save(path, model)`` or ``save(path, config=..., params=...,
    metadata=...)``. Every parameter of the configuration must be given by name with its exact
    shape (``ValueError`` names the first that is missing, extra or misshapen); arrays are
    converted to float32. For a file ``nazar translate`` can use, ``metadata`` carries the
    vocabularies and tokenizers (``nazar.src_vocab``, ``nazar.tgt_vocab``,
    ``nazar.src_tokenizer``, ``nazar.tgt_tokenizer``), e.g. those of :func:`load`. The file is
    written atomically, as nazar writes its own."""
    if model is not None:
        if config is not None or params is not None:
            raise ValueError("give either a Model or config= and params=, not both")
        config, params = model.config, model.params
        metadata = model.metadata if metadata is None else metadata
    if config is None or params is None:
        raise ValueError("save needs a Model, or config= and params=")
    meta = {
        _utf8("metadata key", str(k)): _utf8(f"metadata[{k!r}]", str(v))
        for k, v in (metadata or {}).items()
    }
    arrays = {}
    for name, a in params.items():
        if hasattr(a, "detach"):  # a torch tensor
            a = a.detach().cpu().numpy()
        arrays[_utf8("parameter name", str(name))] = np.ascontiguousarray(a, dtype=np.float32)
    _nazar.save_model(_path("path", path), json.dumps(config), arrays, meta)
