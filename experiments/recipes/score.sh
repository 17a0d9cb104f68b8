#!/bin/bash
# Translate a test source with one model or an ensemble and score it: prints
#   NAME  BLEU  chrF  exact  seconds
# Usage: score.sh NAME SRC REF BEAM MODEL [MODEL ...]   (NAZAR=path/to/nazar, THREADS=1)
set -euo pipefail
name=$1 src=$2 ref=$3 beam=$4
shift 4
N=${NAZAR:-nazar}
models=()
for m in "$@"; do models+=(--model "$m"); done
mkdir -p hyp
start=$(date +%s.%N)
"$N" --threads "${THREADS:-1}" translate "${models[@]}" --beam "$beam" --batch 64 \
    ${TRANSLATE_ARGS:-} < "$src" > "hyp/$name.txt"
secs=$(echo "$(date +%s.%N) - $start" | bc)
bleu=$("$N" eval --metric bleu -b --ref "$ref" --hyp "hyp/$name.txt")
chrf=$("$N" eval --metric chrf -b --ref "$ref" --hyp "hyp/$name.txt")
exact=$("$N" eval --metric exact -b --ref "$ref" --hyp "hyp/$name.txt")
printf '%s\t%s\t%s\t%s\t%.0f\n' "$name" "$bleu" "$chrf" "$exact" "$secs"
