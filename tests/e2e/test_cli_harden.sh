#!/usr/bin/env bash
# Hostile use of the result-printing commands (audit items 2, 3, 6, 7, 8's line cap, 13, 14;
# docs/reliability.md "Commands: output, options, input"):
#   2  a full disk (/dev/full; a 64 KiB tmpfs when running as root and mounting works; a file
#      size limit) or a closed standard output: exit 1, one line naming the file or "standard
#      output" and the bytes written; never exit 0 with lost output;
#   3  --max-length-ratio 1e9 / --max-length-extra 2147483640 give the output of the plain cap;
#   6  an empty value is empty: numbers and booleans name the option, train's --dev '' is "no
#      validation", nothing called 'true' appears;
#   7  the same file (device and inode, a hard link included) as input and output is refused,
#      the file untouched;
#   8  a line over --max-line-bytes is an error naming the line, in little memory;
#   13 a terminal and an open pipe are answered line by line (cli_interactive.py);
#   14 the global --threads holds for demo, attention (cli_interactive.py) and bench.
# Usage: test_cli_harden.sh path/to/nazar
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh" "$@"  # NAZAR, PY, a temporary current directory, ok, bad, fail
mnt=""
cleanup() {
    [ -n "$mnt" ] && umount "$mnt" 2> /dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# A tiny demo model (seconds) and inputs.
"$NAZAR" --threads 1 demo --steps 30 --train-size 200 --test-size 20 --hidden-size 16 \
    --embedding-size 8 --out-dir "$dir" > demo.out 2>&1 || {
    cat demo.out
    exit 1
}
M=$dir/demo.safetensors
for i in $(seq 1 300); do echo "$((i % 28 + 1)) May $((1900 + i))"; done > in.txt
paste in.txt in.txt > pairs.tsv
"$NAZAR" translate --model "$M" --input in.txt > ref.out || bad "translate of in.txt failed"

# expect_fail NAME CODE PATTERN: the last command ($rc, err.txt) failed with CODE and one
# stderr line matching PATTERN (grep -E).
expect_fail() {
    local lines
    lines=$(wc -l < err.txt)
    if [ "$rc" = "$2" ] && [ "$lines" -ge 1 ] && [ "$lines" -le 2 ] && grep -Eq -- "$3" err.txt; then
        ok "$1"
    else
        bad "$1" "exit $rc (expected $2), stderr:" "$(head -c 600 err.txt)"
    fi
}

# ---- 2: write failures -------------------------------------------------------------------
run_cmd() {  # the command of each result-printing command, by name
    case $1 in
        translate) echo "translate --model $M --input in.txt" ;;
        score) echo "score --model $M --tsv pairs.tsv" ;;
        align) echo "align --model $M --tsv pairs.tsv" ;;
        eval) echo "eval --hyp ref.out --ref ref.out" ;;
        attention) echo "attention --model $M --input in.txt --color never" ;;
    esac
}
for c in translate score align eval attention; do
    # shellcheck disable=SC2046
    "$NAZAR" $(run_cmd $c) > /dev/full 2> err.txt
    rc=$?
    expect_fail "$c > /dev/full" 1 "cannot write standard output: No space left on device \(0 bytes written\)"
    # shellcheck disable=SC2046
    "$NAZAR" $(run_cmd $c) 2> err.txt >&-
    rc=$?
    expect_fail "$c with standard output closed" 1 "standard output: Bad file descriptor"
done
"$NAZAR" translate --model "$M" --input in.txt --output /dev/full 2> err.txt
rc=$?
expect_fail "translate --output /dev/full" 1 "cannot write '/dev/full': No space left on device \(0 bytes written\)"
# A file-size limit (SIGXFSZ ignored, so write() fails with EFBIG as on a full disk) cuts the
# output after exactly 1024 bytes: the message says so.
(
    trap '' XFSZ
    ulimit -f 1
    "$NAZAR" translate --model "$M" --input in.txt --output cut.out 2> err.txt
    echo $? > rc.txt
)
rc=$(cat rc.txt)
expect_fail "translate --output beyond the file-size limit" 1 "cannot write 'cut.out': File too large \(1024 bytes written\)"
[ "$(stat -c %s cut.out)" = 1024 ] && cmp -s cut.out <(head -c 1024 ref.out) &&
    ok "the 1024 bytes written are the first 1024 of the output" ||
    bad "cut.out is not the first 1024 bytes of the output"
# A real full file system: a 64 KiB tmpfs, filled. Only as root and where mounting is allowed.
if [ "$(id -u)" = 0 ] && mkdir -p mnt && mount -t tmpfs -o size=64k tmpfs mnt 2> /dev/null; then
    mnt=$dir/mnt
    head -c 65536 /dev/zero > mnt/fill 2> /dev/null
    for c in translate score; do
        # shellcheck disable=SC2046
        "$NAZAR" $(run_cmd $c) > mnt/out.txt 2> err.txt
        rc=$?
        expect_fail "$c > full tmpfs" 1 "cannot write standard output: No space left on device"
    done
    umount mnt && mnt=""
else
    echo "skip full tmpfs: needs root and permission to mount (/dev/full and the file-size limit cover the same path)"
fi

# ---- 7: the same file as input and output ------------------------------------------------
cp in.txt same.txt
ln same.txt link.txt
cp "$M" model-copy.safetensors
same_check() {  # NAME FILE: FILE must still equal its saved copy
    if cmp -s "$2" "$2.saved"; then ok "$1: file untouched"; else bad "$1: file changed"; fi
}
for f in same.txt model-copy.safetensors pairs.tsv ref.out; do cp "$f" "$f.saved"; done
"$NAZAR" translate --model "$M" --input same.txt --output same.txt 2> err.txt
rc=$?
expect_fail "translate --input F --output F" 2 "output 'same.txt' is the same file as the input 'same.txt'"
same_check "translate --input F --output F" same.txt
"$NAZAR" translate --model "$M" --input same.txt --output link.txt 2> err.txt
rc=$?
expect_fail "translate --output a hard link of --input" 2 "same file"
same_check "translate --output a hard link" same.txt
"$NAZAR" translate --model "$M" --output same.txt < same.txt 2> err.txt
rc=$?
expect_fail "translate < F --output F" 2 "same file as the input \(standard input\)"
"$NAZAR" translate --model "$M" --input same.txt >> same.txt 2> err.txt
rc=$?
expect_fail "translate --input F >> F" 2 "output \(standard output\) is the same file"
same_check "translate --input F >> F" same.txt
"$NAZAR" translate --model model-copy.safetensors --input in.txt --output model-copy.safetensors 2> err.txt
rc=$?
expect_fail "translate --output the model" 2 "same file as the input 'model-copy.safetensors'"
same_check "translate --output the model" model-copy.safetensors
"$NAZAR" score --model "$M" --tsv pairs.tsv >> pairs.tsv 2> err.txt
rc=$?
expect_fail "score --tsv F >> F" 2 "same file as the input 'pairs.tsv'"
same_check "score --tsv F >> F" pairs.tsv
"$NAZAR" align --model "$M" --tsv pairs.tsv >> pairs.tsv 2> err.txt
rc=$?
expect_fail "align --tsv F >> F" 2 "same file as the input 'pairs.tsv'"
"$NAZAR" eval --hyp in.txt --ref ref.out >> ref.out 2> err.txt
rc=$?
expect_fail "eval --ref F >> F" 2 "same file as the input 'ref.out'"
same_check "eval --ref F >> F" ref.out
"$NAZAR" attention --model model-copy.safetensors --input in.txt --no-terminal \
    --svg model-copy.safetensors 2> err.txt
rc=$?
expect_fail "attention --svg the model" 2 "same file"
same_check "attention --svg the model" model-copy.safetensors
"$NAZAR" attention --model "$M" --input same.txt --no-terminal --html link.txt 2> err.txt
rc=$?
expect_fail "attention --html a hard link of --input" 2 "same file"
same_check "attention --html a hard link" same.txt

# ---- 3: huge length limits ---------------------------------------------------------------
"$NAZAR" translate --model "$M" --input in.txt --max-length 12 --max-length-ratio 0 \
    --max-length-extra 12 > plain.out
for opt in "--max-length-ratio 1e9" "--max-length-extra 2147483640" \
    "--max-length-ratio 1e9 --max-length-extra 2147483640"; do
    # shellcheck disable=SC2086
    "$NAZAR" translate --model "$M" --input in.txt --max-length 12 $opt > big.out 2> err.txt
    if cmp -s big.out plain.out && [ "$(awk '{ n += length($0) } END { print n }' plain.out)" -gt 300 ]; then
        ok "translate $opt: the output of the plain cap"
    else
        bad "translate $opt differs from the plain cap (or outputs are one token)" "$(head -3 big.out)" "$(cat err.txt)"
    fi
done

# ---- 6: empty values ---------------------------------------------------------------------
for args in "translate --model $M --beam" "translate --model $M --max-length-extra" \
    "translate --model $M --max-length-ratio" "demo --hidden-size" "demo --seed" \
    "train --hidden-size" "train --dropout" "train --keep-best" "bench local --threads"; do
    # shellcheck disable=SC2086
    "$NAZAR" $args '' 2> err.txt > /dev/null
    rc=$?
    opt=${args##* }
    expect_fail "$args ''" 2 "$opt: empty value \(expected "
    if grep -q "'true'" err.txt; then bad "$args '': the value became 'true'"; fi
done
# an empty path is not '-' (standard input or output): it names no file
"$NAZAR" translate --model "$M" --input in.txt --output '' 2> err.txt > stdout.txt
rc=$?
expect_fail "translate --output ''" 1 "cannot open '': No such file or directory"
[ -s stdout.txt ] && bad "translate --output '' wrote to standard output"
"$NAZAR" attention --model "$M" --input '' 2> err.txt > stdout.txt < in.txt
rc=$?
expect_fail "attention --input ''" 2 "cannot open --input: : cannot open: No such file"
"$NAZAR" --threads '' translate --model "$M" 2> err.txt < /dev/null
rc=$?
expect_fail "nazar --threads ''" 2 "--threads: empty value \(expected an integer\)"
mkdir -p train && (
    cd train || exit 1
    printf 'a b\tb a\nc d\td c\nb c\tc b\n' > t.tsv
    "$NAZAR" --threads 1 train --train t.tsv --dev '' --metrics-log '' --keep-best --max-steps 2 \
        --hidden-size 8 --embedding-size 8 --attention-size 8 --save-dir run > out.txt 2>&1
    echo $? > rc.txt
    "$NAZAR" --threads 1 train --train t.tsv --save-dir '' --max-steps 2 > err.txt 2>&1
    echo $? > rc2.txt
    cp t.tsv t.saved
    "$NAZAR" --threads 1 train --train t.tsv --dev t.tsv --metrics-log t.tsv --max-steps 2 \
        --save-dir run2 > err3.txt 2>&1
    echo $? > rc3.txt
)
if [ "$(cat train/rc.txt)" = 0 ] && [ -f train/run/model.safetensors ] && ! grep -qi "valid" train/out.txt &&
    [ ! -e train/true ]; then
    ok "train --dev '' --metrics-log '': trains without validation, no file 'true'"
else
    bad "train --dev '' --metrics-log ''" "exit $(cat train/rc.txt)" "$(tail -5 train/out.txt)" "$(ls train)"
fi
rc=$(cat train/rc2.txt)
cp train/err.txt err.txt
expect_fail "train --save-dir ''" 2 "save_dir is empty"
[ ! -e train/true ] && ok "train --save-dir '': nothing called 'true'" || bad "train --save-dir '' created 'true'"
rc=$(cat train/rc3.txt)
cp train/err3.txt err.txt
expect_fail "train --metrics-log the training corpus" 2 "metrics_log 't.tsv' is the same file as train 't.tsv'"
cmp -s train/t.tsv train/t.saved && ok "train --metrics-log the corpus: corpus untouched" ||
    bad "train --metrics-log the corpus changed it"

# ---- 8: the line-length cap --------------------------------------------------------------
$PY -c "import sys; sys.stdout.write('3 May 1979\n' + 'x' * 10_000_000 + '\n')" > long.txt
# The child's peak RSS, MB; a watchdog kills it past 1 GB (the old reader went to 9 GB here).
rss=$($PY - "$NAZAR" "$M" <<'EOF'
import resource, subprocess, sys, time
with open("long.txt", "rb") as f, open("err.txt", "wb") as e:
    p = subprocess.Popen([sys.argv[1], "translate", "--model", sys.argv[2]], stdin=f,
                         stdout=subprocess.DEVNULL, stderr=e)
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as st:
                kb = next((int(l.split()[1]) for l in st if l.startswith("VmRSS:")), 0)
        except OSError:
            kb = 0
        if kb > 1 << 20:
            p.kill()
        time.sleep(0.02)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
EOF
)
rc=${rss% *}
expect_fail "translate of a 10 MB line" 1 "<stdin>:2: line longer than 65536 bytes .*--max-line-bytes"
[ "${rss#* }" -lt 200 ] && ok "... in ${rss#* } MB of memory" || bad "a 10 MB line took ${rss#* } MB"
printf '%s\n' "$(head -c 100 /dev/zero | tr '\0' 1)" > l100.txt
printf '%s\n' "$(head -c 101 /dev/zero | tr '\0' 1)" >> l100.txt
"$NAZAR" translate --model "$M" --input l100.txt --max-line-bytes 100 2> err.txt > /dev/null
rc=$?
expect_fail "translate --max-line-bytes 100, a 101-byte line 2" 1 "l100.txt:2: line longer than 100 bytes"
head -1 l100.txt | "$NAZAR" translate --model "$M" --max-line-bytes 100 > /dev/null 2> err.txt &&
    ok "a 100-byte line passes --max-line-bytes 100" || bad "a 100-byte line was refused" "$(cat err.txt)"
$PY -c "import sys; sys.stdout.write('1\t' + '1' * 98 + '\n' + '1\t' + '1' * 99 + '\n')" > l100.tsv
for c in score align; do
    "$NAZAR" $c --model "$M" --tsv l100.tsv --max-line-bytes 100 2> err.txt > /dev/null
    rc=$?
    expect_fail "$c --max-line-bytes 100" 1 "l100.tsv:2: line longer than 100 bytes"
done
"$NAZAR" attention --model "$M" --input l100.txt --max-line-bytes 100 2> err.txt > /dev/null
rc=$?
expect_fail "attention --max-line-bytes 100" 1 "l100.txt:2: line longer than 100 bytes"

# ---- 14: the global --threads ------------------------------------------------------------
"$NAZAR" --threads 3 demo --steps 1 --train-size 20 --test-size 2 --hidden-size 8 \
    --embedding-size 8 --save '' --out-dir "$dir/d3" > d3.out 2>&1
grep -q "(3 threads)" d3.out && ok "nazar --threads 3 demo: runs and says 3 threads" ||
    bad "nazar --threads 3 demo" "$(head -2 d3.out)"
"$NAZAR" --threads 3 demo --threads 1 --steps 1 --train-size 20 --test-size 2 --hidden-size 8 \
    --embedding-size 8 --save '' --out-dir "$dir/d1" > d1.out 2>&1
grep -q "(1 thread" d1.out && ok "demo --threads 1 overrides the global one" ||
    bad "demo --threads 1" "$(head -2 d1.out)"
"$NAZAR" --threads 3 bench local --preset small --lengths 8 --json > b3.out 2>&1
grep -q '"threads":3' b3.out && ok "nazar --threads 3 bench: threads 3" || bad "bench threads" "$(cat b3.out)"

# ---- found by verifying the audit on the merged tree --------------------------------------
# --svg/--html never rename over a device, FIFO or the same file; a link is followed.
mkfifo fifo.svg
printf '3 May 1979\n' | "$NAZAR" attention --model "$M" --svg fifo.svg --no-terminal 2> err.txt
rc=$?
expect_fail "attention --svg FIFO" 1 "cannot write 'fifo.svg': it is a FIFO, not a regular file"
[ -p fifo.svg ] && ok "attention --svg FIFO: the FIFO is still there" || bad "--svg replaced the FIFO"
ln -s target.svg link.svg
printf '3 May 1979\n' | "$NAZAR" attention --model "$M" --svg link.svg --no-terminal 2> err.txt
if [ $? = 0 ] && [ -L link.svg ] && grep -q '<svg' target.svg; then
    ok "attention --svg LINK writes the link's target, the link stays"
else
    bad "attention --svg LINK" "$(cat err.txt)"
fi
printf '3 May 1979\n' | "$NAZAR" attention --model "$M" --svg same.svg --html same.svg \
    --no-terminal 2> err.txt
rc=$?
expect_fail "attention --svg X --html X" 2 "--svg and --html name the same file"
# eval and --dict refuse endless devices; eval caps its lines.
"$NAZAR" eval -r in.txt -i /dev/zero 2> err.txt
rc=$?
expect_fail "eval -i /dev/zero" 2 "'/dev/zero' is a character device"
head -c 200000 /dev/zero | tr '\0' a > long.txt
"$NAZAR" eval -r long.txt -i long.txt 2> err.txt
rc=$?
expect_fail "eval of a 200 KB line" 1 "long.txt:1: line longer than 65536 bytes"
"$NAZAR" translate --model "$M" --input in.txt --replace-unk --dict /dev/zero 2> err.txt
rc=$?
expect_fail "translate --dict /dev/zero" 1 "--dict file '/dev/zero': it is a character device"
# Results printed through stdio (bench, explain) are checked too.
"$NAZAR" explain > /dev/full 2> err.txt
rc=$?
expect_fail "explain > /dev/full" 1 "cannot write standard output"
# A huge argument is not echoed back whole.
"$NAZAR" translate --model "$M" --alignment "$(head -c 50000 /dev/zero | tr '\0' z)" \
    < in.txt 2> err.txt
rc=$?
[ "$(wc -c < err.txt)" -lt 1200 ] && ok "a 50 KB argument is cut in the error line" ||
    bad "a 50 KB argument echoed: $(wc -c < err.txt) bytes"

# ---- 13 (and 14 for attention): terminal and pipe, line by line ---------------------------
$PY "$HERE/cli_interactive.py" "$NAZAR" "$M" "$dir" || fail=1

[ $fail = 0 ] && echo "all ok"
exit $fail
