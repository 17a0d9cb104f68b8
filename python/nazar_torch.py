"""Compatibility shim: the PyTorch reference is the package ``nazar.torch`` (python/nazar/torch/).
``import nazar_torch`` (tests/parity, the parity fixture generators, bench/compare, with python/
on sys.path) keeps working without nazar's C++ extension: this module loads that package
directly under the name ``nazar_torch``, without importing the package ``nazar``."""

import importlib.util as _util
import os as _os
import sys as _sys

_dir = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "nazar", "torch")
_spec = _util.spec_from_file_location(__name__, _os.path.join(_dir, "__init__.py"),
                                      submodule_search_locations=[_dir])
_module = _util.module_from_spec(_spec)
_sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
