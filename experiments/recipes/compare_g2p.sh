#!/bin/bash
# The character-task comparison of docs/training.md ("Recipes"), on the g2p task of gen_g2p.py:
#   D = today's defaults with tokenizer char (no dropout, constant lr 1e-3, default sizes)
#   E = configs/char-transduction.yaml
#   F = E + embedding 0.1, encoder-output 0.1, decoder-output 0.2 dropout (the dropout lever)
# `train` generates the data (if absent) and starts the three together (threads 1, nice 5, the
# same max_minutes budget); `eval` decodes the test split with each lever and appends
#   name  BLEU  chrF  exact  seconds       (BLEU is meaningless on character targets: ignore it)
# to $WORK/g2p-results.tsv.
# `seeds` / `eval-seeds`: two more runs of E (seeds 2 and 3), together, and their ensembles.
# Usage: compare_g2p.sh train|eval|seeds|eval-seeds   (env: NAZAR, WORK, MINUTES=15)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
N=$(realpath "${NAZAR:-$repo/build/nazar}")
WORK=${WORK:-runs/recipes-g2p}
mkdir -p "$WORK" && cd "$WORK"
cfg=$repo/configs/char-transduction.yaml
case ${1:-} in
train)
    [[ -s g2p/train.tsv ]] || python3 "$here/gen_g2p.py" g2p
    common=(--train g2p/train.tsv --dev g2p/dev.tsv --max-minutes "${MINUTES:-15}" --threads 1
            --progress plain --log-interval 100)
    nice -n 5 "$N" train "${common[@]}" --tokenizer char --checkpoint-interval 250 \
        --keep-checkpoints 5 --save-dir D --metrics-log D.jsonl > D.log 2>&1 &
    nice -n 5 "$N" train --config "$cfg" "${common[@]}" --save-dir E --metrics-log E.jsonl > E.log 2>&1 &
    nice -n 5 "$N" train --config "$cfg" "${common[@]}" --embedding-dropout 0.1 \
        --encoder-output-dropout 0.1 --decoder-output-dropout 0.2 \
        --save-dir F --metrics-log F.jsonl > F.log 2>&1 &
    wait
    ;;
seeds)  # two more runs of the recipe (seeds 2, 3), together: for the ensembles of 2 and 3
    common=(--train g2p/train.tsv --dev g2p/dev.tsv --max-minutes "${MINUTES:-15}" --threads 1
            --progress plain --log-interval 100)
    for k in 2 3; do
        nice -n 5 "$N" train --config "$cfg" "${common[@]}" --seed $k --save-dir E$k \
            --metrics-log E$k.jsonl > E$k.log 2>&1 &
    done
    wait
    ;;
eval-seeds)
    export NAZAR=$N THREADS=1 TRANSLATE_ARGS="--max-length-ratio 8"
    s() { local n=$1 b=$2; shift 2; nice -n 10 "$here/score.sh" "$n" g2p/test.src g2p/test.ref "$b" "$@" >> g2p-results.tsv; }
    s E2-ema-greedy 1 E2/model.safetensors
    s E3-ema-greedy 1 E3/model.safetensors
    s ens-E+E2-greedy 1 E/model.safetensors E2/model.safetensors
    s ens-E+E2+E3-greedy 1 E/model.safetensors E2/model.safetensors E3/model.safetensors
    s E2-ema-beam5 5 E2/model.safetensors
    s ens-E+E2-beam5 5 E/model.safetensors E2/model.safetensors
    s ens-E+E2+E3-beam5 5 E/model.safetensors E2/model.safetensors E3/model.safetensors
    ;;
eval)
    cut -f1 g2p/test.tsv > g2p/test.src
    cut -f2 g2p/test.tsv > g2p/test.ref
    export NAZAR=$N THREADS=1 TRANSLATE_ARGS="--max-length-ratio 8"  # "905": 3 chars -> 17
    for r in E F; do python3 "$here/raw_weights.py" $r/last.safetensors $r/raw.safetensors; done
    "$N" average --last 5 --run D -o D/avg5.safetensors
    for c in E/checkpoint-*.safetensors; do python3 "$here/raw_weights.py" "$c" "${c%.safetensors}.raw"; done
    "$N" average E/checkpoint-*.raw -o E/rawavg5.safetensors
    s() { local n=$1 b=$2; shift 2; nice -n 10 "$here/score.sh" "$n" g2p/test.src g2p/test.ref "$b" "$@" >> g2p-results.tsv; }
    s D-greedy 1 D/model.safetensors
    s E-ema-greedy 1 E/model.safetensors
    s E-raw-greedy 1 E/raw.safetensors
    s F-ema-greedy 1 F/model.safetensors
    s D-avg5-greedy 1 D/avg5.safetensors
    s E-rawavg5-greedy 1 E/rawavg5.safetensors
    s ens-E+F-greedy 1 E/model.safetensors F/model.safetensors
    s F-raw-greedy 1 F/raw.safetensors
    s D-beam5 5 D/model.safetensors
    s E-ema-beam5 5 E/model.safetensors
    s ens-E+F-beam5 5 E/model.safetensors F/model.safetensors
    s ens-D+E+F-greedy 1 D/model.safetensors E/model.safetensors F/model.safetensors
    ;;
*) echo "usage: compare_g2p.sh train|eval|seeds|eval-seeds" >&2; exit 2 ;;
esac
