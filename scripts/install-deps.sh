#!/usr/bin/env bash
# Installs the Debian packages nazar needs, only those that are missing (docs/design.md §3).
# Idempotent: on a machine that has them all it runs no apt command at all.
# Usage: scripts/install-deps.sh [build|test|all]   (default: all)
set -euo pipefail

build_pkgs=(cmake ninja-build g++ make pkg-config libopenblas-dev libsentencepiece-dev
            libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libfmt-dev zlib1g-dev)
# oneDNN: the GEMM library, kernels chosen from CPU feature bits (docs/performance.md)
build_pkgs+=(libdnnl-dev)
# MPI (docs/distributed.md): data-parallel training under mpirun; Open MPI 4.1 (libmpi + mpirun)
build_pkgs+=(libopenmpi-dev openmpi-bin)
# serve (docs/serve.md): TLS of `nazar serve --tls-cert` (OpenSSL; the test makes its
# certificate with the openssl command)
build_pkgs+=(libssl-dev openssl)
# CI time (docs/reliability.md): lld links the ~90 executables in a quarter of ld.bfd's CPU time
build_pkgs+=(lld)
# make package (cmake/package.cmake): dpkg-shlibdeps declares the libraries' Debian packages
build_pkgs+=(dpkg-dev)
test_pkgs=(libgtest-dev libgmock-dev libbenchmark-dev python3 python3-torch python3-numpy)
# reliability (docs/reliability.md): clang + its sanitizer/libFuzzer runtimes, llvm-symbolizer
test_pkgs+=(clang-14 libclang-rt-14-dev llvm-14)
# lint (scripts/check-format.sh, ctest lint.format): the formatter the tree is formatted with
test_pkgs+=(clang-format-14)
# viz (tests/e2e/test_html_report.sh): headless Chromium opens the HTML report; a font for its screenshot
test_pkgs+=(chromium fonts-dejavu-core)
# python (python/, docs/python.md): the package nazar (pybind11) and its pytest tests; setuptools
# and wheel are pip's build backend for `pip install --no-build-isolation .`
# serve (docs/serve.md): the explorer's browser test (Chromium driven by Selenium), the load test
test_pkgs+=(chromium-driver python3-selenium wrk)
test_pkgs+=(pybind11-dev python3-pybind11 python3-pytest python3-dev python3-setuptools python3-wheel)
# make wheel / e2e.wheel (docs/python.md): pip builds the wheel, a virtual environment installs it
test_pkgs+=(python3-pip python3-venv)

want=("${build_pkgs[@]}")
case "${1:-all}" in
  build) ;;
  test|all) want+=("${test_pkgs[@]}") ;;
  *) echo "install-deps.sh: unknown set '$1' (expected build, test or all)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
