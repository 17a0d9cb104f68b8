#!/usr/bin/env bash
# The Python wheel (`make wheel`), used as a user installs it: `pip wheel --no-build-isolation`
# with Debian's setuptools and wheel, offline (--no-index), the extension taken from BUILD_DIR
# (NAZAR_CMAKE_BUILD_DIR, so nothing is compiled twice); installed into a fresh virtual
# environment made with --system-site-packages (numpy and torch from Debian); then, from outside
# the repository and with no build tree on any path, `import nazar` must come from the
# environment and the Python tests (python/tests) must pass against it.
# Skipped (77) without Python's venv or pip (Debian python3-venv, python3-pip).
# Usage: test_wheel.sh path/to/nazar BUILD_DIR
BUILD=$(cd "${2:?usage: test_wheel.sh NAZAR BUILD_DIR}" && pwd) || exit 1
. "$(dirname "$0")/lib.sh" "$@"
"$PY" -c "import ensurepip, venv" 2> /dev/null || { echo "skipped: no venv/ensurepip (python3-venv)"; exit 77; }
"$PY" -m pip --version > /dev/null 2>&1 || { echo "skipped: no pip (python3-pip)"; exit 77; }

# A copy of the repository's Python sources, so that setuptools' build folder (build/pip) of
# this run starts empty and the checkout is left as it was.
src=$dir/src
mkdir -p "$src"
cp -r "$SRC/pyproject.toml" "$SRC/setup.py" "$SRC/python" "$src/"
mkdir -p "$src/docs" && cp "$SRC/docs/python.md" "$src/docs/"
NAZAR_CMAKE_BUILD_DIR=$BUILD "$PY" -m pip wheel -q --no-build-isolation --no-index --no-deps \
    -w "$dir/wheels" "$src" > wheel.log 2>&1 || { bad "pip wheel" "$(tail -20 wheel.log)"; exit 1; }
whl=$(ls "$dir"/wheels/nazar-*.whl 2> /dev/null | head -1)
[[ -n $whl ]] || { bad "pip wheel made no nazar-*.whl" "$(tail -5 wheel.log)"; exit 1; }
ok "wheel $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"
# Only the package's own files: no test, no stale module of an earlier layout.
listing=$("$PY" -c "import sys, zipfile; print('\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))" "$whl")
for f in nazar/__init__.py nazar/torch/__init__.py nazar/_nazar.pyi nazar/py.typed; do
    grep -qx "$f" <<< "$listing" || bad "$f is not in the wheel"
done
grep -q '^nazar/_nazar\..*\.so$' <<< "$listing" || bad "the extension is not in the wheel"
grep -q '^nazar/torch\.py$' <<< "$listing" && bad "a stale nazar/torch.py is in the wheel"

"$PY" -m venv --system-site-packages "$dir/venv" || { bad "python3 -m venv"; exit 1; }
"$dir/venv/bin/pip" install -q --no-index --no-deps "$whl" > install.log 2>&1 \
    || { bad "pip install of the wheel" "$(tail -20 install.log)"; exit 1; }
where=$(env -u PYTHONPATH "$dir/venv/bin/python" -c "import nazar; print(nazar.__file__)")
[[ $where == "$dir/venv/"* ]] || bad "nazar imported from $where, not the environment"
[[ $fail -eq 0 ]] && ok "installed into a virtual environment: $where"

# The Python tests against the installed package (the build-tree-only cases skip themselves).
env -u PYTHONPATH NAZAR_CLI="$NAZAR" NAZAR_TEST_WORK="$dir/work" PYTHONDONTWRITEBYTECODE=1 \
    "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider "$SRC/python/tests" > pytest.log 2>&1
rc=$?
tail -3 pytest.log
[[ $rc -eq 0 ]] && ok "python/tests pass against the installed wheel" \
    || bad "python/tests against the wheel (exit $rc)" "$(grep -E '^(FAILED|ERROR)' pytest.log | head -10)"
exit $fail
