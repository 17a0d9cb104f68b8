#!/usr/bin/env bash
# Coverage attention vs none on en→fr (docs/training.md "Coverage, measured"): the same small
# Bahdanau model trained twice side by side (one thread each, niced), then beam-5 translations
# of the test split scored by BLEU / chrF (`nazar eval`) and the share of outputs with one token
# repeated 4+ times in a row (repetition.py).
#   experiments/coverage/compare-en-fr.sh OUT_DIR [STEPS [NAME=FLAGS NAME=FLAGS]]   (needs build/nazar)
# The two runs default to plain="" and coverage="--coverage true --coverage-loss-weight 1".
# Data: the first 10,000 training pairs with <= 12 words a side (as docs/training.md's dropout
# measurement), the first 400 such dev pairs for validation, and the whole test split.
set -euo pipefail
out=${1:?usage: compare-en-fr.sh OUT_DIR [STEPS [NAME=FLAGS NAME=FLAGS]]}
steps=${2:-2400}
a=${3:-plain=}
b=${4:-coverage=--coverage true --coverage-loss-weight 1}
root=$(cd "$(dirname "$0")/../.." && pwd)
nazar=$root/build/nazar
data=${NAZAR_EN_FR:-$root/../shared/data/l10n-en-fr}  # the shared corpus (env to override)
mkdir -p "$out"
short='{ n = split($1, a, " "); m = split($2, b, " "); if (n <= 12 && m <= 12) print }'
# (head closes the pipe early: SIGPIPE upstream is expected, hence the `|| true`)
{ xz -dc "$data/train.tsv.xz" | awk -F'\t' "$short" | head -n 10000 > "$out/train.tsv"; } || true
{ awk -F'\t' "$short" "$data/dev.tsv" | head -n 400 > "$out/dev.tsv"; } || true
cut -f1 "$data/test.tsv" > "$out/test.src"
cut -f2 "$data/test.tsv" > "$out/test.ref"
# TOKENIZER="--tokenizer spm --spm-vocab-size 4000" for subwords (default: words, vocab 6000)
read -r -a tok <<< "${TOKENIZER:---tokenizer word --vocab-size 6000}"
common=(--train "$out/train.tsv" --dev "$out/dev.tsv" "${tok[@]}"
        --embedding-size 64 --hidden-size 64 --decoder-hidden-size 64 --attention-size 64
        --decoder bahdanau --attention additive --optimizer adam --lr 0.002 --batch-size 64
        --clip-norm 1 --max-steps "$steps" --max-epochs 0 --valid-interval 600 --valid-sample 0
        --threads 1 --seed 1 --progress plain)
run() {  # name, extra flags...
    local name=$1
    shift
    nice -n 5 "$nazar" train "${common[@]}" --save-dir "$out/$name" "$@" 2> "$out/$name.log"
}
start=$(date +%s)
# shellcheck disable=SC2086  # the flags are words
run "${a%%=*}" ${a#*=} &
# shellcheck disable=SC2086
run "${b%%=*}" ${b#*=} &
wait
echo "training: $(($(date +%s) - start)) s wall for both (side by side)"
for name in "${a%%=*}" "${b%%=*}"; do
    nice -n 5 "$nazar" translate --model "$out/$name/model.safetensors" --beam 5 --threads 1 \
        < "$out/test.src" > "$out/$name.test.hyp"
    bleu=$("$nazar" eval --metric bleu --ref "$out/test.ref" --hyp "$out/$name.test.hyp" --score-only)
    chrf=$("$nazar" eval --metric chrf --ref "$out/test.ref" --hyp "$out/$name.test.hyp" --score-only)
    rep=$(python3 "$root/experiments/coverage/repetition.py" "$out/$name.test.hyp")
    echo "$name: BLEU $bleu chrF $chrf repeated-4+ $rep"
done
echo "reference: repeated-4+ $(python3 "$root/experiments/coverage/repetition.py" "$out/test.ref")"
