#!/bin/bash
# Copy attention and coverage against the best en->fr recipe at the same wall time
# (docs/models.md "Copy attention and coverage on en->fr"). Every run is
# configs/short-strings-spm.yaml (threads 1, nice 5, max_minutes MINUTES) plus flags:
#   A   as is                                B0  --label-smoothing 0 --copy-attention true
#   C   --coverage true --coverage-loss-weight 1
#   B   --copy-attention true (label smoothing 0.1 kept)     A2  as is (B's same-load partner)
# `train RUN...` starts the named runs together (so that they see the same load) and waits;
# `eval RUN...` decodes the test split with beam 5 (one thread) from each RUN/model.safetensors
# and appends experiments/copy/score_copy.py's line, the decode seconds and the load to
# $WORK/results.tsv:
#   name BLEU chrF fmt% fmt_n opt% opt_n any% any_n rep4% rep4p2% seconds load(start-end)
# Usage: compare_copy_enfr.sh train|eval RUN...  (env: NAZAR, WORK, DATA, MINUTES=30)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=$(realpath "${NAZAR:-$repo/build/nazar}")
DATA=$(realpath "${DATA:-$repo/../shared/data/l10n-en-fr}")
WORK=${WORK:-runs/copy-enfr}
mkdir -p "$WORK" && cd "$WORK"
what=${1:-}
shift || true
flags() {
    case $1 in
    A | A2) ;;
    B) echo --copy-attention true ;;
    B0) echo --label-smoothing 0 --copy-attention true ;;
    C) echo --coverage true --coverage-loss-weight 1 ;;
    BC) echo --copy-attention true --coverage true --coverage-loss-weight 1 ;;
    *) echo "compare_copy_enfr.sh: unknown run $1 (A A2 B B0 C BC)" >&2; exit 2 ;;
    esac
}
case $what in
train)
    [[ -s train.tsv ]] || xzcat "$DATA/train.tsv.xz" > train.tsv
    common=(--train train.tsv --dev "$DATA/dev.tsv" --max-minutes "${MINUTES:-30}" --threads 1
            --progress plain --log-interval 100)
    uptime > train-load.txt
    for r in "$@"; do
        f=$(flags "$r")
        # shellcheck disable=SC2086
        nice -n 5 "$N" train --config "$repo/configs/short-strings-spm.yaml" "${common[@]}" $f \
            --save-dir "$r" --metrics-log "$r.jsonl" > "$r.log" 2>&1 &
    done
    wait
    uptime >> train-load.txt
    ;;
eval)
    cut -f1 "$DATA/test.tsv" > test.src
    cut -f2 "$DATA/test.tsv" > test.ref
    mkdir -p hyp
    for r in "$@"; do
        start=$(date +%s.%N) l0=$(cut -d' ' -f1 /proc/loadavg)
        nice -n 5 "$N" --threads 1 translate --model "$r/model.safetensors" --beam 5 --batch 64 \
            < test.src > "hyp/$r.txt"
        secs=$(echo "$(date +%s.%N) - $start" | bc) l1=$(cut -d' ' -f1 /proc/loadavg)
        line=$(python3 "$here/score_copy.py" "$r" test.src test.ref "hyp/$r.txt" --nazar "$N")
        printf '%s\t%.0f\t%s-%s\n' "$line" "$secs" "$l0" "$l1" >> results.tsv
    done
    ;;
*) echo "usage: compare_copy_enfr.sh train|eval RUN..." >&2; exit 2 ;;
esac
