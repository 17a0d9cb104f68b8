"""setuptools glue for `pip install --no-build-isolation .` (pyproject.toml, docs/python.md).

The extension nazar._nazar is built by this repository's CMake build (python/CMakeLists.txt),
for the interpreter running pip, in build/pip/cmake (or in the configured build folder named by
NAZAR_CMAKE_BUILD_DIR, to reuse a build), and copied where setuptools packs it.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class FreshBuildPy(build_py):
    """build/pip/lib outlives a build: drop its copy of the package first, so that a module
    removed from python/nazar (as nazar/torch.py was) is not packed again."""

    def run(self):
        shutil.rmtree(os.path.join(self.build_lib, "nazar"), ignore_errors=True)
        super().run()


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        build_dir = os.environ.get("NAZAR_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", "pip", "cmake")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(
                [
                    "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DNAZAR_BUILD_TESTS=OFF", "-DNAZAR_BUILD_BENCH=OFF",
                    "-DNAZAR_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
                ]
            )
        subprocess.check_call(
            ["cmake", "--build", build_dir, "--target", "_nazar", "-j", str(os.cpu_count() or 2)]
        )
        built = glob.glob(os.path.join(build_dir, "python", "nazar", "_nazar*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _nazar*.so in {build_dir}/python/nazar, found {built}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    ext_modules=[CMakeExtension("nazar._nazar")],
    cmdclass={"build_py": FreshBuildPy, "build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build", "pip")}},
)
