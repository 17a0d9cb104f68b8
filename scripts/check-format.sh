#!/usr/bin/env bash
# Fails when a tracked .h/.cpp file differs from what clang-format 14 and the committed
# .clang-format make of it (CI runs this through `make test` / `make check`: ctest lint.format).
# Fix with `make format`. Exit codes: 0 clean, 1 a formatting diff (the files are listed), 77 skipped
# (not a git checkout, or no clang-format 14: another version formats differently), as ctest's
# SKIP_RETURN_CODE.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    echo "check-format: skipped, $(pwd) is not a git checkout (the checked files are git ls-files)"
    exit 77
fi
CF=clang-format-14
command -v "$CF" > /dev/null || CF=clang-format
if ! command -v "$CF" > /dev/null || ! "$CF" --version | grep -q 'version 14\.'; then
    echo "check-format: skipped, clang-format 14 not found (scripts/install-deps.sh test installs it)"
    exit 77
fi
mapfile -d '' files < <(git ls-files -z '*.h' '*.cpp')
present=()
for f in "${files[@]}"; do [ -f "$f" ] && present+=("$f"); done  # skip deletions not yet committed
if ! out=$("$CF" --dry-run --Werror "${present[@]}" 2>&1); then
    echo "check-format: files not formatted with $CF and .clang-format (run make format):"
    grep -o '^[^:]*:[0-9]*:[0-9]*: error' <<< "$out" | cut -d: -f1 | sort -u | sed 's/^/  /'
    grep -q ': error' <<< "$out" || echo "$out"
    exit 1
fi
echo "check-format: ${#present[@]} files formatted"
