#!/usr/bin/env bash
# End-to-end check of guided alignment in `nazar train` (docs/training.md "Guided alignment"):
#   - a corpus with known alignments (experiments/guided/gen_aligned.py) trains with
#     --train-alignment and --guided-alignment-weight: the links are counted, the progress line
#     shows the alignment loss, the metrics log records it, and `nazar align` + `nazar eval
#     --metric aer` read the model's attention back;
#   - bad alignment files stop training with exit 1 and one line naming file:line: a malformed
#     link, an index outside the pair, a line count other than the training file's;
#   - dev_alignment: the valid line and the metrics log show the dev alignment loss;
#   - a weight without train_alignment (and the reverse) is a usage error, exit 2.
# Usage: test_cli_guided.sh path/to/nazar
. "$(dirname "$0")/lib.sh" "$@"  # NAZAR, SRC, a temporary current directory, ok, bad, fail

/usr/bin/python3 "$SRC/experiments/guided/gen_aligned.py" data --train 300 --dev 20 --test 20 --seed 3
common=(--train data/train.tsv --tokenizer word --embedding-size 8 --hidden-size 8
        --attention-size 8 --batch-size 16 --max-steps 12 --threads 1 --progress plain
        --log-interval 4 --valid-interval 1000)

"$NAZAR" train "${common[@]}" --train-alignment data/train.align --guided-alignment-weight 0.5 \
    --guided-alignment-decay 0.5 --guided-alignment-decay-steps 4 --metrics-log metrics.jsonl \
    --dev data/dev.tsv --dev-alignment data/dev.align --valid-sample 0 --save-dir run >out 2>err
rc=$?
if [ $rc -eq 0 ] && grep -q "data/train.align: .* links for 300 of 300 pairs" err &&
    grep -q "loss [0-9.]* | align [0-9.]* |" err; then
    ok "trains with alignments; progress shows the alignment loss"
else
    bad "training with alignments (rc $rc)" "$(tail -5 err)"
fi
if grep -q "^valid step 12 | loss [0-9.]* | align [0-9.]* |" err; then
    ok "validation shows the dev alignment loss (dev_alignment)"
else
    bad "dev alignment loss in the valid line" "$(grep valid err)"
fi
# the weight of the next update after 12: 0.5 x 0.5^floor(12 / 4)
if grep '"type":"train"' metrics.jsonl 2>/dev/null | grep -q '"alignment_loss"' &&
    grep '"type":"valid"' metrics.jsonl | grep -q '"alignment_loss"' &&
    grep -q '"guided_alignment_weight":0.0625' metrics.jsonl; then
    ok "metrics log records the alignment loss and the decayed weight"
else
    bad "metrics log" "$(tail -2 metrics.jsonl 2>/dev/null)"
fi
"$NAZAR" align --model run/model.safetensors --tsv data/test.tsv --threads 1 >hyp.align 2>err &&
    "$NAZAR" eval --metric aer --ref data/test.align --hyp hyp.align >aer 2>err
if grep -q "^AER = " aer; then ok "align + eval --metric aer: $(head -c 40 aer)"; else
    bad "align + aer" "$(cat err)"; fi

expect_error() {  # name, rc, pattern, alignment file
    "$NAZAR" train "${common[@]}" --train-alignment "$4" --guided-alignment-weight 1 \
        --save-dir "run_$1" >out 2>err
    local rc=$?
    if [ $rc -eq "$2" ] && grep -q -- "$3" err && [ "$(grep -c . err)" -ge 1 ]; then
        ok "$1: exit $rc, $(grep -- "$3" err | head -c 120)"
    else
        bad "$1 (rc $rc, expected $2 and '$3')" "$(tail -3 err)"
    fi
}
sed '5s/.*/0-0 x/' data/train.align >malformed.align
expect_error malformed 1 "malformed.align:5: bad alignment link 'x'" malformed.align
sed '7s/.*/0-0 99-0/' data/train.align >range.align
expect_error out_of_range 1 "range.align:7: link 99-0 is outside the pair's" range.align
head -n 299 data/train.align >short.align
expect_error too_few_lines 1 "short.align: 299 alignment lines, but the training data" short.align
(cat data/train.align; echo "0-0") >long.align
expect_error too_many_lines 1 "long.align:301: more alignment lines than the 300" long.align

"$NAZAR" train "${common[@]}" --guided-alignment-weight 1 --save-dir run_w >out 2>err
rc=$?
if [ $rc -eq 2 ] && grep -q "needs train_alignment" err; then ok "weight without alignments: exit 2"
else bad "weight without alignments (rc $rc)" "$(cat err)"; fi
"$NAZAR" train "${common[@]}" --train-alignment data/train.align --save-dir run_a >out 2>err
rc=$?
if [ $rc -eq 2 ] && grep -q "guided_alignment_weight is 0" err; then
    ok "alignments without a weight: exit 2"
else bad "alignments without a weight (rc $rc)" "$(cat err)"; fi
exit $fail
