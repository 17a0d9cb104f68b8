#!/usr/bin/env bash
# Configures the instrumented build directories of scripts/run-sanitizers.sh and
# scripts/run-fuzzers.sh (docs/reliability.md, "make test"). Sourced by both; by hand:
#   scripts/configure-instrumented.sh suite|fuzz [dir]
#
# SANITIZE_CXX picks the layout:
#   clang++-14     (default) one directory, build-asan, for both: clang 14, ASan + UBSan,
#                  libFuzzer coverage on the libraries the fuzz targets link (not on the CLI,
#                  apps/ or the tests), tests and fuzz targets together, so the libraries are
#                  compiled once and clang's faster compiles apply to the whole suite
#                  (docs/reliability.md, CI: the CPU time of both layouts).
#   g++            suite: build-asan, gcc 12, ASan + UBSan, every test;
#                  fuzz:  build-fuzz, clang 14 + libFuzzer + ASan + UBSan, fuzz targets only
#                  (the libraries are compiled twice, once per compiler).
# Both: -fno-sanitize-recover=all, -O1 with line tables only (the test programs and the CLI -O0:
# NAZAR_SANITIZE_DRIVER_OPT, cmake/sanitizers.cmake), NZ_DCHECKs on, no benchmarks; the
# PyTorch-driven parity scripts are not registered (NAZAR_PARITY_PYTHON=/nonexistent: they test
# Python, not nazar's memory safety; the C++ parity tests run on the committed fixtures).
# A directory configured for another compiler or another NAZAR_FUZZ/NAZAR_BUILD_TESTS is
# configured afresh.
set -euo pipefail

SANITIZE_CXX=${SANITIZE_CXX:-clang++-14}

# The directory of a role: ASAN_BUILD / FUZZ_BUILD, else the layout's default.
nazar_instrumented_dir() {
  case "$1:$SANITIZE_CXX" in
    suite:*) echo "${ASAN_BUILD:-build-asan}" ;;
    fuzz:g++ | fuzz:gcc) echo "${FUZZ_BUILD:-build-fuzz}" ;;
    fuzz:*) echo "${FUZZ_BUILD:-${ASAN_BUILD:-build-asan}}" ;;
  esac
}

# A package upgrade keeps the headers' packaged mtimes (scripts/install-deps.sh arm64, for one,
# upgrades linux-libc-dev to its arm64 twin's version), so ninja takes the precompiled headers
# for current while clang refuses them ("has been modified since the precompiled header was
# built"): drop every one built before the package database last changed, and ninja rebuilds it
# and what includes it.
nazar_drop_stale_pch() {  # dir
  local db=/var/lib/dpkg/status pch
  [ -f "$db" ] || return 0
  while IFS= read -r pch; do
    if [ "$db" -nt "$pch" ]; then
      echo "configure-instrumented: packages changed since $pch was built; rebuilding it" >&2
      rm -f "$pch"
    fi
  done < <(find "$1" -name 'cmake_pch.hxx.pch' 2>/dev/null)
}

nazar_configure_instrumented() {  # role dir
  local role=$1 build=$2 cxx=$SANITIZE_CXX args
  args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1
        -DNAZAR_SANITIZE=address,undefined -DNAZAR_BUILD_BENCH=OFF)
  case "$cxx:$role" in
    g++:suite | gcc:suite)
      cxx=g++; args+=(-DNAZAR_FUZZ=OFF -DNAZAR_BUILD_TESTS=ON -DNAZAR_PARITY_PYTHON=/nonexistent) ;;
    g++:fuzz | gcc:fuzz)
      cxx=clang++-14; args+=(-DNAZAR_FUZZ=ON -DNAZAR_BUILD_TESTS=OFF) ;;
    *)
      args+=(-DNAZAR_FUZZ=ON -DNAZAR_BUILD_TESTS=ON -DNAZAR_PARITY_PYTHON=/nonexistent) ;;
  esac
  if [ "${cxx#clang}" != "$cxx" ] && ! command -v "$cxx" >/dev/null; then cxx=clang++; fi
  # An existing directory is kept when its compiler family, NAZAR_FUZZ and NAZAR_BUILD_TESTS are
  # the layout's (whether the script or `cmake --preset asan|asan-clang|fuzz` configured it).
  local cache="$build/CMakeCache.txt"
  if [ -f "$cache" ]; then
    local have want
    have=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
    have="${have##*/} $(sed -n 's/^NAZAR_FUZZ:BOOL=//p' "$cache") $(sed -n 's/^NAZAR_BUILD_TESTS:BOOL=//p' "$cache")"
    want="${cxx##*/} $(printf '%s\n' "${args[@]}" | sed -n 's/^-DNAZAR_FUZZ=//p') $(printf '%s\n' "${args[@]}" | sed -n 's/^-DNAZAR_BUILD_TESTS=//p')"
    if [ "${have%%[-+]*} ${have#* }" = "${want%%[-+]*} ${want#* }" ] && [ -f "$build/build.ninja" ]; then
      nazar_drop_stale_pch "$build"
      return 0
    fi
    echo "configure-instrumented: $build is configured as [$have], this layout needs [$want]; configuring it afresh" >&2
    rm -rf "$build"
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" "${args[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$(dirname "$0")/.."
  role=${1:?usage: scripts/configure-instrumented.sh suite|fuzz [dir]}
  nazar_configure_instrumented "$role" "${2:-$(nazar_instrumented_dir "$role")}"
fi
