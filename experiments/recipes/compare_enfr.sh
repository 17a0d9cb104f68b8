#!/bin/bash
# The en->fr same-wall-time comparison of docs/training.md ("Recipes"):
#   A = today's defaults (Bahdanau, SentencePiece 8000, no dropout, constant lr 1e-3, default sizes)
#   B = configs/short-strings-spm.yaml
#   C = B + embedding 0.1, encoder-output 0.1, decoder-output 0.2 dropout (the dropout lever)
# `train` starts the three together (threads 1, nice 5, the same max_minutes budget) so that each
# sees the same loaded machine; `eval` decodes the test split with each lever and appends
#   name  BLEU  chrF  exact  seconds
# to $WORK/enfr-results.tsv.
# `seeds` trains the recipe B once per seed of $SEEDS (default "2 3"), together, one thread each;
# `eval-seeds` scores each at beam 5 and all of them as one ensemble.
# Usage: compare_enfr.sh train|eval|seeds|eval-seeds   (env: NAZAR, WORK, DATA=l10n-en-fr
# directory, MINUTES=30, SEEDS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=$(realpath "${NAZAR:-$repo/build/nazar}")
DATA=$(realpath "${DATA:-$repo/../shared/data/l10n-en-fr}")
WORK=${WORK:-runs/recipes-enfr}
mkdir -p "$WORK" && cd "$WORK"
case ${1:-} in
train)
    [[ -s train.tsv ]] || xzcat "$DATA/train.tsv.xz" > train.tsv
    common=(--train train.tsv --dev "$DATA/dev.tsv" --max-minutes "${MINUTES:-30}" --threads 1
            --progress plain --log-interval 100)
    nice -n 5 "$N" train "${common[@]}" --tokenizer spm --checkpoint-interval 250 \
        --keep-checkpoints 5 --save-dir A --metrics-log A.jsonl > A.log 2>&1 &
    nice -n 5 "$N" train --config "$repo/configs/short-strings-spm.yaml" "${common[@]}" \
        --save-dir B --metrics-log B.jsonl > B.log 2>&1 &
    nice -n 5 "$N" train --config "$repo/configs/short-strings-spm.yaml" "${common[@]}" \
        --embedding-dropout 0.1 --encoder-output-dropout 0.1 --decoder-output-dropout 0.2 \
        --save-dir C --metrics-log C.jsonl > C.log 2>&1 &
    wait
    ;;
eval)
    cut -f1 "$DATA/test.tsv" > test.src
    cut -f2 "$DATA/test.tsv" > test.ref
    export NAZAR=$N THREADS=1
    for r in B C; do python3 "$here/raw_weights.py" $r/last.safetensors $r/raw.safetensors; done
    "$N" average --last 5 --run A -o A/avg5.safetensors
    for c in B/checkpoint-*.safetensors; do python3 "$here/raw_weights.py" "$c" "${c%.safetensors}.raw"; done
    "$N" average B/checkpoint-*.raw -o B/rawavg5.safetensors
    "$N" average --last 5 --run B -o B/emaavg5.safetensors
    s() { local n=$1 b=$2; shift 2; nice -n 10 "$here/score.sh" "$n" test.src test.ref "$b" "$@" >> enfr-results.tsv; }
    # Beam 5 (6-10 min per model under load 15 on one thread): the headline and some levers.
    s A-beam5 5 A/model.safetensors
    s B-ema-beam5 5 B/model.safetensors
    s B-raw-beam5 5 B/raw.safetensors
    s A-avg5-beam5 5 A/avg5.safetensors
    s ens-B+C-beam5 5 B/model.safetensors C/model.safetensors
    # Greedy (about 2 min per model): every lever.
    s B-ema-greedy 1 B/model.safetensors
    s A-greedy 1 A/model.safetensors
    s B-raw-greedy 1 B/raw.safetensors
    s C-ema-greedy 1 C/model.safetensors
    s A-avg5-greedy 1 A/avg5.safetensors
    s B-rawavg5-greedy 1 B/rawavg5.safetensors
    s ens-B+C-greedy 1 B/model.safetensors C/model.safetensors
    s C-raw-greedy 1 C/raw.safetensors
    s ens-A+B+C-greedy 1 A/model.safetensors B/model.safetensors C/model.safetensors
    s B-emaavg5-greedy 1 B/emaavg5.safetensors
    ;;
seeds)  # the recipe B with each seed of $SEEDS (default "2 3"), started together, 1 thread each
    [[ -s train.tsv ]] || xzcat "$DATA/train.tsv.xz" > train.tsv
    for seed in ${SEEDS:-2 3}; do
        "$N" train --config "$repo/configs/short-strings-spm.yaml" --train train.tsv \
            --dev "$DATA/dev.tsv" --max-minutes "${MINUTES:-30}" --threads 1 --progress plain \
            --log-interval 100 --seed "$seed" --save-dir "B-s$seed" \
            --metrics-log "B-s$seed.jsonl" > "B-s$seed.log" 2>&1 &
    done
    wait
    ;;
eval-seeds)  # beam 5 on the test split: each seed of $SEEDS, then all of them as an ensemble
    cut -f1 "$DATA/test.tsv" > test.src
    cut -f2 "$DATA/test.tsv" > test.ref
    export NAZAR=$N THREADS=${THREADS:-1}
    models=()
    for seed in ${SEEDS:-2 3}; do
        "$here/score.sh" "B-s$seed-beam5" test.src test.ref 5 "B-s$seed/model.safetensors" \
            >> enfr-results.tsv
        models+=("B-s$seed/model.safetensors")
    done
    "$here/score.sh" "ens-B-seeds-beam5" test.src test.ref 5 "${models[@]}" >> enfr-results.tsv
    ;;
*) echo "usage: compare_enfr.sh train|eval|seeds|eval-seeds" >&2; exit 2 ;;
esac
