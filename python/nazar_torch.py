"""Compatibility shim: the PyTorch reference moved into the package as ``nazar.torch``
(python/nazar/torch.py). ``import nazar_torch`` (tests/parity, tools/make_fixtures.py,
bench/compare, with python/ on sys.path) keeps working without nazar's C++ extension: this
module loads that file directly, without importing the package ``nazar``."""

import importlib.util as _util
import os as _os
import sys as _sys

_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "nazar", "torch.py")
_spec = _util.spec_from_file_location(__name__, _path)
_module = _util.module_from_spec(_spec)
_sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
