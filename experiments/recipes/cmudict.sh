#!/bin/bash
# The g2p recipe on the real lexicon (docs/training.md "Recipes"): CMUdict from
# ../shared/data/g2p-cmudict (train.tsv.xz, dev.tsv, dev.refs.tsv; the test split is held out).
#
#   cmudict.sh train NAME [ARGS...]   train a run in $WORK/NAME with configs/char-transduction.yaml
#                                     and ARGS (e.g. --seed 2 --max-minutes 15 --threads 1)
#   cmudict.sh score NAME BEAM MODEL [MODEL ...] [-- TRANSLATE_ARGS...]
#                                     decode the dev words with one model or an ensemble and
#                                     append "NAME  WER  PER  seconds" to $WORK/results.tsv
#
# WER = the share of words whose output equals none of their accepted pronunciations (100 −
# exact match with every pronunciation a reference); PER = the phoneme edit distance to the
# closest pronunciation, summed, over the summed lengths of those (nazar eval --metric wer with
# one --ref per pronunciation). Env: NAZAR (default build/nazar), WORK (runs/cmudict),
# DATA (../shared/data/g2p-cmudict), THREADS (decoding, default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=$(realpath "${NAZAR:-$repo/build/nazar}")
DATA=$(realpath "${DATA:-$repo/../shared/data/g2p-cmudict}")
WORK=${WORK:-runs/cmudict}
orig=$PWD  # model paths are relative to where the script was called
mkdir -p "$WORK" && cd "$WORK"
prepare() {
    [[ -s train.tsv ]] || xz -dc "$DATA/train.tsv.xz" > train.tsv
    if [[ ! -s dev.words ]]; then
        cut -f1 "$DATA/dev.refs.tsv" > dev.words
        for k in 2 3 4; do  # one stream per pronunciation; "" = this word has fewer
            awk -F'\t' -v k=$k '{print (k <= NF ? $k : "")}' "$DATA/dev.refs.tsv" > dev.ref$((k - 1))
        done
    fi
}
case ${1:-} in
train)
    name=$2
    shift 2
    prepare
    "$N" train --config "$repo/configs/char-transduction.yaml" --train train.tsv \
        --dev "$DATA/dev.tsv" --save-dir "$name" --metrics-log "$name.jsonl" --progress plain \
        "$@" > "$name.log" 2>&1
    ;;
score)
    name=$2 beam=$3
    shift 3
    prepare
    models=()
    while [[ $# -gt 0 && $1 != -- ]]; do
        models+=(--model "$(cd "$orig" && realpath "$1")")
        shift
    done
    [[ ${1:-} == -- ]] && shift
    mkdir -p hyp
    start=$(date +%s.%N)
    "$N" --threads "${THREADS:-1}" translate "${models[@]}" --beam "$beam" --batch 64 \
        --max-length-ratio 3 "$@" < dev.words > "hyp/$name.txt"
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    refs=()
    for r in dev.ref*; do refs+=(--ref "$r"); done
    exact=$("$N" eval --metric exact -b "${refs[@]}" --hyp "hyp/$name.txt")
    per=$("$N" eval --metric wer -b "${refs[@]}" --hyp "hyp/$name.txt")
    wer=$(echo "100 - $exact" | bc -l)
    printf '%s\t%.2f\t%.2f\t%.0f\n' "$name" "$wer" "$per" "$secs" | tee -a results.tsv
    ;;
*)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
