#!/usr/bin/env bash
# End-to-end check of `nazar eval`: files in, score lines out, exit codes on bad input.
# Usage: eval_cli.sh path/to/nazar
# Expected BLEU/chrF lines: mjpost/sacrebleu README.md ("Python API" example); the others are
# the hand-computed cases of tests/unit/test_eval_{wer,aer}.cpp.
. "$(dirname "$0")/lib.sh" "$@"  # NAZAR, a temporary current directory, fail

expect_eq() {  # name, expected, actual
    if [[ "$2" != "$3" ]]; then
        echo "FAIL $1"; echo "  expected: $2"; echo "  actual:   $3"; fail=1
    else
        echo "ok   $1"
    fi
}

printf '%s\n' "The dog bit the man." "It wasn't surprising." "The man had just bitten him." > hyp
printf '%s\n' "The dog bit the man." "It was not unexpected." "The man bit him first." > ref1
printf '%s\n' "The dog had bit the man." "No one was surprised." "The man had bitten the dog." > ref2

expect_eq "bleu two refs" \
    "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)" \
    "$("$NAZAR" eval --metric bleu --ref ref1 --ref ref2 --hyp hyp | head -1)"
expect_eq "bleu from stdin" "48.53" "$("$NAZAR" eval --ref ref1 ref2 --score-only < hyp)"
# CRLF line ends and a missing final newline read as the same three lines.
printf 'The dog bit the man.\r\nIt was not unexpected.\r\nThe man bit him first.' > ref1crlf
expect_eq "crlf, no final newline" "$("$NAZAR" eval -r ref1 -i hyp -b)" "$("$NAZAR" eval -r ref1crlf -i hyp -b)"
expect_eq "chrf two refs" "chrF2 = 59.73" "$("$NAZAR" eval -m chrf -r ref1 -r ref2 -i hyp | head -1)"
expect_eq "bleu json score" "48.53" \
    "$("$NAZAR" eval -r ref1 -r ref2 -i hyp --json | sed -n 's/^ *"score": \([0-9]*\.[0-9][0-9]\).*/\1/p')"

printf '%s\n' "the cat sat on mat" "a b c d" > wh
printf '%s\n' "the cat sat on the mat" "a x c" > wr
expect_eq "wer" "WER = 33.33 (S = 1 D = 1 I = 1 errors = 3 ref_len = 9 segments = 2)" "$("$NAZAR" eval -m wer -r wr -i wh)"
expect_eq "exact" "Exact = 0.00 (correct = 0 segments = 2)" "$("$NAZAR" eval -m exact -r wr -i wh)"

printf '%s\n' "0-0 1-1 2-2" "0-1 1-0" > ah
printf '%s\n' "0-0 1?1 2-1" "0-1" > ag
printf '%s\n' "" "1-0 1?1" > ap
expect_eq "aer" "AER = 25.00 (precision = 80.00 recall = 66.67 |A| = 5 |S| = 3 |P| = 6 segments = 2)" \
    "$("$NAZAR" eval -m aer -r ag -i ah --possible ap)"

# Bad input: exit 2 with a message naming both files and both counts.
printf '%s\n' "one line" > short
err=$("$NAZAR" eval -r short -i hyp 2>&1 >/dev/null); rc=$?
expect_eq "mismatch exit code" "2" "$rc"
if [[ "$err" != *"hypothesis file 'hyp' has 3 lines but reference file 'short' has 1 lines"* ]]; then
    echo "FAIL mismatch message: $err"; fail=1
else
    echo "ok   mismatch message"
fi
"$NAZAR" eval -r missing -i hyp >/dev/null 2>&1; expect_eq "missing file exit code" "2" "$?"
"$NAZAR" eval -m aer -r ag -r ag -i ah >/dev/null 2>&1; expect_eq "aer two golds exit code" "2" "$?"
"$NAZAR" eval -m bleu -r ag -i ah --possible ap >/dev/null 2>&1; expect_eq "--possible without aer" "2" "$?"

exit $fail
