#!/usr/bin/env bash
# Installs the Debian packages nazar needs, only those that are missing (docs/design.md §3).
# Idempotent: on a machine that has them all it runs no apt command at all.
# Usage: scripts/install-deps.sh [build|test|all|arm64]   (default: all; arm64: docs/arm64.md)
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

# arm64 (docs/arm64.md, make test-arm64): the cross compiler, qemu-user to run the tests, and
# the arm64 libraries beside the amd64 ones (multiarch). Not oneDNN (libdnnl-dev:arm64 cannot be
# co-installed with libdnnl-dev: the arm64 build uses OpenBLAS) nor MPI, Python or the benchmarks.
# The set is the build set (the host's tools, and the architecture-independent headers: CLI11,
# json) plus these.
arm64_pkgs=(crossbuild-essential-arm64 qemu-user libopenblas-dev:arm64 libfmt-dev:arm64
            libgtest-dev:arm64 libgmock-dev:arm64 libssl-dev:arm64
            zlib1g-dev:arm64)
# Not co-installable with their amd64 versions (no Multi-Arch: same), so apt would remove the
# amd64 ones: downloaded with apt-get and unpacked under NAZAR_ARM64_SIDE instead, where
# cmake/toolchain-aarch64.cmake looks (libyaml-cpp0.7 too: the -dev package's CMake files name
# the library beside them). Nothing outside NAZAR_ARM64_SIDE is written for them.
arm64_side_pkgs=(libsentencepiece0 libsentencepiece-dev libyaml-cpp0.7 libyaml-cpp-dev)
ARM64_SIDE="${NAZAR_ARM64_SIDE:-/opt/nazar-arm64}"

want=("${build_pkgs[@]}")
case "${1:-all}" in
  build) ;;
  test|all) want+=("${test_pkgs[@]}") ;;
  arm64) want+=("${arm64_pkgs[@]}") ;;
  *) echo "install-deps.sh: unknown set '$1' (expected build, test, all or arm64)" >&2; exit 2 ;;
esac

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# arm64: the architecture first (apt cannot name a :arm64 package before), then the side tree,
# unpacked once per version (its stamp lists the .deb files it holds).
if [ "${1:-all}" = arm64 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: adding the arm64 architecture (dpkg --add-architecture arm64)" >&2
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-all}" = arm64 ]; then
  # "name:arm64=version" of each, the versions apt would install now (one query, ~2 s)
  mapfile -t stamp < <(apt-cache policy "${arm64_side_pkgs[@]/%/:arm64}" |
                       awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) } /Candidate:/ { print p "=" $2 }')
  if [ ${#stamp[@]} -ne ${#arm64_side_pkgs[@]} ] || [[ "${stamp[*]}" == *"(none)"* ]]; then
    echo "install-deps: apt has no candidate for some of ${arm64_side_pkgs[*]} (arm64)" >&2
    exit 1
  fi
  if [ "$(cat "$ARM64_SIDE/.packages" 2>/dev/null)" != "${stamp[*]}" ]; then
    echo "install-deps: unpacking ${stamp[*]} into $ARM64_SIDE" >&2
    tmp=$(mktemp -d)
    [ "$(id -u)" -eq 0 ] && chown _apt "$tmp"  # as root, apt fetches as the user _apt
    (cd "$tmp" && apt-get download -qq "${stamp[@]}")
    $SUDO rm -rf "$ARM64_SIDE"
    $SUDO mkdir -p "$ARM64_SIDE"
    for d in "$tmp"/*.deb; do $SUDO dpkg -x "$d" "$ARM64_SIDE"; done
    echo "${stamp[*]}" | $SUDO tee "$ARM64_SIDE/.packages" >/dev/null
    rm -rf "$tmp"
  fi
fi
