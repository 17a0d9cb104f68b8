#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/reliability.md).
#
# The instrumented build directory (default build-asan; scripts/configure-instrumented.sh):
# -fsanitize=address,undefined -fno-sanitize-recover=all (the first finding fails the test),
# -O1 with line tables (the test programs and the CLI -O0), without NDEBUG (NZ_DCHECKs on).
# SANITIZE_CXX=clang++-14 (default): clang 14, libFuzzer coverage on the libraries, the fuzz
# targets in the same directory (scripts/run-fuzzers.sh
# then reuses the whole build) and fuzz.<name>.seeds in ctest; SANITIZE_CXX=g++: gcc 12.
# Every ctest test is built and run here, whatever its label (but lint): nothing to register.
# OpenBLAS, yaml-cpp, SentencePiece and libstdc++ are not instrumented (their own bugs are out
# of reach, our calls into them are not).
#
# Usage: scripts/run-sanitizers.sh   (env: SANITIZE_CXX=clang++-14|g++, ASAN_BUILD=dir, JOBS=n,
#                                     CTEST_FLAGS=..., RELEASE_BUILD=dir)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
. scripts/configure-instrumented.sh
BUILD=$(nazar_instrumented_dir suite)
nazar_configure_instrumented suite "$BUILD"

# CPU seconds (user+sys of this script's children so far), beside the wall time: the figure to
# compare on a shared machine.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' "/proc/$$/stat"; }
start=$SECONDS c0=$(cpu)
cmake --build "$BUILD" -j "$JOBS"
echo "run-sanitizers: build took $((SECONDS - start)) s ($(($(cpu) - c0)) CPU s)" >&2

# Every finding aborts with a symbolized stack. Leak checking is on: a leak is a finding too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-14/bin/llvm-symbolizer}
# Scheduling: ctest -j starts the tests that a previous run's timings
# (Testing/Temporary/CTestCostData.txt) show to be slow first, so that none of them starts last
# with the other core idle. A fresh directory has no timings: take those of the Release run (make
# test runs it first; RELEASE_BUILD, default build), whose test names are the same and whose slow
# tests are the slow ones here too (docs/reliability.md, CI).
costs=${RELEASE_BUILD:-build}/Testing/Temporary/CTestCostData.txt
if [ -f "$costs" ] && [ ! -f "$BUILD/Testing/Temporary/CTestCostData.txt" ]; then
  mkdir -p "$BUILD/Testing/Temporary" && cp "$costs" "$BUILD/Testing/Temporary/"
fi
start=$SECONDS c0=$(cpu)
# The lint tests (label lint: format, sizes, generated man pages and completion) read the
# sources and the CLI's help, the same here as in the Release suite that runs them: skipped.
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -LE '^lint$' ${CTEST_FLAGS:-})
echo "run-sanitizers: ctest took $((SECONDS - start)) s ($(($(cpu) - c0)) CPU s)" >&2
