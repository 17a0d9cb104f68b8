#!/bin/bash
# With vs without copy attention at the same wall time (docs/models.md "Copy attention,
# measured"): two trainings run concurrently, each stopped after BUDGET of wall time (its
# last.safetensors, written every 100 updates, is the model), then both decode the test split.
#
#   experiments/copy/run_copy_comparison.sh NAZAR WORK TASK [BUDGET]
#     TASK enfr:     ../shared/data/l10n-en-fr, first 10,000 training pairs with <= 12 words a
#                    side, first 400 dev pairs; word tokenizer; test: all 2,236 test pairs;
#                    reports BLEU, chrF and experiments/copy/copy_items.py (format specifiers and
#                    --options reproduced exactly)
#     translit:      experiments/copy/translit_data.py (20,000 / 500 / 1,000 pairs); char tokenizer;
#                    reports exact match
# Runs niced, one thread each (the machine is shared).
set -euo pipefail
NAZAR=$(realpath "$1"); WORK=$2; TASK=$3; BUDGET=${4:-25m}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=$(realpath "$HERE/../../../shared/data/l10n-en-fr" 2>/dev/null || echo /work/shared/data/l10n-en-fr)
mkdir -p "$WORK" && cd "$WORK"
common=(--threads 1 --batch-size 64 --lr 2e-3 --clip-norm 1 --max-epochs 1000 --valid-interval 500
        --valid-sample 100 --checkpoint-interval 100 --embedding-size 64 --hidden-size 64
        --decoder-hidden-size 64 --attention-size 64)
if [ "$TASK" = enfr ]; then
  (xz -dc "$DATA/train.tsv.xz" || true) \
    | awk -F'\t' 'NF == 2 && split($1, a, " ") <= 12 && split($2, b, " ") <= 12 { print; if (++n == 10000) exit }' \
    > train.tsv
  head -n 400 "$DATA/dev.tsv" > dev.tsv
  cp "$DATA/test.tsv" test.tsv
  common+=(--tokenizer word --vocab-size 6000)
else
  python3 "$HERE/translit_data.py" .
  common+=(--tokenizer char --valid-metric exact)
fi
cut -f1 test.tsv > test.src; cut -f2 test.tsv > test.ref
for run in base copy; do
  extra=(); [ $run = copy ] && extra=(--copy-attention true)
  (timeout "$BUDGET" nice -n 5 "$NAZAR" train --train train.tsv --dev dev.tsv "${common[@]}" \
     "${extra[@]}" --save-dir $run > $run.log 2>&1 || true) &
done
wait
for run in base copy; do
  nice -n 5 "$NAZAR" translate --model $run/last.safetensors --input test.src --output $run.hyp \
    --beam 5 --threads 1 &
done
wait
for run in base copy; do
  steps=$(grep -o 'step [0-9]*' $run.log | tail -1)
  if [ "$TASK" = enfr ]; then
    echo "$run ($steps): BLEU $("$NAZAR" eval -m bleu -r test.ref -i $run.hyp -b)" \
         "chrF $("$NAZAR" eval -m chrf -r test.ref -i $run.hyp -b);" \
         "$(python3 "$HERE/copy_items.py" test.src test.ref $run.hyp)"
  else
    echo "$run ($steps): exact match $("$NAZAR" eval -m exact -r test.ref -i $run.hyp -b)"
  fi
done | tee results.txt
