#!/usr/bin/env bash
# Runs a command, then prints its wall time and CPU time (user + sys of it and its children) on
# stderr: make test times its Release phases with it (docs/reliability.md, CI). CPU seconds are
# the figure to compare on a shared machine.
# Usage: scripts/timed.sh LABEL COMMAND [ARG...]
set -euo pipefail
label=$1
shift
TIMEFORMAT="timed: $label: %0R s wall, %0U s user + %0S s sys"
time "$@"
