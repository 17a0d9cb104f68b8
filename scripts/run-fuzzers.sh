#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/fuzz_*.cpp) for a bounded time from its committed seed
# corpus (fuzz/corpus/<name>/) and fails on any finding: a crash, a sanitizer report, an
# escaping non-nazar exception, a violated property, a hang (> 10 s on one input) or an
# allocation above 256 MB (inputs are at most 1 MiB; nothing may allocate like that).
# Prints the number of inputs each target executed.
#
# Build (scripts/configure-instrumented.sh): clang 14 + libFuzzer + ASan + UBSan; only the
# `fuzzers` target (the fuzz targets and the libraries they link). SANITIZE_CXX=clang++-14
# (default): the sanitizer suite's build-asan, which after scripts/run-sanitizers.sh (make test)
# is already up to date; SANITIZE_CXX=g++: its own directory build-fuzz.
#
# Usage: scripts/run-fuzzers.sh [target ...]   (env: SANITIZE_CXX, FUZZ_BUILD=dir, FUZZ_SECONDS=30,
#                                              JOBS=n)
# New inputs go to $BUILD/fuzz-work/<name>/ (not the committed corpus); a crashing input is
# saved as $BUILD/fuzz-artifacts/<name>-crash-<sha1>: reproduce with `$BUILD/fuzz_<name> FILE`,
# and add it to fuzz/corpus/<name>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-30}
# Inputs up to 1 MiB (libFuzzer's default caps them near the largest seed, ~8 KB, which could
# never reach 200 KB of nested brackets or a 100 KB line): FUZZ_MAX_LEN to change.
MAX_LEN=${FUZZ_MAX_LEN:-1048576}
JOBS=${JOBS:-$(nproc)}
. scripts/configure-instrumented.sh
BUILD=$(nazar_instrumented_dir fuzz)
nazar_configure_instrumented fuzz "$BUILD"
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' "/proc/$$/stat"; }
start=$SECONDS c0=$(cpu)
cmake --build "$BUILD" -j "$JOBS" --target fuzzers
echo "run-fuzzers: build took $((SECONDS - start)) s ($(($(cpu) - c0)) CPU s)" >&2

if [ $# -gt 0 ]; then targets=("$@"); else
  targets=(); for s in fuzz/fuzz_*.cpp; do n=$(basename "$s" .cpp); targets+=("${n#fuzz_}"); done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-14/bin/llvm-symbolizer}
mkdir -p "$BUILD/fuzz-artifacts" "$BUILD/fuzz-logs"

# Every target at once, each for SECS seconds of a core: with more targets than JOBS, each runs
# for SECS * targets / JOBS seconds of wall time while the kernel shares the JOBS cores evenly, so
# each gets about SECS CPU seconds (libFuzzer is single-threaded and CPU-bound) and runs as many
# inputs as it would alone on a core for SECS. Running them JOBS at a time instead left a core
# idle in the last round (5 targets on 2 cores: 90 s instead of 75; docs/reliability.md, CI).
# The per-input hang limit (10 s of a core) is stretched by the same factor.
n_targets=${#targets[@]}
if [ "$n_targets" -gt "$JOBS" ]; then
  WALL=$(((SECS * n_targets + JOBS - 1) / JOBS)) HANG=$(((10 * n_targets + JOBS - 1) / JOBS))
else
  WALL=$SECS HANG=10
fi

run_one() {  # exit code into $BUILD/fuzz-logs/<name>.rc
  local name=$1 work="$BUILD/fuzz-work/$1" log="$BUILD/fuzz-logs/$1.log" rc=0
  rm -rf "$work"; mkdir -p "$work"
  "$BUILD/fuzz_$name" "$work" "fuzz/corpus/$name" -max_total_time="$WALL" -timeout="$HANG" \
      -max_len="$MAX_LEN" \
      -rss_limit_mb=2048 -malloc_limit_mb=256 -print_final_stats=1 \
      -artifact_prefix="$BUILD/fuzz-artifacts/$name-" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$BUILD/fuzz-logs/$name.rc"
}

start=$SECONDS c0=$(cpu)
for name in "${targets[@]}"; do
  [ -x "$BUILD/fuzz_$name" ] || { echo "run-fuzzers: no target fuzz_$name" >&2; exit 2; }
done
echo "run-fuzzers: ${n_targets} targets at once on $JOBS cores, each for $WALL s of wall time (~$SECS s of a core)" >&2
for name in "${targets[@]}"; do run_one "$name" & done
wait
echo "run-fuzzers: fuzzing took $((SECONDS - start)) s ($(($(cpu) - c0)) CPU s)" >&2

failed=0
for name in "${targets[@]}"; do
  log="$BUILD/fuzz-logs/$name.log"
  rc=$(cat "$BUILD/fuzz-logs/$name.rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=$(ls "$BUILD/fuzz-work/$name" | wc -l)
  if [ "$rc" -ne 0 ]; then
    echo "run-fuzzers: $name FAILED (exit $rc) after ${execs:-?} inputs; end of $log:" >&2
    tail -n 50 "$log" >&2
    ls "$BUILD/fuzz-artifacts/$name-"* 2>/dev/null >&2 || true
    failed=1
  else
    printf 'run-fuzzers: %-14s %10s inputs in %s s of wall time (%s new corpus entries), no findings\n' \
           "$name" "${execs:-?}" "$WALL" "$found"
  fi
done
exit $failed
