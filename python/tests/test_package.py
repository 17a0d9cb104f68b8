"""`import nazar` gives the real package: from the repository root (where the C++ folder nazar/
is an importable namespace package), from the build tree, and after `cmake --install`."""

import os
import subprocess
import sys

import pytest

import nazar
from conftest import REPO

BUILD_PACKAGE_ROOT = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
# The tests of the build tree's package (cmake --install, pip install of the source) need it on
# PYTHONPATH; run against an installed wheel (tests/e2e/test_wheel.sh) there is none.
needs_build_tree = pytest.mark.skipif(
    not BUILD_PACKAGE_ROOT, reason="no build tree on PYTHONPATH (testing an installed package)"
)


def python(code, cwd, pythonpath):
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_the_regular_package_wins_over_the_cpp_folder():
    # A regular package (with __init__.py) anywhere on sys.path beats a namespace portion,
    # even one in the current directory that comes first: the C++ folder nazar/ has no
    # __init__.py and never shadows the installed or built package.
    assert os.path.isdir(os.path.join(REPO, "nazar", "core"))
    assert not os.path.exists(os.path.join(REPO, "nazar", "__init__.py"))
    p = python("import nazar, sys; print(nazar.__file__); print(nazar.Translator)", REPO,
               BUILD_PACKAGE_ROOT)
    assert p.returncode == 0, p.stderr
    path = p.stdout.splitlines()[0]
    assert path.endswith(os.path.join("nazar", "__init__.py"))
    assert not path.startswith(os.path.join(REPO, "nazar") + os.sep)
    assert nazar.__file__ is not None and hasattr(nazar, "_nazar")


def test_public_names_exist_and_have_docstrings():
    for name in nazar.__all__:
        obj = getattr(nazar, name)
        if callable(obj) and name not in ("Error",):
            assert obj.__doc__, name


@needs_build_tree
def test_cmake_install_gives_an_importable_package(tmp_path):
    build = os.path.dirname(BUILD_PACKAGE_ROOT)  # build/python -> build
    prefix = tmp_path / "prefix"
    p = subprocess.run(
        ["cmake", "--install", build, "--prefix", str(prefix)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    found = list(prefix.glob("lib/python3*/dist-packages/nazar/__init__.py"))
    assert len(found) == 1, list(prefix.rglob("*"))
    site = str(found[0].parent.parent)
    assert list(found[0].parent.glob("_nazar*.so"))
    p = python("import nazar; print(nazar.__file__); print(nazar.eval.bleu(['a b c d e'], ['a b c d e']).score)",
               str(tmp_path), site)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].startswith(site)
    assert abs(float(p.stdout.splitlines()[1]) - 100.0) < 1e-9


@needs_build_tree
def test_pip_install_gives_an_importable_package(tmp_path):
    # `pip install --no-build-isolation` with Debian's setuptools and wheel, offline (--no-index);
    # NAZAR_CMAKE_BUILD_DIR makes setup.py reuse this build instead of compiling everything
    # again in build/pip/cmake. --target: Debian's python3 refuses installs into itself (PEP 668).
    env = dict(os.environ, NAZAR_CMAKE_BUILD_DIR=os.path.dirname(BUILD_PACKAGE_ROOT))
    target = tmp_path / "site"
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
         "--no-deps", "--target", str(target), REPO],
        capture_output=True, text=True, env=env, cwd=str(tmp_path),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    for name in ("__init__.py", "torch/__init__.py", "torch/model.py", "_nazar.pyi", "py.typed"):
        assert (target / "nazar" / name).exists(), name
    p = python("import nazar; print(nazar.__file__); print(nazar.eval.wer(['a b'], ['a c']).score)",
               str(tmp_path), str(target))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [str(target / "nazar" / "__init__.py"), "50.0"]
